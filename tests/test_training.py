"""Training compiles: forward and backward share one compile id, and tlparse renders a
compile folder from its last graph. ``open`` gives each its page; these tests pin what the
backward page can and cannot link (README, section "tlparse").

Compiles: ``mlp --train`` on the reference backend and on stock Inductor, shared with
tests/test_open.py through the session ``open_case`` fixture.
"""

from __future__ import annotations

import re

import pytest
import tlparse_page

from spyre_provenance.logs import tlparse_run
from spyre_provenance.logs.graphs import read_log_graphs
from spyre_provenance.logs.post_grad import parse_post_grad_graph

pytestmark = [
    pytest.mark.compile,
    pytest.mark.skipif(tlparse_run.tlparse_binary() is None, reason="tlparse is not installed"),
]

CASES = [("mlp", "--train"), ("mlp", "--train", "--backend", "inductor")]
IDS = ["reference", "inductor"]
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


def test_backward_links_pre_grad_nodes_only_through_from_node(opened):
    """Every backward kernel links post-grad nodes; pre-grad links exist only for nodes
    whose from_node chain reaches the forward's pre-grad graph (forward nodes the
    partitioner moved into the backward). Gradient nodes autograd created have none."""
    _, backward = read_log_graphs(opened.case.log)
    mapping = backward.node_mappings
    page = tlparse_page.parse_page(opened.pages[1][1].read_text())
    pre_grad_nodes = {m[1] for line in page.pre_grad if (m := _NODE.match(line))}
    post_grad = {node.name for node in parse_post_grad_graph(backward.post_grad_graph).nodes}

    assert all(mapping["cppCodeToPost"].values())
    assert set(mapping["postToPre"]) <= post_grad
    assert {pre for pres in mapping["postToPre"].values() for pre in pres} <= pre_grad_nodes
    gradient_kernels = [
        key for key, nodes in mapping["cppCodeToPost"].items()
        if not any(node in mapping["postToPre"] for node in nodes)
    ]
    assert gradient_kernels, (
        "every backward kernel links a pre-grad node now: README section 'tlparse' says"
        " gradient kernels cannot; update it"
    )


def test_handles_count_from_1_in_each_graph_whatever_the_process_compiled_before(opened):
    """The compile server runs many compiles in one process, training ones among them: a
    backward is compiled lazily, outside the scope where compile_fx zeroes Inductor's handle
    counter, so without a reset at enable() its N would go on from the previous backward's."""
    for graph in read_log_graphs(opened.case.log):
        numbers = sorted(int(key.rsplit(":", 1)[1]) for key in graph.node_mappings["cppCodeToPost"])
        assert numbers == list(range(1, len(numbers) + 1)), (graph.compile_id, numbers)
