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


def test_a_host_dimension_of_size_1_is_stepped_along_by_no_device_dimension(torch_spyre_python):
    """torch-spyre's layout constructor writes -1 in ``stride_map`` for a host dimension of
    size 1 (``csrc/spyre_tensor_impl.cpp:112-130``), which its broadcast test reads; the
    stand-in's tiling does the same (RMSNorm's ``x * rsqrt(mean)`` was refused without)."""
    got = torch_spyre_python(
        """
        import json, torch
        from torch_spyre._C import SpyreTensorLayout
        print(json.dumps([SpyreTensorLayout(s, torch.float16).stride_map for s in ([1, 64, 1], [1, 64, 128])]))
        """
    )
    assert got == [[1, -1, -1, -1], [128, 64, -1, 1]]  # device dims: [1], sticks, [0], elements


def test_attention_on_spyre_takes_the_backend_torch_spyre_chooses(torch_spyre_python):
    """torch-spyre's native extension sends every attention on ``spyre`` to ATen's
    ``overrideable`` backend (``csrc/attn_utils.cpp``); through the route, a traced
    ``scaled_dot_product_attention`` on ``spyre`` becomes
    ``_scaled_dot_product_fused_attention_overrideable``, which torch-spyre decomposes, not
    ATen's math path (``_safe_softmax``)."""
    got = torch_spyre_python(
        """
        import json, torch
        from torch._subclasses.fake_tensor import FakeTensorMode
        from torch.fx.experimental.proxy_tensor import make_fx
        from spyre_main import sdpa_choice
        sdpa_choice.install()
        table = sdpa_choice.decompositions()
        overrideable = torch.ops.aten._scaled_dot_product_fused_attention_overrideable.default
        seen, decompose = {}, table[overrideable]
        def spy(*args, **kwargs):
            seen["overrideable"] = True
            return decompose(*args, **kwargs)
        table[overrideable] = spy
        with FakeTensorMode(allow_non_fake_inputs=True):
            q = torch.empty(1, 2, 64, 64, dtype=torch.float16, device="spyre")
            f = lambda q: torch.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True)
            graph = make_fx(f, decomposition_table=table)(q)
        targets = {str(n.target) for n in graph.graph.nodes}
        print(json.dumps([seen.get("overrideable", False), any("safe_softmax" in t for t in targets)]))
        """
    )
    assert got == [True, False]
