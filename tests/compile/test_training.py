"""Training compiles: forward and backward share one compile id, and tlparse renders a
compile folder from its last graph. ``open`` gives each its page; these tests pin what the
backward page can and cannot link (docs/how-it-works.md, "The tlparse pages").

Compiles: ``mlp --train`` on the reference backend and on stock Inductor, shared with
tests/compile/test_open.py through the session ``open_case`` fixture.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from helpers import tlparse_page
from helpers.where import REPO  # tests/ is on sys.path
from spyre_provenance.logs import tlparse_render
from spyre_provenance.logs.graphs import read_log_graphs
from spyre_provenance.logs.post_grad import parse_post_grad_graph

pytestmark = [
    pytest.mark.compile,
    pytest.mark.skipif(tlparse_render.tlparse_binary() is None, reason="tlparse is not installed"),
]

CASES = [("mlp", "--train"), ("mlp", "--train", "--backend", "inductor")]
IDS = ["reference", "inductor"]
ZOO = REPO / "tests" / "zoo"
_NODE = re.compile(r"^\s*([A-Za-z_]\w*)\s*(?::\s*\"[^\"]*\")?\s*=")


@pytest.fixture(params=CASES, ids=IDS)
def opened(request, open_case):
    opened = open_case(*request.param)
    assert opened.case.returncode == 0, opened.case.stdout + opened.case.stderr[-3000:]
    assert opened.returncode == 0, opened.stderr
    return opened


def test_forward_and_backward_each_get_their_page(opened):
    assert [label for label, _ in opened.pages] == ["[0/0] forward", "[0/0] backward"]
    forward, backward = (tlparse_page.parse_page(path.read_text()) for _, path in opened.pages)
    # the AOT id counts graphs per process (the compile server runs many compiles in one)
    (fwd_id,) = re.findall(r"'(\d+)_forward'", forward.code[0])
    assert re.findall(r"'(\d+)_backward'", backward.code[0]) == [fwd_id]
    assert tlparse_page.kernel_lines(forward) and tlparse_page.kernel_lines(backward)
    # one pre-grad graph per compile: the backward page shows the forward's
    assert forward.pre_grad == backward.pre_grad and any(line.strip() for line in forward.pre_grad)
    # why the split exists: tlparse's own page of the folder is the backward's alone
    (folder_page,) = opened.out.glob("provenance_tracking_-_0_0_0.html")
    assert tlparse_page.parse_page(folder_page.read_text()).code == backward.code


def _stack_lines(traces: list[str]) -> set[str]:
    """``file:line`` of every frame of a kernel's stack traces."""
    return {f"{m[1]}:{m[2]}" for t in traces for m in re.finditer(r'File "([^"]+)", line (\d+)', t)}


def test_backward_kernels_reach_the_pre_grad_nodes_of_the_ops_they_differentiate(opened):
    """Reference backend: every backward kernel links pre-grad nodes of the forward's
    pre-grad graph (the page's pre-grad panel), gradients through autograd's seq_nr. Each
    link is checked against what torch itself says independently of the hook's rule: the
    stack trace Inductor copied onto the gradient names the line of a forward kernel that
    maps to the same pre-grad node. Stock Inductor (default): only from_node chains link,
    and each gradient kernel left out is named with the option that links it."""
    forward, backward = read_log_graphs(opened.case.log)
    mapping = backward.node_mappings
    page = tlparse_page.parse_page(opened.pages[1][1].read_text())
    pre_grad_nodes = {m[1] for line in page.pre_grad if (m := _NODE.match(line))}
    post_grad = {node.name for node in parse_post_grad_graph(backward.post_grad_graph).nodes}
    assert all(mapping["cppCodeToPost"].values())
    assert set(mapping["postToPre"]) <= post_grad
    assert {pre for pres in mapping["postToPre"].values() for pre in pres} <= pre_grad_nodes

    reached = {
        key: [p for n in nodes for p in mapping["postToPre"].get(n, ())]
        for key, nodes in mapping["cppCodeToPost"].items()
    }
    diagnostics = backward.diagnostics
    if opened.case.out.joinpath("sdsc").exists():  # the reference backend
        assert all(reached.values()), reached
        assert diagnostics["without_pre_grad"] == []
        assert {link["why"] for link in diagnostics["inferred_pre_grad"]} == {"seq_nr"}
        lines_of_pre = {}
        for key, nodes in forward.node_mappings["cppCodeToPost"].items():
            for pre in {p for n in nodes for p in forward.node_mappings["postToPre"].get(n, ())}:
                lines_of_pre.setdefault(pre, set()).update(_stack_lines(forward.stack_traces[key]))
        for key, pres in reached.items():
            assert _stack_lines(backward.stack_traces[key]) & set().union(*(lines_of_pre[p] for p in pres)), key
    else:  # stock Inductor keeps torch's own mapping: the gradients are named, not linked
        unlinked = [key for key, pres in reached.items() if not pres]
        assert unlinked and [gap["kernel"] for gap in diagnostics["without_pre_grad"]] == unlinked
        assert all("--beyond-upstream links" in gap["why"] for gap in diagnostics["without_pre_grad"])
        assert diagnostics["inferred_pre_grad"] == []
        assert f"kernels reaching a pre-grad node: {len(reached) - len(unlinked)}/{len(reached)}" in opened.case.stdout


def test_handles_count_from_1_in_each_graph_whatever_the_process_compiled_before(opened):
    """The compile server runs many compiles in one process, training ones among them: a
    backward is compiled lazily, outside the scope where compile_fx zeroes Inductor's handle
    counter, so without a reset at enable() its N would go on from the previous backward's."""
    for graph in read_log_graphs(opened.case.log):
        numbers = sorted(int(key.rsplit(":", 1)[1]) for key in graph.node_mappings["cppCodeToPost"])
        assert numbers == list(range(1, len(numbers) + 1)), (graph.compile_id, numbers)


# A tracked training compile whose backward the backend refuses after the forward compiled
# (tests/zoo/refused.py:backward_refused), in a process of its own: the refusal is a lowering
# registered for the whole process.
FAILED_BACKWARD = """
import sys, torch, spyre_provenance
sys.path.insert(0, {zoo!r})
import refused

refused.refuse_half_square_backward()
model, (x,) = refused.backward_refused()
with spyre_provenance.tracking(backend="reference"):
    out = torch.compile(model)(x)
    try:
        out.sum().backward()
    except Exception as exc:
        print(type(exc).__name__, "half_square_backward" in str(exc))
"""


def test_a_failed_backward_leaves_the_forward_page_right(fresh_process, tmp_path):
    """tlparse renders a compile folder against its last post-grad graph: here the
    backward's, logged before its lowering failed. The forward gets a page of its own, built
    against its own post-grad graph, every call site linked to the nodes its kernel computes."""
    trace = tmp_path / "trace"
    ran = fresh_process.run(
        driver=FAILED_BACKWARD.format(zoo=str(ZOO)), env={"TORCH_TRACE": str(trace), "INDUCTOR_PROVENANCE": "1"}
    )
    assert ran.stdout.split() == ["InductorError", "True"], ran.stdout + ran.stderr[-3000:]
    (log,) = trace.iterdir()
    graphs = read_log_graphs(log)
    assert [(bool(g.output_code), bool(g.post_grad_graph)) for g in graphs] == [(True, True), (False, True)]
    forward = graphs[0]

    opened = fresh_process.run("open", trace, "--out", tmp_path / "pages", "--no-browser")
    assert opened.returncode == 0, opened.stderr
    (line,) = opened.stdout.splitlines()
    assert line.startswith("[0/0] forward ")
    page = tlparse_page.parse_page(Path(line.split()[-1]).read_text())
    # the forward's graph, not the backward's (the page ends its panel with an empty line)
    assert [line for line in page.post_grad if line.strip()] == _panel(forward.post_grad_graph)
    linked = {k.key: k.post_grad_nodes for k in tlparse_page.kernel_lines(page)}
    mapping = forward.node_mappings["cppCodeToPost"]
    assert len(linked) == len(mapping) == 3
    for key, nodes in mapping.items():
        assert sorted(linked[key]) == sorted(nodes), key
    assert not any("tangents" in line for line in page.post_grad)


def _panel(graph: str) -> list[str]:
    """A post-grad graph's lines as the page's panel shows them, blank ones aside."""
    return [line for line in graph.splitlines() if line.strip()]
