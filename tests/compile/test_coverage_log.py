"""Coverage judged on a log: holds on every golden case's compile, fails on broken artifacts.

The compiles are the session's (``golden_compile`` -> ``compile_case``), shared with the
golden and compile tests; the broken artifacts are edits of the mlp compile's log records.
"""

from __future__ import annotations

import copy

import msgspec
import pytest

from spyre_provenance import golden
from spyre_provenance.logs.graphs import LoggedGraph, read_log_graphs
from spyre_provenance.validate import coverage


@pytest.mark.compile
@pytest.mark.parametrize("name", list(golden.CASES))
def test_every_golden_case_is_complete(name, golden_compile):
    compiled = golden_compile(name)
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr[-3000:]
    # a --ranks case: each rank's folder is a compile --out of its own
    outs = sorted(compiled.out.glob("rank[0-9]*")) or [compiled.out]
    assert len(outs) == golden.CASES[name].ranks
    for out in outs:
        (log,) = (out / "trace").glob("*.log")
        graphs = read_log_graphs(log)
        assert len(graphs) == len(list(out.glob("graph_*"))) >= 1
        assert coverage.check_log(log) == []
        with_opspecs = golden.CASES[name].backend == "reference"
        assert all((g.opspec_handles is not None) == with_opspecs for g in graphs)


@pytest.fixture(scope="module")
def mlp(golden_compile) -> LoggedGraph:
    compiled = golden_compile("mlp")
    assert compiled.returncode == 0, compiled.stderr[-3000:]
    (graph,) = read_log_graphs(compiled.log)
    return graph


def check(graph: LoggedGraph, **replace) -> list[str]:
    """The violations on ``graph`` with some of its records replaced."""
    return [str(v) for v in coverage.judge_logged(msgspec.structs.replace(graph, **replace), "g").violations]


def kernels(graph: LoggedGraph) -> list[str]:
    return list(graph.node_mappings["cppCodeToPost"])


@pytest.mark.compile
def test_dropped_kernel_fails(mlp):
    mappings = copy.deepcopy(mlp.node_mappings)
    dropped = kernels(mlp)[-1]  # the kernel holding the second Linear's matmul
    for node in mappings["cppCodeToPost"].pop(dropped):
        mappings["postToCppCode"].pop(node)
    found = check(mlp, node_mappings=mappings)
    assert any(v.startswith(f"g: {dropped}: called at wrapper line") and v.endswith("[call-sites]") for v in found), (
        found
    )
    assert "g: mm_1: post-grad compute node (aten.mm) reaches no kernel [node-reach]" in found
    assert f"g: {dropped}: has OpSpecs but is not a mapping key [opspec-handle]" in found


@pytest.mark.compile
def test_dropped_node_fails(mlp):
    mappings = copy.deepcopy(mlp.node_mappings)
    first = kernels(mlp)[0]
    mappings["cppCodeToPost"][first].remove("relu")
    mappings["postToCppCode"].pop("relu")
    found = check(mlp, node_mappings=mappings)
    reach = [v for v in found if v.startswith("g: relu: ") and v.endswith("[node-reach]")]
    assert len(reach) == 1 and "(aten.relu) is computed inside" in reach[0], found
    assert any("names relu, which the kernel's mapping lacks" in v for v in found), found


@pytest.mark.compile
def test_handleless_opspec_fails(mlp):
    handles = copy.deepcopy(mlp.opspec_handles)
    first = kernels(mlp)[0]
    spec = handles["kernels"][first][2]
    spec["debug_handle"] = None
    assert check(mlp, opspec_handles=handles) == [
        f"g: {first} OpSpec 2 ({spec['buffer']}, {spec['op']}): carries no debug handle [opspec-handle]"
    ]


@pytest.mark.compile
def test_fused_handle_missing_a_constituent_fails(mlp):
    handles = copy.deepcopy(mlp.opspec_handles)
    first = kernels(mlp)[0]
    fused = handles["handles"][handles["kernels"][first][0]["debug_handle"]]
    assert len(fused["fused_from"]) == 2
    fused["fused_from"].pop()
    found = check(mlp, opspec_handles=handles)
    assert len(found) == 1 and "lists no constituent for permute [fused-constituents]" in found[0]


@pytest.mark.compile
def test_handle_naming_a_node_that_does_not_exist_fails(mlp):
    handles = copy.deepcopy(mlp.opspec_handles)
    first = kernels(mlp)[0]
    handles["handles"][handles["kernels"][first][2]["debug_handle"]]["ir_chain"][0] = "relu_99"
    found = check(mlp, opspec_handles=handles)
    assert any("names relu_99, which is not a post-grad node" in v for v in found), found


@pytest.mark.compile
def test_call_site_without_handle_comment_fails(mlp):
    second = kernels(mlp)[-1]
    code = "\n".join(line for line in mlp.output_code.splitlines() if f"handles] {second}" not in line)
    found = check(mlp, output_code=code)
    assert any(v.endswith(f"call of {second.rpartition(':')[0]} has no handle comment [call-sites]") for v in found)
    assert f"g: {second}: mapping key without a call site in the wrapper [call-sites]" in found


@pytest.mark.compile
def test_view_nodes_need_no_kernel_by_rule(mlp):
    """permute is a view: unmapping it breaks no reach rule (the OpSpec rule still sees it)."""
    mappings = copy.deepcopy(mlp.node_mappings)
    for targets in mappings["cppCodeToPost"].values():
        if "permute" in targets:
            targets.remove("permute")
    found = check(mlp, node_mappings=mappings, opspec_handles=None)
    assert found == []


def test_missing_inputs_are_violations_not_crashes():
    found = coverage.judge(None, None, {"cppCodeToPost": {"k:1": ["a"]}, "version": 2.0}).violations
    assert [v.rule for v in found] == ["call-sites", "node-reach"]
    assert coverage.judge("", None, None).violations[0].message == "no node mappings to check"
