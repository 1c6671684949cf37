"""What the hook infers beyond a kernel's own nodes (``spyre_provenance.links.inference``), on
small hand-made post-grad graphs shaped like the ones torch writes: BatchNorm's running-stat
write-backs, dropout's seed kernel, gradients carrying their forward op's ``seq_nr``.
The same rules on real compiles: tests/compile/test_training.py and tests/models/test_real_models.py."""

from __future__ import annotations

import pytest

from spyre_provenance.links import inference
from spyre_provenance.model.post_grad_graph import GraphNode, NodeFacts, PostGradGraph
from spyre_provenance.model.records import InferredPreGrad, InferredSource

TRACE = 'File "model.py", line {}, in forward\n    {}\n'


def call(name: str, op: str, *inputs: str) -> GraphNode:
    return GraphNode(name, "call", op, inputs)


def placeholder(name: str) -> GraphNode:
    return GraphNode(name, "placeholder", line=False)


@pytest.fixture
def batch_norm_forward() -> PostGradGraph:
    """A training BatchNorm's forward: the statistics, then functionalization's write-back
    of the running mean into its buffer (a ``copy_`` with no stack trace of its own)."""
    nodes = [
        placeholder("x"),
        placeholder("running_mean"),
        call("mean", "aten.mean", "x"),
        call("view", "aten.view", "mean"),
        call("add", "aten.add", "view", "running_mean"),
        call("copy_", "aten.copy_", "running_mean", "view_1"),
        call("view_1", "aten.view", "add"),
    ]
    facts = {
        "mean": NodeFacts(TRACE.format(7, "self.bn(x)"), seq_nr=3),
        "add": NodeFacts(TRACE.format(7, "self.bn(x)"), seq_nr=3),
    }
    return PostGradGraph(nodes, outputs=("mean", "copy_"), facts=facts)


def test_a_write_back_takes_the_source_and_pre_grad_nodes_of_the_value_it_copies(batch_norm_forward):
    kernels = {"sdsc_mean_0:1": ["mean"], "sdsc_copy_1:2": ["copy_"]}
    own = {"sdsc_mean_0:1": [TRACE.format(7, "self.bn(x)")], "sdsc_copy_1:2": []}
    sources = inference.infer_sources(kernels, own, batch_norm_forward)
    assert sources == [InferredSource("sdsc_copy_1:2", "add", "write-back")]
    assert inference.borrowed_traces(sources, batch_norm_forward) == {"sdsc_copy_1:2": [TRACE.format(7, "self.bn(x)")]}

    pre_to_post, post_to_pre = {"batch_norm": ["mean", "add"]}, {"mean": ["batch_norm"], "add": ["batch_norm"]}
    found = inference.infer_pre_grad(batch_norm_forward, pre_to_post, post_to_pre)
    assert found == [InferredPreGrad("copy_", ["batch_norm"], "write-back")]
    assert post_to_pre["copy_"] == ["batch_norm"] and pre_to_post["batch_norm"] == ["mean", "add", "copy_"]


def test_a_kernel_with_its_own_trace_borrows_nothing(batch_norm_forward):
    kernels = {"sdsc_copy_1:2": ["copy_"]}
    assert inference.infer_sources(kernels, {"sdsc_copy_1:2": ["a trace"]}, batch_norm_forward) == []
    assert inference.infer_sources(kernels, {"sdsc_copy_1:2": ["  \n"]}, batch_norm_forward) != []  # blank is none


@pytest.fixture
def dropout_forward() -> PostGradGraph:
    """Inductor's dropout: one kernel draws the graph's seeds (no stack trace, no
    from_node), each dropout looks its seed up and draws."""
    nodes = [
        call("seeds", "prims.inductor_seeds"),
        call("lookup", "prims.inductor_lookup_seed", "seeds"),
        call("random", "prims.inductor_random", "lookup"),
        call("gt", "aten.gt", "random"),
    ]
    facts = {n: NodeFacts(TRACE.format(9, "self.drop(h)")) for n in ("lookup", "random", "gt")}
    return PostGradGraph(nodes, outputs=("gt",), facts=facts)


def test_a_helper_kernel_takes_the_source_of_its_readers_but_not_their_pre_grad_nodes(dropout_forward):
    """A reader says what a helper serves (its source line, recorded as such), never which
    pre-grad node it computes (issue 37: a checkpointed block's kernels all lit the head)."""
    kernels = {"aten.randint.low_out:1": ["seeds"], "sdsc_dropout_0:2": ["lookup", "random", "gt"]}
    own = {"sdsc_dropout_0:2": [TRACE.format(9, "self.drop(h)")]}
    assert inference.infer_sources(kernels, own, dropout_forward) == [
        InferredSource("aten.randint.low_out:1", "lookup", "consumer")
    ]
    post_to_pre = {n: ["dropout"] for n in ("lookup", "random", "gt")}
    pre_to_post = {"dropout": ["lookup", "random", "gt"]}
    assert inference.infer_pre_grad(dropout_forward, pre_to_post, post_to_pre) == []
    assert "seeds" not in post_to_pre
    (gap,) = inference.pre_grad_gaps(
        ["aten.randint.low_out:1"],
        {"aten.randint.low_out:1": ["seeds"]},
        dropout_forward,
        pre_grad_known=True,
        backward=False,
    )
    assert "not evidence" in gap.why


def test_a_node_traced_from_a_subgraph_links_to_the_higher_order_op_holding_it(dropout_forward):
    """A checkpointed block's nodes reach only their subgraph's nodes by from_node: they
    link to the top-level op holding the subgraph (``held``), before any other rule."""
    post_to_pre: dict[str, list[str]] = {}
    pre_to_post: dict[str, list[str]] = {}
    held = {"lookup": ["tag_activation_checkpoint"], "gt": ["tag_activation_checkpoint"]}
    found = inference.infer_pre_grad(dropout_forward, pre_to_post, post_to_pre, held=held)
    assert found == [
        InferredPreGrad("lookup", ["tag_activation_checkpoint"], "subgraph"),
        InferredPreGrad("gt", ["tag_activation_checkpoint"], "subgraph"),
    ]
    assert pre_to_post == {"tag_activation_checkpoint": ["lookup", "gt"]}


def test_a_name_printed_twice_in_the_pre_grad_graph_is_no_link():
    """tlparse lights a name's last line: a top-level ``linear`` that a subgraph prints too
    would light the subgraph's, so the link is taken out and the kernel says why."""
    post_to_pre = {"mm": ["linear"], "add": ["linear", "add"], "relu": ["relu"]}
    pre_to_post = {"linear": ["mm", "add"], "add": ["add"], "relu": ["relu"]}
    hidden = inference.hide_repeated(post_to_pre, pre_to_post, {"linear"})
    assert hidden == {"mm": ["linear"], "add": ["linear"]}
    assert post_to_pre == {"add": ["add"], "relu": ["relu"]}
    assert pre_to_post == {"add": ["add"], "relu": ["relu"]}
    found = [InferredPreGrad("mm", ["linear"], "seq_nr"), InferredPreGrad("add", ["linear", "add"], "seq_nr")]
    assert inference.drop_repeated(found, {"linear"}) == [InferredPreGrad("add", ["add"], "seq_nr")]
    graph = PostGradGraph([call("mm", "aten.mm")])
    (gap,) = inference.pre_grad_gaps(
        ["k:1"], {"k:1": ["mm"]}, graph, pre_grad_known=True, backward=False, hidden=hidden
    )
    assert gap.why.startswith("its pre-grad node linear shares its name with another node")


def test_source_line_is_the_innermost_frame():
    trace = TRACE.format(3, "y = self.block(x)") + TRACE.format(9, "h = self.fc(x)")
    assert inference.source_line(trace) == "model.py:9"
    assert inference.source_line(None) is None and inference.source_line("no frame") is None


def test_a_listed_node_with_a_trace_is_preferred_and_keeps_the_reason_it_is_listed(dropout_forward):
    kernels = {"k:1": ["seeds", "lookup"]}
    found = inference.infer_sources(kernels, {}, dropout_forward, {("lookup", "k:1"): "consumer"})
    assert found == [InferredSource("k:1", "lookup", "consumer")]
    assert inference.infer_sources(kernels, {}, dropout_forward) == [InferredSource("k:1", "lookup", "inlined")]


@pytest.fixture
def linear_forward() -> PostGradGraph:
    """A forward graph whose first op of sequence number 22 is the convolution; BatchNorm's
    ``num_batches_tracked += 1`` has the same number but created no autograd node."""
    nodes = [
        placeholder("x"),
        call("convolution", "aten.convolution", "x"),
        call("add", "aten.add", "x"),
        call("mm", "aten.mm", "convolution"),
    ]
    facts = {"convolution": NodeFacts(seq_nr=22), "add": NodeFacts(seq_nr=22), "mm": NodeFacts(seq_nr=23)}
    return PostGradGraph(nodes, outputs=("mm",), facts=facts)


def test_forward_links_follow_autograd_first_node_of_each_sequence_number(linear_forward):
    post_to_pre = {"convolution": ["conv2d"], "add": ["add_"], "mm": ["linear"]}
    assert inference.forward_links(linear_forward, post_to_pre) == {22: ["conv2d"], 23: ["linear"]}
    # a first node without a pre-grad link does not hide the next one
    assert inference.forward_links(linear_forward, {"add": ["add_"]}) == {22: ["add_"]}


@pytest.fixture
def backward() -> PostGradGraph:
    """A backward graph: the incoming gradient, the two gradients of a Linear (seq_nr 23),
    one of a convolution (22), a gradient accumulation, and a node no autograd op made."""
    nodes = [
        placeholder("tangents_1"),
        call("mm_1", "aten.mm", "tangents_1"),
        call("sum_1", "aten.sum", "tangents_1"),
        call("conv_bwd", "aten.convolution_backward", "mm_1"),
        call("acc", "aten.add", "conv_bwd", "mm_1"),
        call("fresh", "aten.mul", "tangents_1"),
    ]
    facts = {
        "mm_1": NodeFacts(seq_nr=23),
        "sum_1": NodeFacts(seq_nr=23),
        "conv_bwd": NodeFacts(seq_nr=22),
        "acc": NodeFacts(seq_nr=22, gradient_acc=True),
    }
    return PostGradGraph(nodes, outputs=("sum_1", "acc", "fresh"), facts=facts)


def test_gradients_reach_the_pre_grad_nodes_of_the_forward_op_they_differentiate(backward):
    pre_to_post: dict[str, list[str]] = {}
    post_to_pre: dict[str, list[str]] = {}
    found = inference.infer_pre_grad(backward, pre_to_post, post_to_pre, {22: ["conv2d"], 23: ["linear"]})
    assert found == [
        InferredPreGrad("mm_1", ["linear"], "seq_nr"),
        InferredPreGrad("sum_1", ["linear"], "seq_nr"),
        InferredPreGrad("conv_bwd", ["conv2d"], "seq_nr"),
    ]
    # a gradient accumulation differentiates nothing of its own: without a source line of its
    # own, the gradients it sums (other lines) are no evidence of what it computes
    assert pre_to_post == {"linear": ["mm_1", "sum_1"], "conv2d": ["conv_bwd"]}
    # computed from the incoming gradient alone, which no forward node saved
    assert "fresh" not in post_to_pre
    kernels = {"k_mm:1": ["mm_1"], "k_acc:2": ["acc"], "k_fresh:3": ["fresh"], "k_in:4": ["tangents_1"]}
    gaps = inference.pre_grad_gaps(["k_fresh:3", "k_in:4"], kernels, backward, pre_grad_known=True, backward=True)
    assert [g.why for g in gaps] == [
        "its nodes have no autograd sequence number and no from_node chain into the pre-grad graph (the nodes"
        " reading what it computes are not evidence of what it computes)",
        "copies graph input tangents_1 (the nodes reading the copy are not evidence of what it computes)",
    ]
    acc_only = PostGradGraph(
        [placeholder("g"), call("acc", "aten.add", "g")], facts={"acc": NodeFacts(gradient_acc=True)}
    )
    (gap,) = inference.pre_grad_gaps(["k:1"], {"k:1": ["acc"]}, acc_only, pre_grad_known=True, backward=True)
    assert gap.why == "a gradient accumulation: it differentiates no forward op of its own"


def test_a_backward_input_is_the_forward_value_saved_under_its_name(backward):
    """A weight gradient a post-grad pattern fused loses its seq_nr; it is computed from a
    value the forward saved (a placeholder named as the forward node), linked as there when
    that node stands on the gradient's own source line, never otherwise."""
    graph = PostGradGraph(
        [placeholder("view"), placeholder("tangents_1"), call("mm", "aten.mm", "tangents_1", "view")],
        outputs=("mm",),
        facts={"mm": NodeFacts(stack_trace=TRACE.format(7, "self.fc(x)"))},
    )
    post_to_pre: dict[str, list[str]] = {}
    lines = {"linear": "model.py:7", "relu": "model.py:8"}
    found = inference.infer_pre_grad(graph, {}, post_to_pre, {}, saved={"view": ["linear", "relu"]}, pre_lines=lines)
    assert found == [InferredPreGrad("mm", ["linear"], "inputs")]
    assert inference.infer_pre_grad(graph, {}, {}, {}, saved={}) == []
    # another line's value is no evidence
    assert inference.infer_pre_grad(graph, {}, {}, {}, saved={"view": ["relu"]}, pre_lines=lines) == []


def test_a_from_node_link_is_never_replaced(backward):
    post_to_pre = {"mm_1": ["t"]}
    found = inference.infer_pre_grad(backward, {"t": ["mm_1"]}, post_to_pre, {23: ["linear"]})
    assert post_to_pre["mm_1"] == ["t"] and "mm_1" not in [link.node for link in found]


def test_without_a_forward_table_gradients_stay_unlinked(backward):
    post_to_pre: dict[str, list[str]] = {}
    assert inference.infer_pre_grad(backward, {}, post_to_pre, None) == []


def test_what_stock_inductor_leaves_out_is_named_with_the_option_that_adds_it(backward, dropout_forward):
    would = [InferredPreGrad("mm_1", ["linear"], "seq_nr")]
    (gap,) = inference.pre_grad_gaps(
        ["k:1"], {"k:1": ["mm_1"]}, backward, pre_grad_known=True, backward=True, not_taken=would
    )
    assert gap.why == (
        "stock Inductor links only from_node chains; --beyond-upstream links mm_1 to linear"
        " through the forward op it differentiates (seq_nr)"
    )
    (gap,) = inference.source_gaps(
        ["k:1"], {"k:1": ["seeds"]}, dropout_forward, [InferredSource("k:1", "lookup", "consumer")]
    )
    assert gap.why == (
        "stock Inductor's stack traces give it none; --beyond-upstream takes the one of lookup,"
        " a node reading what it computes"
    )
    (gap,) = inference.pre_grad_gaps(["k:1"], {"k:1": ["mm_1"]}, backward, pre_grad_known=False, backward=True)
    assert gap.why == "no pre-grad graph was logged for this compile"


def test_a_kernel_with_no_source_anywhere_says_so(dropout_forward):
    bare = PostGradGraph([call("seeds", "prims.inductor_seeds")], outputs=("seeds",))
    assert inference.infer_sources({"k:1": ["seeds"]}, {}, bare) == []
    (gap,) = inference.source_gaps(["k:1"], {"k:1": ["seeds"]}, bare)
    assert gap.why.startswith("its nodes (seeds) carry no stack trace")


def test_a_chain_reaching_the_nodes_own_line_keeps_only_those():
    """Eval-mode dropout returns its input: the mean before it has the dropout in its
    from_node chain, though it computes the line before; a node whose chain reaches no
    pre-grad node on its own line keeps them all."""
    graph = PostGradGraph(
        [call("mean", "aten.mean"), call("mm", "aten.mm", "mean")],
        facts={
            "mean": NodeFacts(stack_trace=TRACE.format(3, "h = x.mean()")),
            "mm": NodeFacts(stack_trace=TRACE.format(9, "y")),
        },
    )
    post_to_pre = {"mean": ["mean", "dropout"], "mm": ["linear"]}
    pre_to_post = {"mean": ["mean"], "dropout": ["mean"], "linear": ["mm"]}
    lines = {"mean": "model.py:3", "dropout": "model.py:4", "linear": "model.py:5"}
    assert inference.prefer_own_line(graph, post_to_pre, pre_to_post, lines) == {"mean": ["dropout"]}
    assert post_to_pre == {"mean": ["mean"], "mm": ["linear"]}
    assert pre_to_post == {"mean": ["mean"], "linear": ["mm"]}
