"""Bring torch-spyre main up in this process, on the stand-in ``_C`` (``native.py``).

``boot(source)`` does, in order, what a CPU needs before torch-spyre's Inductor backend
runs (found by running it; the snapshot's README lists the same five things):

1. ``torch_spyre._C`` in ``sys.modules`` before ``import torch_spyre`` (``native.build``);
2. ``TORCH_DEVICE_BACKEND_AUTOLOAD=0`` (the entry point is not installed anyway), then
   ``torch_spyre._autoload()`` by hand, as the entry point would;
3. device count 0 (``native``: with 1, Dynamo asks the absent C++ hooks for a stream), and
   torch's own Python PrivateUse1 hook and device guard, or Inductor refuses the device;
4. ``TORCH_SPYRE_NATIVE_PACKER=0``: torch-spyre's Python layout packer instead of the native one;
5. a ``dxp_standalone`` on ``PATH`` that exits 0: torch-spyre hands each bundle folder to
   that device compiler when the wrapper module loads.

Importing torch_spyre changes torch for the whole process (PrivateUse1 renamed to
``spyre``, a compile_fx wrapper, dispatch kernels): only processes of their own boot it
(``server.py``, the faithfulness run, ``run_in_torch_spyre``).
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

DXP_SCRIPT = "#!/bin/sh\n# stand-in for the device compiler: torch-spyre's bundles stay as written\nexit 0\n"


def install_dxp(folder: Path) -> Path:
    """A ``dxp_standalone`` that exits 0, in ``folder`` (put on ``PATH`` by ``boot``)."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "dxp_standalone"
    if not script.exists() or script.read_text() != DXP_SCRIPT:
        tmp = folder / f".dxp_standalone.{os.getpid()}"
        tmp.write_text(DXP_SCRIPT)
        tmp.chmod(tmp.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        os.replace(tmp, script)
    return script


def environment(source: Path, tools: Path) -> dict[str, str]:
    """The environment variables a booted process needs (also for subprocesses)."""
    return {
        "TORCH_DEVICE_BACKEND_AUTOLOAD": "0",
        "TORCH_SPYRE_NATIVE_PACKER": "0",
        "PATH": f"{tools}{os.pathsep}{os.environ.get('PATH', '')}",
        "SPYRE_PROVENANCE_TORCH_SPYRE_SOURCE": str(source),
    }


def inherited() -> dict[str, str]:
    """This process's environment for a booted one, less ``CI``: with ``CI`` set, Inductor's
    ``make_fallback`` raises for an op that has a core decomposition ("a decomposition exists,
    we should switch to it"), a check meant for PyTorch's own CI. torch-spyre main falls back
    on such ops (``sin``, ``cos``, ``cumsum``) without registering them ahead, so under
    ``CI=true`` (which ``.ci/run`` sets for the skip-or-fail rule) every model using one would
    stop there, as it never does for a user."""
    return {name: value for name, value in os.environ.items() if name != "CI"}


def boot_from_env() -> None:
    """``boot`` in a process started with ``conftest.torch_spyre_env`` (the source in
    ``$SPYRE_PROVENANCE_TORCH_SPYRE_SOURCE``): the first line of a script that imports
    torch-spyre, e.g. ``torch_spyre_python`` or ``server.py``."""
    source = Path(os.environ["SPYRE_PROVENANCE_TORCH_SPYRE_SOURCE"])
    boot(source, source.parent / "tools")


def boot(source: Path, tools: Path | None = None) -> None:
    """Import torch-spyre from ``source`` (an extracted snapshot or a checkout) on the
    stand-in ``_C``; idempotent."""
    if "torch_spyre" in sys.modules and getattr(sys.modules["torch_spyre"], "_spyre_provenance_booted", False):
        return
    tools = tools or source.parent / "tools"
    install_dxp(tools)
    for name, value in environment(source, tools).items():
        if name == "PATH" and str(tools) in os.environ.get("PATH", "").split(os.pathsep):
            continue
        os.environ[name] = value
    if str(source) not in sys.path:
        sys.path.insert(0, str(source))

    import torch

    tests = str(Path(__file__).resolve().parent.parent)
    if tests not in sys.path:
        sys.path.insert(0, tests)
    from spyre_main import host_memory, native

    sys.modules["torch_spyre._C"] = native.build()
    import torch_spyre

    torch_spyre._C = sys.modules["torch_spyre._C"]
    torch_spyre._autoload()
    # torch's Python PrivateUse1 hook and device guard: without them Inductor says
    # "PyTorch is not linked with support for spyre devices"
    from torch.utils.backend_registration import _DummyDeviceGuard, _DummyPrivateUse1Hook

    torch._C._acc.register_python_privateuseone_hook(_DummyPrivateUse1Hook())
    torch._C._acc.register_python_privateuseone_device_guard(_DummyDeviceGuard())
    _fake_inputs_have_layouts(torch)
    # the device's two allocations, whose tensors keep their values on the CPU
    torch_spyre._spyre_provenance_memory = host_memory.register_memory(sys.modules["torch_spyre._C"])
    torch_spyre._spyre_provenance_booted = True


def _fake_inputs_have_layouts(torch) -> None:
    """On a device, Inductor's real inputs are ``spyre`` tensors holding a layout; here the
    route hands it fake ones, for which torch-spyre's ``device_tensor_layout`` answers None
    (it reads a real tensor's layout from the device). A fake ``spyre`` tensor gets the
    default tiling a fresh device tensor of its size would have (``native``)."""
    from torch._subclasses.fake_tensor import FakeTensor

    own = torch.Tensor.device_tensor_layout

    def device_tensor_layout(self):
        if isinstance(self, FakeTensor) and self.device.type == "spyre":
            return sys.modules["torch_spyre._C"].get_spyre_tensor_layout(self)
        return own(self)

    torch.Tensor.device_tensor_layout = device_tensor_layout
