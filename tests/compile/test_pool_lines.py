"""HBM pool lines: what torch-spyre main writes between a kernel's handle comment and its call.

main 9a6b71e writes none: the comment, then ``<kernel>.run(...)`` (REFERENCE.md 4.1); the
reference backend writes the same. From 2026-08-12 to 08-19 main wrote a pool allocation
``_pool_<kernel> = spyre_empty_with_layout(...)`` between the two (#3650, removed by #3707):
tlparse highlights the first line after the comment that names the kernel, so on such a
log it lights up the allocation. ``call_sites`` and the coverage judge tell an allocation
from a call and say so when reading such a log.
"""

from __future__ import annotations

import pytest

from spyre_provenance.logs import wrapper_code
from spyre_provenance.logs.graphs import read_log_graphs
from spyre_provenance.logs.post_grad import parse_post_grad_graph
from spyre_provenance.validate import coverage

# torch-spyre main between #3650 and #3707: comment, pool allocation, ``.run(_pool_..., ...)``
POOLED_WRAPPER = """
sdsc_fused_sum_0 = async_compile.spyre_kernel('sdsc_fused_sum_0')

def call(args):
    arg0_1, = args
    buf0 = empty_strided_spyre((8, ), (1, ), torch.float16)
    # [Provenance debug handles] sdsc_fused_sum_0:1
    _pool_sdsc_fused_sum_0 = spyre_empty_with_layout((4096, ), torch.uint8, "/work/_pool_x/m.py")
    sdsc_fused_sum_0.run(_pool_sdsc_fused_sum_0, arg0_1, buf0)
    return (buf0, )
"""
GRAPH = """class GraphModule(torch.nn.Module):
    def forward(self, arg0_1: "f16[8, 16][16, 1]spyre"):
        sum_1: "f16[8][1]spyre" = torch.ops.aten.sum.dim_IntList(arg0_1, [1]);  arg0_1 = None
        return (sum_1,)
"""
MAPPING = {"cppCodeToPost": {"sdsc_fused_sum_0:1": ["sum_1"]}, "postToCppCode": {"sum_1": ["sdsc_fused_sum_0:1"]}}


def test_the_call_is_the_run_line_not_the_allocation():
    (site,) = wrapper_code.call_sites(POOLED_WRAPPER)
    lines = POOLED_WRAPPER.splitlines()
    assert lines[site.line - 1].lstrip().startswith("sdsc_fused_sum_0.run(")
    assert site.key == "sdsc_fused_sum_0:1" and site.handle_line == site.line - 2


def test_a_pool_line_after_the_comment_is_a_violation_that_names_the_allocation():
    verdict = coverage.judge(POOLED_WRAPPER, parse_post_grad_graph(GRAPH), MAPPING)
    (violation,) = verdict.violations
    assert violation.rule == "call-sites"
    assert "tlparse highlights the pool allocation at line 8, not the call at wrapper line 9" in violation.message
    assert verdict.counts.linked_call_sites == 0


def test_main_s_shape_links_the_call():
    # main 9a6b71e: no pool line, the comment right before the call
    lines = POOLED_WRAPPER.splitlines()
    code = "\n".join(line for line in lines if not wrapper_code.is_pool_allocation(line)) + "\n"
    verdict = coverage.judge(code, parse_post_grad_graph(GRAPH), MAPPING)
    assert verdict.violations == [] and verdict.counts.linked_call_sites == 1
    assert wrapper_code.TlparseLines(code).line("sdsc_fused_sum_0:1") == 8


@pytest.mark.parametrize(
    "line, name, expected",
    [
        ("    _pool_sdsc_x = spyre_empty_with_layout((64,))", "sdsc_x", True),
        ("    _pool_sdsc_x = spyre_empty_with_layout((64,))", "sdsc_y", False),
        ("    _pool_sdsc_x == other", None, False),  # a comparison, not an assignment
        ("    # source: /home/u/_pool_data/x.py:3", None, False),  # a SourceLoc path in a comment
        ('    print("_pool_sdsc_x = 1")', None, False),  # in a string
        ("    sdsc_x.run(_pool_sdsc_x, buf0)", None, False),  # the call passes the pool
    ],
)
def test_what_counts_as_a_pool_allocation(line, name, expected):
    assert wrapper_code.is_pool_allocation(line, name) is expected


@pytest.mark.compile
def test_the_reference_backend_writes_main_s_calls_and_no_pool_line(compile_case):
    """As main 9a6b71e: every handle comment right before ``<kernel>.run(``, no allocation
    in between (reductions and matmuls included), every call linked on the page."""
    case = compile_case("residual")
    assert case.returncode == 0, case.stdout + case.stderr[-3000:]
    (graph,) = read_log_graphs(case.log)
    lines = graph.output_code.splitlines()
    assert not any(wrapper_code.is_pool_allocation(line) for line in lines)
    sites = wrapper_code.call_sites(graph.output_code)
    assert sites and any(s["is_reduction"] for specs in graph.opspec_handles["kernels"].values() for s in specs)
    for site in sites:
        assert site.handle_line == site.line - 1, site
        assert lines[site.line - 1].lstrip().startswith(f"{site.name}.run("), site
    verdict = coverage.judge_logged(graph)
    assert verdict.violations == [] and verdict.counts.linked_call_sites == verdict.counts.call_sites
