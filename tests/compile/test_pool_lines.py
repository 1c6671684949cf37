"""HBM pool lines: ``_pool_<kernel> = ...`` between a kernel's handle comment and its call.

tlparse highlights the first line after the comment that names the kernel, so an
unmoved comment lights up the allocation. The backends move the comment to the line
before the call (``backends.base.move_comment_to_call``); ``call_sites`` and the coverage
judge tell an allocation from a call, and say so when tlparse would highlight one.
"""

from __future__ import annotations

import pytest

from spyre_provenance import coverage
from spyre_provenance.backends.base import move_comment_to_call
from spyre_provenance.logs import wrapper_code
from spyre_provenance.logs.graphs import read_log_graphs
from spyre_provenance.logs.post_grad import parse_post_grad_graph

# torch-spyre's shape: comment, pool allocation, ``.run(_pool_..., ...)``
SPYRE_WRAPPER = """
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


def _moved(code: str) -> str:
    lines = code.splitlines()
    comment = next(i for i, line in enumerate(lines) if "[Provenance debug handles]" in line)
    assert move_comment_to_call(lines, "sdsc_fused_sum_0", comment + 1)
    return "\n".join(lines) + "\n"


def test_the_call_is_the_run_line_not_the_allocation():
    (site,) = wrapper_code.call_sites(SPYRE_WRAPPER)
    lines = SPYRE_WRAPPER.splitlines()
    assert lines[site.line - 1].lstrip().startswith("sdsc_fused_sum_0.run(")
    assert site.key == "sdsc_fused_sum_0:1" and site.handle_line == site.line - 2


def test_an_unmoved_comment_is_a_violation_that_names_the_allocation():
    verdict = coverage.judge(SPYRE_WRAPPER, parse_post_grad_graph(GRAPH), MAPPING)
    (violation,) = verdict.violations
    assert violation.rule == "call-sites"
    assert "tlparse highlights the pool allocation at line 8, not the call at wrapper line 9" in violation.message
    assert verdict.counts.linked_call_sites == 0


def test_a_moved_comment_links_the_call():
    code = _moved(SPYRE_WRAPPER)
    lines = code.splitlines()
    assert lines[6].lstrip().startswith("_pool_sdsc_fused_sum_0 =") and "Provenance" in lines[7]
    assert code.replace(lines[7] + "\n", "") == SPYRE_WRAPPER.replace(lines[7] + "\n", "")  # nothing else moved
    verdict = coverage.judge(code, parse_post_grad_graph(GRAPH), MAPPING)
    assert verdict.violations == [] and verdict.counts.linked_call_sites == 1
    assert wrapper_code.TlparseLines(code).line("sdsc_fused_sum_0:1") == 9


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


class Call:
    """Inductor's KernelCallLine as far as the move cares: a line object naming its kernel."""

    def __init__(self, kernel_name: str) -> None:
        self.kernel_name = kernel_name


def test_move_handles_line_objects_and_leaves_other_shapes_alone():
    call = Call("k")
    lines = ["x = 1", "# [Provenance debug handles] k:3", "_pool_k = alloc()", call]
    assert move_comment_to_call(lines, "k", 2)
    assert lines == ["x = 1", "_pool_k = alloc()", "# [Provenance debug handles] k:3", call]
    assert not move_comment_to_call(lines, "k", 3)  # already before its call
    other = ["# [Provenance debug handles] k:3", "_pool_k = alloc()", "profile_guard()", Call("k")]
    assert not move_comment_to_call(list(other), "k", 1)  # something else in between: untouched
    assert not move_comment_to_call(["_pool_k = alloc()", Call("k")], "k", 1)  # no comment


@pytest.mark.compile
def test_reference_kernels_with_scratch_get_pool_lines_and_keep_the_page_right(compile_case):
    """The reference backend gives reductions and matmuls a pool; every comment sits right
    before its call, and the judge finds every call linked."""
    case = compile_case("residual")
    assert case.returncode == 0, case.stdout + case.stderr[-3000:]
    (graph,) = read_log_graphs(case.log)
    lines = graph.output_code.splitlines()
    pooled = {
        wrapper_code._POOL_ALLOCATION.match(line)["name"] for line in lines if wrapper_code.is_pool_allocation(line)
    }
    scratch = {
        key.rpartition(":")[0]
        for key, specs in graph.opspec_handles["kernels"].items()
        if any(s["is_reduction"] or s["op"] == "matmul" for s in specs)
    }
    assert pooled and pooled == scratch
    for site in wrapper_code.call_sites(graph.output_code):
        assert site.handle_line == site.line - 1, site
        if site.name in pooled:
            assert wrapper_code.is_pool_allocation(lines[site.line - 3], site.name), site
    verdict = coverage.judge_logged(graph)
    assert verdict.violations == [] and verdict.counts.linked_call_sites == verdict.counts.call_sites
