"""The foundation: torch-spyre main's own compiler runs on the stand-in, through the route,
with the project's hook on, and what it writes is torch-spyre's."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.compile


def test_the_seed_mlp_reaches_torch_spyre_scheduler(spyre_main_case):
    """The kernel is torch-spyre's (an ``sdsc_`` name, its bundles written where its
    ``SpyreAsyncCompile.sdsc`` writes them), and the hook kept its OpSpecs."""
    case = spyre_main_case("mlp")
    assert case.returncode in (0, 1), case.stderr[-3000:]  # a verdict, not a refusal
    (graph,) = case.graph_dirs()
    opspecs = json.loads((graph / "spyre_opspec_debug_handles.json").read_text())["kernels"]
    assert opspecs and all(key.startswith("sdsc_") for key in opspecs), list(opspecs)
    bundles = case.bundle_dirs()
    assert [b.name[9:-9] for b in bundles] == [k.rsplit(":", 1)[0] for k in opspecs]
    for bundle, specs in zip(bundles, opspecs.values(), strict=True):
        assert len(list(bundle.glob("sdsc_*.json"))) == len(specs)


def test_a_subprocess_calls_torch_spyre_own_functions(torch_spyre_python):
    """The seam other tests use to ask torch-spyre itself (here: the stand-in's tiling,
    which torch-spyre's layout tests pin, and its DebugHandle's fields)."""
    got = torch_spyre_python(
        """
        import json, torch
        from torch_spyre._C import SpyreTensorLayout
        from torch_spyre._inductor.op_spec import DebugHandle
        stl = SpyreTensorLayout([512, 8, 240], torch.float16)
        print(json.dumps({"size": stl.device_size, "strides": stl.stride_map, "debug_handle": "id" in DebugHandle.__dataclass_fields__}))
        """
    )
    assert got == {"size": [8, 4, 512, 64], "strides": [240, 64, 1920, 1], "debug_handle": True}
