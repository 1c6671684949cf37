"""Reading generated wrapper code the way tlparse does."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from spyre_provenance.logs import wrapper_code
from spyre_provenance.logs.post_grad import parse_post_grad_graph
from spyre_provenance.validate import coverage

WRAPPER = """
# AOT ID: ['0_inference']
cpp_fused_relu_0 = async_compile.cpp_pybinding(['float*'], r\'\'\'
extern "C" void kernel(float* in_out_ptr0) {}
\'\'\')
cpp_fused_relu_10 = async_compile.cpp_pybinding(['float*'], r\'\'\'
\'\'\')

class Runner:
    def call(self, args):
        arg0_1, = args
        buf0 = empty_strided_cpu((8, 256), (256, 1), torch.float32)
        # [Provenance debug handles] extern_kernels.addmm:1
        extern_kernels.addmm(arg1_1, arg0_1, reinterpret_tensor(arg2_1, (128, 256), (1, 128), 0), alpha=1, beta=1, out=buf0)
        buf1 = buf0; del buf0  # reuse
        # [Provenance debug handles] cpp_fused_relu_0:2
        cpp_fused_relu_0(buf1)
        cpp_fused_relu_10(buf1)
        return (buf1, )
"""

GRAPH = """class GraphModule(torch.nn.Module):
    def forward(self, primals_1: "f32[256, 128][128, 1]cpu"):
        permute: "f32[128, 256][1, 128]cpu" = torch.ops.aten.permute.default(primals_1, [1, 0]);  primals_1 = None
        addmm: "f32[8, 256][256, 1]cpu" = torch.ops.aten.addmm.default(primals_2, primals_3, permute)
        relu: "f32[8, 256][256, 1]cpu" = torch.ops.aten.relu.default(addmm);  addmm = None
        return (relu,)
"""


def test_call_sites_pair_each_call_with_its_handle_comment():
    sites = wrapper_code.call_sites(WRAPPER)
    assert [(s.name, s.key) for s in sites] == [
        ("extern_kernels.addmm", "extern_kernels.addmm:1"),
        ("cpp_fused_relu_0", "cpp_fused_relu_0:2"),
        ("cpp_fused_relu_10", None),  # a call no comment announces
    ]
    assert sites[1].handle_line == sites[1].line - 1


def test_defined_kernels_and_comments():
    assert wrapper_code.defined_kernels(WRAPPER) == ["cpp_fused_relu_0", "cpp_fused_relu_10"]
    assert wrapper_code.handle_comments(WRAPPER) == ["extern_kernels.addmm:1", "cpp_fused_relu_0:2"]


def test_post_grad_graph_nodes_views_and_lines():
    graph = parse_post_grad_graph(GRAPH)
    assert [(n.name, n.op, n.is_view, n.computes) for n in graph.nodes] == [
        ("primals_1", "", False, False),
        ("permute", "aten.permute", True, False),
        ("addmm", "aten.addmm", False, True),
        ("relu", "aten.relu", False, True),
    ]
    # a graph input is named only in the ``def forward`` line: tlparse has nothing to highlight
    assert not graph.has_line("primals_1") and graph.has_line("addmm")
    assert graph.users("addmm") == ["relu"] and graph.outputs == ("relu",)


def test_judge_counts_unannounced_calls_and_unreached_nodes():
    mapping = {
        "cppCodeToPost": {"extern_kernels.addmm:1": ["addmm"], "cpp_fused_relu_0:2": ["relu"]},
        "postToCppCode": {"addmm": ["extern_kernels.addmm:1"], "relu": ["cpp_fused_relu_0:2"]},
    }
    graph = parse_post_grad_graph(GRAPH)
    cov = coverage.judge(WRAPPER, graph, mapping, stack_traces={"cpp_fused_relu_0:2": ['File "m.py", line 3']})
    assert (cov.counts.call_sites, cov.counts.linked_call_sites) == (3, 2)
    assert (cov.counts.compute_nodes, cov.counts.reached_nodes, cov.counts.exempt_nodes.view) == (2, 2, 1)
    assert cov.kernels_with_source == 1 and not cov.complete
    unannounced = wrapper_code.call_sites(WRAPPER)[2].line
    assert [(v.rule, v.where) for v in cov.violations] == [("call-sites", f"wrapper line {unannounced}")]


def test_judge_reports_a_key_no_comment_announces_and_an_unreached_node():
    mapping = {"cppCodeToPost": {"cpp_fused_relu_0:7": ["relu"]}, "postToCppCode": {"relu": ["cpp_fused_relu_0:7"]}}
    cov = coverage.judge(WRAPPER, parse_post_grad_graph(GRAPH), mapping)
    messages = [str(v) for v in cov.violations]
    assert "cpp_fused_relu_0:7: mapping key without a call site in the wrapper [call-sites]" in messages
    # addmm feeds relu, whose kernel computes it: inlined there, yet not listed, so a violation
    assert (
        "addmm: post-grad compute node (aten.addmm) is computed inside cpp_fused_relu_0:7 (inlined into"
        " its users), but no kernel lists it [node-reach]"
    ) in messages


def test_judge_on_stock_inductor_turns_mapping_gaps_into_hints():
    mapping = {"cppCodeToPost": {"extern_kernels.addmm:1": ["addmm"], "cpp_fused_relu_0:2": ["relu"]}}
    graph = parse_post_grad_graph(GRAPH)
    cov = coverage.judge(WRAPPER, graph, mapping, upstream=True)
    assert cov.complete and len(cov.hints) == 1 and "cpp_fused_relu_10" in cov.hints[0]


def _tlparse_rule(code: str, key: str) -> int | None:
    """tlparse 0.4.3's rule as it reads, line by line (slow: a scan per key)."""
    lines = code.splitlines()
    start = next((i for i, line in enumerate(lines) if "def" in line and "call" in line and "(args)" in line), 0)
    name = key[: key.find(":")] if ":" in key else key
    for i in range(start, len(lines)):
        if key in lines[i]:
            return next((j + 1 for j in range(i + 1, len(lines)) if name in lines[j]), None)
    return None


def test_tlparse_lines_on_a_wrapper():
    lines = wrapper_code.TlparseLines(WRAPPER)
    assert lines.line("cpp_fused_relu_0:2") == 17 and WRAPPER.splitlines()[16].strip() == "cpp_fused_relu_0(buf1)"
    assert lines.line("extern_kernels.addmm:1") == 14
    assert lines.line("cpp_fused_relu_10:3") is None  # no line holds the key
    for key in ("cpp_fused_relu_0:2", "extern_kernels.addmm:1", "cpp_fused_relu_10:3", "cpp_fused_relu_1", ""):
        assert lines.line(key) == _tlparse_rule(WRAPPER, key)


# Lines from a small alphabet, so keys, names and the call line meet often; the separators
# are every kind str.splitlines() splits at, which the one-pass reader must count alike.
_PIECES = ["def call(args):", "k_0:1", "k_0:12", "k_0", "k_1:2", "k_1", "x", ":", " ", "#"]
_BREAKS = ["\n", "\r\n", "\r", "\x0b", "\x1c", "\u2028"]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.lists(st.sampled_from(_PIECES), max_size=3), st.sampled_from(_BREAKS)), max_size=12),
    st.sampled_from(["k_0:1", "k_0:12", "k_1:2", "k_0", ":", "", "k_0:1\nk_0"]),
)
def test_tlparse_lines_agree_with_tlparse_rule(rows, key):
    code = "".join("".join(pieces) + brk for pieces, brk in rows)
    assert wrapper_code.TlparseLines(code).line(key) == _tlparse_rule(code, key)


COND_WRAPPER = """\
k_add_0 = async_compile.cpp_pybinding(['float*'], '''
extern "C" void kernel(float* out) {}
''')
k_relu_1 = async_compile.cpp_pybinding(['float*'], '''
extern "C" void kernel(float* out) {}
''')


def true_graph_0(args):
    true_graph_0_arg0_1, = args
    true_graph_0_buf0 = empty_strided_cpu((4, ), (1, ), torch.float32)
    # [Provenance debug handles] k_relu_1:2
    k_relu_1(true_graph_0_buf0)
    return (true_graph_0_buf0, )


k_sig_2 = async_compile.cpp_pybinding(['float*'], '''
extern "C" void kernel(float* out) { k_relu_1(out); }
''')


class Runner:
    def call(self, args):
        buf0 = empty_strided_cpu((4, ), (1, ), torch.float32)
        # [Provenance debug handles] k_add_0:1
        k_add_0(buf0)
        if buf0.item():
            buf1 = true_graph_0([buf0])
"""


def test_a_call_in_a_subgraph_function_is_a_call_site():
    """A cond branch is lifted into a module-level function before ``call`` (issue 37):
    its calls are call sites, with their comments; the kernel sources after it are not."""
    sites = wrapper_code.call_sites(COND_WRAPPER)
    assert [(s.name, s.key, s.subgraph) for s in sites] == [
        ("k_relu_1", "k_relu_1:2", "true_graph_0"),
        ("k_add_0", "k_add_0:1", None),
    ]


def test_a_branch_call_tlparse_does_not_search_is_a_hint_not_a_violation():
    """tlparse searches a key from ``def call(args)`` on: with the branch function written
    before a module-level ``call``, it never lights the branch's call. The mapping has the
    key; the page cannot show it: counted unlinked, said in a hint, no violation."""
    code = COND_WRAPPER.replace("class Runner:\n    def call(self, args):\n", "def call(args):\n").replace(
        "\n        ", "\n    "
    )
    graph = parse_post_grad_graph(
        'class GraphModule(torch.nn.Module):\n    def forward(self, arg0_1: "f32[4]"):\n'
        '        add: "f32[4]" = torch.ops.aten.add.Tensor(arg0_1, 1)\n'
        "        cond = torch.ops.higher_order.cond(add, true_graph_0, false_graph_0, (add,))\n"
        "        return (cond,)\n"
    )
    mapping = {"cppCodeToPost": {"k_add_0:1": ["add"], "k_relu_1:2": ["cond"]}}
    cov = coverage.judge(code, graph, mapping)
    assert (cov.counts.call_sites, cov.counts.linked_call_sites) == (2, 1)
    assert [v for v in cov.violations if v.rule == "call-sites"] == []
    assert any("k_relu_1:2: called in true_graph_0" in hint for hint in cov.hints)
