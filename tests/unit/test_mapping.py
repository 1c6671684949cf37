"""The pure builder: records + relation -> upstream-format documents."""

from __future__ import annotations

import msgspec
import pytest

from spyre_provenance.links import mapping
from spyre_provenance.model.records import (
    SHOWN_UPSTREAM_DIFFERENCES,
    DebugHandle,
    KernelRecord,
    NodeMappingsV2,
    OpSpecRecord,
    UpstreamComparison,
    UpstreamLink,
)


def source(name, graph_id, *parents):
    return {"name": name, "graph_id": graph_id, "from_node": list(parents)}


PRE = 111


def test_relation_follows_from_node_chains_to_the_pre_grad_graph_only():
    provenance = {
        "addmm": [source("addmm", 222, source("linear", PRE))],
        "relu": [source("relu", PRE)],
        "mul": [],  # a node with no history links to nothing
    }
    pre_to_post, post_to_pre = mapping.pre_post_relation(provenance, PRE)
    assert pre_to_post == {"linear": ["addmm"], "relu": ["relu"]}
    assert post_to_pre == {"addmm": ["linear"], "relu": ["relu"]}


def test_relation_is_empty_without_a_pre_grad_graph():
    assert mapping.pre_post_relation({"relu": [source("relu", PRE)]}, None) == ({}, {})


def test_relation_walks_later_siblings_first_like_upstream():
    provenance = {"add": [source("x", 9, source("a", PRE), source("b", PRE))]}
    _, post_to_pre = mapping.pre_post_relation(provenance, PRE)
    assert post_to_pre == {"add": ["b", "a"]}


def test_kernels_keyed_by_call_site_in_handle_order_without_duplicates():
    records = [
        KernelRecord("cpp_fused_relu_0", 2, ["relu", "relu"]),
        KernelRecord("extern_kernels.addmm", 1, ["addmm"], is_extern=True),
        KernelRecord("cpp_fused_relu_0", 4, ["relu_1"]),
    ]
    doc = mapping.build_node_mappings(records, {}, {})
    assert list(doc.cppCodeToPost) == ["extern_kernels.addmm:1", "cpp_fused_relu_0:2", "cpp_fused_relu_0:4"]
    assert doc.cppCodeToPost["cpp_fused_relu_0:2"] == ["relu"]
    assert doc.postToCppCode == {
        "addmm": ["extern_kernels.addmm:1"],
        "relu": ["cpp_fused_relu_0:2"],
        "relu_1": ["cpp_fused_relu_0:4"],
    }


def test_bytes_follow_upstream_key_order_and_separators():
    doc = mapping.build_node_mappings([KernelRecord("k", 1, ["relu"])], {"r": ["relu"]}, {"relu": ["r"]})
    assert mapping.to_json_bytes(doc) == (
        b'{"preToPost": {"r": ["relu"]}, "postToPre": {"relu": ["r"]}, '
        b'"cppCodeToPost": {"k:1": ["relu"]}, "postToCppCode": {"relu": ["k:1"]}, "version": 2.0}'
    )


def handle(hid, chain, *children, aten=None):
    return DebugHandle(id=hid, aten_op=aten, ir_chain=tuple(chain), fused_from=tuple(children))


@pytest.fixture
def fused_record():
    mm = handle(1, ["mm", "buf0"], aten="aten.mm")
    add = handle(2, ["add", "buf1"], aten="aten.addmm")
    fused = handle(3, ["add", "relu", "buf2"], handle(4, ["add", "buf2"]), handle(5, ["relu", "buf2"]))
    specs = [
        OpSpecRecord("matmul", True, [8, 256, 128], "buf0", mm),
        OpSpecRecord("add", False, [8, 256], "buf1", add),
        OpSpecRecord("relu", False, [8, 256], "buf2", fused),
    ]
    return KernelRecord("sdsc_fused_addmm_relu_0", 1, ["mm", "add", "relu"], opspecs=specs)


def test_handles_drive_the_nodes_and_buffers_are_not_nodes(fused_record):
    nodes = mapping.kernel_nodes(fused_record)
    assert nodes.nodes == ["mm", "add", "relu"]
    assert nodes.agrees and nodes.handleless_opspecs == 0


def test_disagreement_between_handles_and_origins_is_reported(fused_record):
    fused_record.post_grad_nodes = ["mm", "add", "relu", "clone"]
    nodes = mapping.kernel_nodes(fused_record)
    assert nodes.only_in_origins == ["clone"] and not nodes.agrees
    assert "clone" not in nodes.nodes  # handles drive; the summary counts the disagreement


def test_handleless_opspec_falls_back_to_origins(fused_record):
    specs = list(fused_record.opspecs)
    specs[2] = OpSpecRecord("relu", False, [8, 256], "buf2", None)
    fused_record.opspecs = specs
    nodes = mapping.kernel_nodes(fused_record)
    assert nodes.handleless_opspecs == 1
    assert nodes.nodes == ["mm", "add", "relu"]


def test_opspec_artifact_flattens_fused_handles_into_id_references(fused_record):
    fused_record.provenance_key, fused_record.bundle_folder = (
        "vsancadvtjfcq6cv",
        "1a2b3c4d_sdsc_fused_addmm_relu_0_k3j_9x2q",
    )
    doc = mapping.build_opspec_artifact([fused_record])
    assert doc["version"] == 2
    assert doc["bundles"] == {
        "sdsc_fused_addmm_relu_0:1": {
            "provenance_key": "vsancadvtjfcq6cv",
            "folder": "1a2b3c4d_sdsc_fused_addmm_relu_0_k3j_9x2q",
        }
    }
    entries = doc["kernels"]["sdsc_fused_addmm_relu_0:1"]
    assert [e["debug_handle"] for e in entries] == ["1", "2", "3"]
    assert doc["handles"]["3"]["fused_from"] == ["4", "5"]
    assert set(doc["handles"]) == {"1", "2", "3", "4", "5"}


def test_no_opspec_artifact_for_backends_without_opspecs():
    assert mapping.build_opspec_artifact([KernelRecord("cpp_fused_relu_0", 1, ["relu"])]) is None


# --- links the hook infers where the origins leave tlparse nothing to highlight ---------------


def _graph():
    from spyre_provenance.model.post_grad_graph import GraphNode, PostGradGraph

    return PostGradGraph(
        [
            GraphNode("primals_1", "placeholder", line=False),
            GraphNode("primals_2", "placeholder", line=False),
            GraphNode("permute", "call", "aten.permute", ("primals_1",)),
            GraphNode("mm", "call", "aten.mm", ("primals_2", "permute")),
            GraphNode("full", "call", "aten.full"),
            GraphNode("scatter_add", "call", "aten.scatter_add", ("full", "mm")),
            GraphNode("unused", "call", "aten.full"),
        ],
        outputs=("scatter_add",),
    )


def test_a_weight_copy_is_linked_to_the_nodes_that_read_it():
    from spyre_provenance.model.records import Inferred

    records = [
        # the layout copy of primals_1: its only origin is the graph input
        KernelRecord("sdsc_fused_clone_0", 1, ["primals_1"], consumers=["mm", "scatter_add"]),
        KernelRecord("sdsc_fused_mm_1", 2, ["permute", "mm"]),
        KernelRecord("sdsc_fused_scatter_add_2", 3, ["scatter_add"]),
    ]
    links = mapping.infer_links(records, _graph())
    # mm reads the copy's input; scatter_add reads none of its nodes, so it is no consumer.
    # full, inlined into the scatter's kernel, is listed there; unused is dead code.
    assert links == [
        Inferred("mm", "sdsc_fused_clone_0:1", "consumer"),
        Inferred("full", "sdsc_fused_scatter_add_2:3", "inlined"),
    ]
    doc = mapping.build_node_mappings(records, {}, {}, links)
    assert doc.cppCodeToPost["sdsc_fused_clone_0:1"] == ["primals_1", "mm"]
    assert doc.postToCppCode["full"] == ["sdsc_fused_scatter_add_2:3"]


def test_nothing_is_inferred_where_a_kernel_has_a_line_already():
    records = [
        KernelRecord("k", 1, ["mm", "primals_1"], consumers=["scatter_add"]),
        KernelRecord("s", 2, ["full", "scatter_add"]),
    ]
    assert mapping.infer_links(records, _graph()) == []


def test_users_kernels_are_found_through_views():
    graph = _graph()
    assert mapping.kernels_of_users(graph, "primals_1", {"mm": ["k:2"]}) == ["k:2"]  # through permute
    assert mapping.kernels_of_users(graph, "unused", {"mm": ["k:2"]}) == []


# --- SuperDSC bundles served against this compile's OpSpecs -------------------------------------


def _spec(handle_id: int | None) -> OpSpecRecord:
    handle = None if handle_id is None else DebugHandle(id=handle_id)
    return OpSpecRecord("add", False, [8], "buf0", handle)


@pytest.mark.parametrize(
    "mine, served, expected",
    [
        ([1, 2], [{"id": "1"}, {"id": "2"}], (2, 0, 0)),  # fresh bundles
        ([1, 2], [{"id": "1"}, {"id": "7"}], (2, 1, 0)),  # one from an earlier compile
        ([1, None], [{"id": "1"}, {"id": "7"}], (2, 1, 0)),  # a handle where this OpSpec has none
        ([1, 2], [{"id": "1"}, None], (2, 0, 1)),  # the bundle lost its handle
        ([1, None], [{"id": "1"}, None], (2, 0, 0)),  # neither has one
        ([1, 2], [{"id": "1"}], (2, 0, 1)),  # an OpSpec without a bundle
        ([1], [{"id": "1"}, {"id": "3"}], (2, 1, 0)),  # a bundle without an OpSpec
    ],
)
def test_bundle_handles_are_checked_by_id_and_nothing_is_skipped(mine, served, expected):
    counts = mapping.check_bundle_handles([_spec(i) for i in mine], served)
    assert (counts.checked, counts.stale, counts.missing) == expected


# --- the mapping beside Inductor's own ---------------------------------------------------------

TORCH_OWN = {
    "preToPost": {"linear": ["mm", "add"], "relu": ["relu"]},
    "postToPre": {"mm": ["linear"], "add": ["linear"], "relu": ["relu"]},
    "cppCodeToPost": {"sdsc_fused_linear_relu_0:1": ["mm", "add", "relu"]},
    "postToCppCode": {"mm": ["sdsc_fused_linear_relu_0:1"], "add": ["sdsc_fused_linear_relu_0:1"]},
    "version": 2.0,
}


def _ours(**changes: dict[str, list[str]]) -> NodeMappingsV2:
    return msgspec.convert({**TORCH_OWN, **changes}, NodeMappingsV2)


def test_the_same_links_in_another_order_are_equal() -> None:
    reordered = _ours(cppCodeToPost={"sdsc_fused_linear_relu_0:1": ["relu", "add", "mm"]})
    compared = mapping.matches_upstream(reordered, TORCH_OWN)
    assert compared == UpstreamComparison(relation="equal", added=0, missing=0, differences=[])


def test_links_beyond_torch_s_extend_it() -> None:
    # the hook lists a graph-input copy's node under a kernel that reads it (an inferred link)
    more = _ours(cppCodeToPost={"sdsc_fused_linear_relu_0:1": ["mm", "add", "relu", "permute"]})
    assert mapping.matches_upstream(more, TORCH_OWN) == UpstreamComparison(relation="extends", added=1)


def test_a_link_of_torch_s_not_ours_is_a_difference() -> None:
    fewer = _ours(
        preToPost={"linear": ["mm"], "relu": ["relu"]}, cppCodeToPost={"sdsc_fused_linear_relu_0:2": ["mm", "relu"]}
    )
    compared = mapping.matches_upstream(fewer, TORCH_OWN)
    assert compared is not None
    assert (compared.relation, compared.added, compared.missing) == ("differs", 2, 4)
    assert compared.differences == [
        UpstreamLink("preToPost", "linear", "add"),
        UpstreamLink("cppCodeToPost", "sdsc_fused_linear_relu_0:1", "add"),
        UpstreamLink("cppCodeToPost", "sdsc_fused_linear_relu_0:1", "mm"),
        UpstreamLink("cppCodeToPost", "sdsc_fused_linear_relu_0:1", "relu"),
    ]


def test_differences_listed_are_bounded_and_the_rest_counted() -> None:
    many = {f"k_{i}:{i + 1}": ["mm"] for i in range(SHOWN_UPSTREAM_DIFFERENCES + 5)}
    compared = mapping.matches_upstream(_ours(cppCodeToPost={}), {**TORCH_OWN, "cppCodeToPost": many})
    assert compared is not None and compared.relation == "differs"
    assert (compared.missing, len(compared.differences)) == (SHOWN_UPSTREAM_DIFFERENCES + 5, SHOWN_UPSTREAM_DIFFERENCES)


@pytest.mark.parametrize("upstream", [{}, {"version": 2.0}, {"cppCodeToPost": {}, "version": 2.0}])
def test_nothing_to_compare_with(upstream: dict) -> None:
    assert mapping.matches_upstream(_ours(), upstream) is None


def test_subgraph_relation_links_nodes_traced_from_a_subgraph_to_the_op_holding_it():
    """A checkpointed block's post-grad nodes reach only its subgraph's nodes (another
    graph id than the pre-grad graph's): they link to the top-level op holding it, nested
    subgraphs included; a subgraph held twice (invoke_subgraph) links neither: which call
    a node came from is not in its chain."""
    provenance = {
        "mm": [{"name": "linear", "graph_id": 7, "from_node": []}],
        "add": [{"name": "x", "graph_id": 1, "from_node": [{"name": "add", "graph_id": 8, "from_node": []}]}],
        "head": [{"name": "linear", "graph_id": 1, "from_node": []}],
        "sub": [{"name": "sub", "graph_id": 9, "from_node": []}],
    }
    holders = {7: ["tag_activation_checkpoint"], 8: ["cond"], 9: ["invoke_subgraph", "invoke_subgraph_1"]}
    assert mapping.subgraph_relation(provenance, holders) == {
        "mm": ["tag_activation_checkpoint"],
        "add": ["cond"],
    }
