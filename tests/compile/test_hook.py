"""The hook on stock Inductor: every call site, fallbacks included, keyed like its comment."""

from __future__ import annotations

import pytest
import torch
from torch._inductor.utils import run_and_get_code

import spyre_provenance
from spyre_provenance.base.errors import ProvenanceWarning
from spyre_provenance.logs import wrapper_code

pytestmark = pytest.mark.compile


def sort_then_scale(x):
    # aten.sort(stable=True) has no Inductor lowering on CPU: it runs as a fallback op
    return torch.sort(x, stable=True, dim=-1).values * 2


@pytest.fixture(scope="module")
def compiled():
    torch._dynamo.reset()
    x = torch.randn(4, 8)
    with torch.no_grad(), spyre_provenance.tracking("inductor") as session:
        out, codes = run_and_get_code(torch.compile(sort_then_scale), x)
    torch.testing.assert_close(out, sort_then_scale(x))
    (graph,) = session.results
    return graph, "\n".join(codes)


def test_fallback_op_is_a_call_site(compiled):
    graph, _ = compiled
    assert graph.node_mappings.cppCodeToPost["torch.ops.aten.sort.stable:1"] == ["sort"]


def test_keys_are_exactly_the_handle_comments_in_call_order(compiled):
    graph, code = compiled
    assert list(graph.node_mappings.cppCodeToPost) == wrapper_code.handle_comments(code)
    assert [r.key for r in graph.records] == wrapper_code.handle_comments(code)


def test_records_carry_kernel_metadata(compiled):
    graph, _ = compiled
    fused = next(r for r in graph.records if not r.is_extern)
    assert "aten.mul" in fused.original_aten
    assert fused.source_nodes  # the pre-grad nodes get_kernel_metadata names
    assert fused.opspecs is None  # stock Inductor has no OpSpecs


def test_tracking_level_is_forced_inside_compiles_only_and_restored():
    """Every compile is tracked whatever the program set (issue 55 point 1), and the program
    reads back its own value outside a compile, during tracking and after it."""
    from torch._inductor import config

    entry = config._config["trace.provenance_tracking_level"]
    forced_before = entry.env_value_force
    with config.patch("trace.provenance_tracking_level", 0):
        with spyre_provenance.tracking("inductor") as session:
            assert config.trace.provenance_tracking_level == 0
            torch._dynamo.reset()
            torch.compile(torch.tanh)(torch.randn(4, 8))
            assert config.trace.provenance_tracking_level == 0
        (graph,) = session.results
        assert graph.node_mappings is not None and graph.node_mappings.cppCodeToPost
        assert config.trace.provenance_tracking_level == 0
    assert entry.env_value_force is forced_before


def test_a_second_unlabeled_session_keeps_the_first_ones_folders(tmp_path):
    """Issue 37: through the Python API without a label, a second session after
    ``torch._dynamo.reset()`` (compile id 0/0 again) writes beside the first's graph
    folders, never over them."""
    written = []
    for fn in (sort_then_scale, torch.tanh):
        torch._dynamo.reset()
        with torch.no_grad(), spyre_provenance.tracking("inductor", out_dir=tmp_path):
            torch.compile(fn)(torch.randn(4, 8))
        written.append(sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("graph_")))
    assert written == [["graph_00_0-0_inference"], ["graph_00_0-0_inference", "graph_01_0-0_inference"]]
    first = (tmp_path / "graph_00_0-0_inference" / "inductor_provenance_tracking_node_mappings.json").read_text()
    assert "sort" in first


def test_a_cache_key_the_hook_cannot_read_never_breaks_the_compile(monkeypatch, tmp_path):
    """The source-line digest tracking adds to Inductor's cache key (``graph_cache``) fails:
    the compile goes on and is recorded whole (only its cache entry is keyed never to be hit),
    and a warning says so."""
    from torch._inductor import config

    from spyre_provenance.capture import graph_cache

    def unreadable(gm):
        raise RuntimeError("no stack traces today")

    monkeypatch.setattr(graph_cache, "source_digest", unreadable)
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "cache"))
    # the suite forces the FX-graph cache off (tests/conftest.py): the key is made only with it on
    monkeypatch.setattr(config._config["fx_graph_cache"], "env_value_force", True)
    torch._dynamo.reset()
    with (
        pytest.warns(ProvenanceWarning, match="no stack traces today"),
        spyre_provenance.tracking("inductor") as session,
    ):
        out = torch.compile(torch.tanh)(torch.ones(4, 8))
    torch._dynamo.reset()
    assert torch.allclose(out, torch.tanh(torch.ones(4, 8)))
    (graph,) = session.results
    assert graph.node_mappings is not None and graph.node_mappings.cppCodeToPost
