"""Coverage of one graph's mapping, measured on what tlparse reads (pure, no torch).

Coverage, not op counts: every kernel call site in the generated code is a mapping key and
vice versa, every post-grad compute node reaches a kernel, every kernel has a source line.
Nodes that emit no kernel (views, metadata ops) are recognised by rule, never by name.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import msgspec

from spyre_provenance import wrapper_code

# ``name: "f32[8, 256]..." = torch.ops.aten.relu.default(addmm);`` in a readable FX graph
_GRAPH_NODE = re.compile(
    r"^\s+(?P<name>[A-Za-z_]\w*)(?:\s*:\s*\"[^\"]*\")?\s*=\s*torch\.ops\.(?P<ns>\w+)\.(?P<op>\w+)\."
)

#: ATen ops that only re-describe memory (or say nothing of it): Inductor folds them into
#: the indexing of the kernels around them, so they never get a kernel of their own.
NO_KERNEL_OPS = frozenset(
    {
        "view", "_unsafe_view", "reshape", "permute", "t", "transpose", "expand",
        "squeeze", "unsqueeze", "as_strided", "slice", "select", "alias", "detach",
        "lift_fresh_copy", "_reshape_alias", "split", "split_with_sizes", "unbind",
        "sym_size", "sym_stride", "sym_numel", "sym_storage_offset",
    }
)


class PostGradNode(msgspec.Struct, frozen=True):
    name: str
    op: str  # "aten.relu"

    @property
    def emits_kernel(self) -> bool:
        namespace, _, op = self.op.partition(".")
        return not (namespace == "aten" and op in NO_KERNEL_OPS)


def post_grad_nodes(graph_text: str) -> list[PostGradNode]:
    """The call_function nodes of a readable post-grad graph, in graph order."""
    return [
        PostGradNode(m["name"], f"{m['ns']}.{m['op']}")
        for m in map(_GRAPH_NODE.match, graph_text.splitlines())
        if m
    ]


class GraphCoverage(msgspec.Struct):
    call_sites: int
    mapped_call_sites: int
    unmapped_call_sites: list[str]  # kernel names called without a mapped handle
    keys_without_call: list[str]  # mapping keys no handle comment announces
    compute_nodes: int
    reached_compute_nodes: int
    unreached_nodes: list[str]
    no_kernel_nodes: int
    kernels: int
    kernels_with_source: int

    @property
    def complete(self) -> bool:
        return (
            not self.unmapped_call_sites
            and not self.keys_without_call
            and not self.unreached_nodes
            and self.call_sites == self.mapped_call_sites
        )


def measure(
    output_code: str,
    node_mappings: Mapping[str, object],
    graph_text: str | None = None,
    stack_traces: Mapping[str, Sequence[str]] | None = None,
) -> GraphCoverage:
    """Coverage of ``node_mappings`` against the code and graph it describes."""
    cpp_to_post = dict(node_mappings.get("cppCodeToPost") or {})  # type: ignore[arg-type]
    post_to_cpp = dict(node_mappings.get("postToCppCode") or {})  # type: ignore[arg-type]
    sites = wrapper_code.call_sites(output_code)
    announced = {site.key for site in sites if site.key}
    mapped = [s for s in sites if s.key in cpp_to_post and cpp_to_post[s.key]]
    nodes = post_grad_nodes(graph_text) if graph_text else []
    compute = [n for n in nodes if n.emits_kernel]
    reached = [n for n in compute if post_to_cpp.get(n.name)]
    traces = stack_traces or {}
    return GraphCoverage(
        call_sites=len(sites),
        mapped_call_sites=len(mapped),
        unmapped_call_sites=[s.key or s.name for s in sites if s not in mapped],
        keys_without_call=[k for k in cpp_to_post if k not in announced],
        compute_nodes=len(compute),
        reached_compute_nodes=len(reached),
        unreached_nodes=[n.name for n in compute if n not in reached],
        no_kernel_nodes=len(nodes) - len(compute),
        kernels=len(cpp_to_post),
        kernels_with_source=sum(1 for k in cpp_to_post if any(t.strip() for t in traces.get(k, ()))),
    )
