"""torch-spyre main's own ``register_torch_compile_kernel`` (``torch_spyre/ops/eager.py``),
as far as it runs on the stand-in, called from two lines of one function under a profiler.

What it registers for ``aten::mul.Tensor`` is taken as torch-spyre hands it to the dispatcher
(``torch.library.register_kernel`` is caught for the one call, so nothing is registered twice):
its ``compile_once`` wrapper around its offset-safe dispatch. The dispatcher cannot reach it
here (the stand-in's ``spyre`` tensors run every op on their CPU values), so the program calls
that kernel as the dispatcher would, on CPU tensors, which its dispatch passes through; its
``torch.compile(op, dynamic=False)`` compiles the op for the CPU.

``python spyre_main_registered.py OUT TRACE`` in a process booted by ``spyre_main.boot``.
"""

from __future__ import annotations

import sys

from spyre_main import boot

boot.boot_from_env()  # torch-spyre imported on the stand-in before anything else touches torch

import torch  # noqa: E402
from torch_spyre.ops import eager  # noqa: E402

import spyre_provenance  # noqa: E402


def registered_kernel(op: torch._ops.OpOverloadPacket, overload: str):
    """The function ``register_torch_compile_kernel([op])`` registers for ``overload``."""
    caught = {}
    real = torch.library.register_kernel

    def catch(name, device_types, *args, **kwargs):
        assert list(device_types) == ["spyre"], device_types
        return lambda fn: caught.setdefault(name, fn)

    torch.library.register_kernel = catch
    try:
        eager.register_torch_compile_kernel([op])
    finally:
        torch.library.register_kernel = real
    return caught[overload]


mul = registered_kernel(torch.ops.aten.mul, "aten::mul.Tensor")


def scale(a, b):
    first = mul(a, b)  # the first line that launches the one compiled mul
    return mul(first, b)  # the second


def main(out: str, trace: str) -> None:
    a = torch.randn(32, 32)
    b = torch.randn(32, 32)
    import torch._inductor.config as inductor_config

    profiled = inductor_config.patch({"cpp.enable_kernel_profile": True})  # each kernel a profiler event
    with profiled, spyre_provenance.tracking("reference", out_dir=out):
        scale(a, b)  # compiles once
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
            for _ in range(3):
                scale(a, b)
    prof.export_chrome_trace(trace)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
