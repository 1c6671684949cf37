"""What ``lookup`` says each line and op of a call site is (issue 56 point 4): the lines
fused into the kernel apart from the enclosing calls, and an extern call's Original ATen
kept to its own nodes' ops, on torch's own logs (``tests/data/torch-2.15.0``) and on plain
artifacts shaped as Inductor writes them."""

from __future__ import annotations

import re

import spyre_provenance
from helpers.where import DATA
from spyre_provenance.logs.graphs import read_log_graphs
from spyre_provenance.runtime.index import IndexedGraph
from spyre_provenance.runtime.lookup import GraphView
from spyre_provenance.runtime.render import _call_site, render

LEVEL2 = DATA / "torch-2.15.0" / "inference_level2.log"


def _site(log, key):
    (answer,) = spyre_provenance.lookup(key, from_=log).answers
    (match,) = answer.matches
    (site,) = match.call_sites
    return site


def _comment_above(code: str, key: str) -> list[str]:
    """The ops of the ``Original ATen`` comment just above ``key``'s handle comment, read here."""
    lines = code.splitlines()
    at = next(i for i, line in enumerate(lines) if line.strip() == f"# [Provenance debug handles] {key}")
    return re.search(r"Original ATen: \[([^\]]*)\]", lines[at - 1])[1].split(", ")


def test_an_extern_calls_original_aten_is_its_own_nodes_ops():
    (graph,) = [g for g in read_log_graphs(LEVEL2) if g.node_mappings]
    # torch's comment above the second addmm names the relu before it: another kernel's node
    assert _comment_above(graph.output_code, "extern_kernels.addmm:3") == ["aten.relu", "aten.t", "aten.addmm"]
    assert graph.node_mappings["cppCodeToPost"]["extern_kernels.addmm:3"] == ["addmm_1"]
    site = _site(LEVEL2, "extern_kernels.addmm:3")
    assert (site.aten_ops, site.aten_from) == (["aten.addmm"], "wrapper comment, own nodes")
    # the relu is the fused kernel's, which says so from its own node
    relu = _site(LEVEL2, "cpp_fused_relu_0:2")
    assert (relu.aten_ops, relu.aten_from) == (["aten.relu"], "post-grad nodes")
    text = render(spyre_provenance.lookup("extern_kernels.addmm:3", from_=LEVEL2))
    assert "      Original ATen: aten.addmm  (from wrapper comment, own nodes)\n" in text


_POST_GRAD = """class <lambda>(torch.nn.Module):
    def forward(self, arg0_1: "f32[8, 8][8, 1]cpu", arg1_1: "f32[8, 8][8, 1]cpu"):
        mul: "f32[8, 8][8, 1]cpu" = torch.ops.aten.mul.Tensor(arg0_1, 0.5)
        erf: "f32[8, 8][8, 1]cpu" = torch.ops.aten.erf.default(mul);  mul = None
        mm: "f32[8, 8][8, 1]cpu" = torch.ops.aten.mm.default(erf, arg1_1);  erf = arg1_1 = None
        return (mm,)
"""
_WRAPPER = """triton_poi_fused_gelu_0 = async_compile.triton('triton_poi_fused_gelu_0', '''...''')
def call(args):
        # Topologically Sorted Source Nodes: [gelu], Original ATen: [aten.gelu]
        # [Provenance debug handles] triton_poi_fused_gelu_0:1
        triton_poi_fused_gelu_0.run(buf0, arg0_1, 64)
        # Topologically Sorted Source Nodes: [emb, pow_1, mean, mm], Original ATen: [aten.embedding, aten.pow, aten.mean, aten.mm]
        # [Provenance debug handles] extern_kernels.mm:2
        extern_kernels.mm(buf0, arg1_1, out=buf1)
"""
_MAPPING = {"cppCodeToPost": {"triton_poi_fused_gelu_0:1": ["mul", "erf"], "extern_kernels.mm:2": ["mm"]}}


def _view(post_grad_graph: str | None, stack_traces: dict | None = None) -> GraphView:
    graph = IndexedGraph(
        model="m",
        compile_id="0/0",
        graph="inference",
        origin="plain",
        mapping=_MAPPING,
        stack_traces=stack_traces or {},
        opspecs=None,
        output_code=_WRAPPER,
        post_grad_graph=post_grad_graph,
    )
    return GraphView(graph)


def test_a_lone_mm_is_not_given_its_comments_neighbours():
    """The FMS ``micro`` case: a lone extern ``mm`` whose comment lists the ops before it."""
    view = _view(_POST_GRAD)
    site = view.call_site("extern_kernels.mm:2")
    assert (site.aten_ops, site.aten_from) == (["aten.mm"], "wrapper comment, own nodes")
    # a kernel the wrapper defines keeps its comment whole: the comment is made from the same
    # nodes as the mapping, and its original op (gelu) is not among the decomposed nodes' ops
    fused = view.call_site("triton_poi_fused_gelu_0:1")
    assert (fused.aten_ops, fused.aten_from) == (["aten.gelu"], "wrapper comment")


def test_without_the_post_grad_graph_an_extern_comment_is_as_written():
    site = _view(None).call_site("extern_kernels.mm:2")
    assert (site.aten_ops, site.aten_from) == (
        ["aten.embedding", "aten.pow", "aten.mean", "aten.mm"],
        "wrapper comment",
    )


def _trace(*frames: tuple[str, int, str]) -> str:
    return "".join(f'  File "{f}", line {n}, in forward\n    {code}\n' for f, n, code in frames)


MODEL, BLOCK, ATTN = (
    ("/p/model.py", 10, "x = self.block(x)"),
    ("/p/block.py", 20, "h = self.attn(x)"),
    (
        "/p/attn.py",
        30,
        "q = self.wq(x)",
    ),
)
LINEAR = ("/venv/site-packages/torch/nn/modules/linear.py", 134, "return F.linear(input, self.weight, self.bias)")
RESIDUAL = ("/p/block.py", 21, "x = x + h")


def test_fused_lines_apart_from_enclosing_calls_and_inner_frames():
    traces = {"extern_kernels.mm:2": [_trace(MODEL, BLOCK, ATTN, LINEAR), _trace(MODEL, RESIDUAL)]}
    site = _view(_POST_GRAD, traces).call_site("extern_kernels.mm:2")
    got = [(s.file, s.line, s.role) for s in site.source]
    assert got == [
        ("/p/attn.py", 30, "fused"),
        ("/p/block.py", 21, "fused"),
        ("/p/block.py", 20, "enclosing"),
        ("/p/model.py", 10, "enclosing"),
        (LINEAR[0], 134, "inner"),
    ]
    text = "".join(line + "\n" for line in _call_site(site))
    assert (
        "      source: /p/attn.py:30\n          q = self.wq(x)\n        also fused: /p/block.py:21  x = x + h\n" in text
    )
    assert "        enclosing call: /p/block.py:20  h = self.attn(x)\n" in text
    assert "        enclosing call: /p/model.py:10  x = self.block(x)\n" in text
    assert f"        inner frame: {LINEAR[0]}:134  {LINEAR[2]}" in text


def test_a_line_fused_in_one_trace_is_fused_though_it_encloses_another():
    traces = {"extern_kernels.mm:2": [_trace(MODEL, BLOCK, ATTN), _trace(MODEL, BLOCK)]}
    site = _view(_POST_GRAD, traces).call_site("extern_kernels.mm:2")
    assert [(s.line, s.role) for s in site.source] == [(30, "fused"), (20, "fused"), (10, "enclosing")]


def test_no_user_frame_the_innermost_is_the_line():
    """torch 2.15's AOTInductor log of an ``nn.Sequential``: every frame is torch's."""
    site = _site(DATA / "torch-2.15.0" / "aoti.log", "aoti_torch_cpu_addmm_out:1")
    assert [(s.file.rsplit("/", 1)[1], s.line, s.role) for s in site.source] == [
        ("linear.py", 134, "fused"),
        ("container.py", 259, "enclosing"),
    ]
