"""Reading generated wrapper code the way tlparse does."""

from __future__ import annotations

from spyre_provenance import coverage, wrapper_code

WRAPPER = '''
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
'''

GRAPH = '''class GraphModule(torch.nn.Module):
    def forward(self, primals_1: "f32[256, 128][128, 1]cpu"):
        permute: "f32[128, 256][1, 128]cpu" = torch.ops.aten.permute.default(primals_1, [1, 0]);  primals_1 = None
        addmm: "f32[8, 256][256, 1]cpu" = torch.ops.aten.addmm.default(primals_2, primals_3, permute)
        relu: "f32[8, 256][256, 1]cpu" = torch.ops.aten.relu.default(addmm);  addmm = None
        return (relu,)
'''


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


def test_post_grad_nodes_and_views_by_rule():
    nodes = coverage.post_grad_nodes(GRAPH)
    assert [(n.name, n.op, n.emits_kernel) for n in nodes] == [
        ("permute", "aten.permute", False),
        ("addmm", "aten.addmm", True),
        ("relu", "aten.relu", True),
    ]


def test_coverage_counts_unmapped_calls_and_unreached_nodes():
    mapping = {
        "cppCodeToPost": {"extern_kernels.addmm:1": ["addmm"], "cpp_fused_relu_0:2": ["relu"]},
        "postToCppCode": {"addmm": ["extern_kernels.addmm:1"], "relu": ["cpp_fused_relu_0:2"]},
    }
    cov = coverage.measure(WRAPPER, mapping, GRAPH, {"cpp_fused_relu_0:2": ['File "m.py", line 3']})
    assert (cov.call_sites, cov.mapped_call_sites) == (3, 2)
    assert cov.unmapped_call_sites == ["cpp_fused_relu_10"]
    assert (cov.compute_nodes, cov.reached_compute_nodes, cov.no_kernel_nodes) == (2, 2, 1)
    assert cov.kernels_with_source == 1 and not cov.complete


def test_coverage_reports_a_key_no_comment_announces():
    mapping = {"cppCodeToPost": {"cpp_fused_relu_0:7": ["relu"]}, "postToCppCode": {"relu": ["cpp_fused_relu_0:7"]}}
    cov = coverage.measure(WRAPPER, mapping, GRAPH)
    assert cov.keys_without_call == ["cpp_fused_relu_0:7"]
    assert cov.unreached_nodes == ["addmm"]
