"""Pairing two runs' graphs and kernels (``spyre_provenance.links.pairing``): the one rule behind
``diff``, ``golden check``, the audit's ``--against`` and the compile summary."""

from __future__ import annotations

from spyre_provenance.links.pairing import KernelPairs, pair_graphs, pair_kernels


def same(name: str) -> str:
    return name


def rank(name: str) -> str:
    return name.split("/", 1)[0] if "/" in name else ""


def test_same_names_pair_then_the_rest_by_position():
    a = ["graph_00_0-0_forward", "graph_01_0-0_backward", "graph_02_1-0_inference"]
    b = ["graph_00_0-0_forward", "graph_01_0-1_backward", "graph_02_1-0_inference", "graph_03_2-0_inference"]
    assert pair_graphs(a, b, same) == [
        ("graph_00_0-0_forward", "graph_00_0-0_forward"),
        ("graph_01_0-0_backward", "graph_01_0-1_backward"),  # the compile id moved
        ("graph_02_1-0_inference", "graph_02_1-0_inference"),
        (None, "graph_03_2-0_inference"),
    ]


def test_a_multi_rank_run_pairs_rank_by_rank():
    a = ["rank0/graph_00_0-0_inference", "rank1/graph_00_0-0_inference"]
    b = ["rank1/graph_00_0-1_inference", "rank0/graph_00_0-1_inference"]
    assert pair_graphs(a, b, same, group=rank) == [
        ("rank0/graph_00_0-0_inference", "rank0/graph_00_0-1_inference"),
        ("rank1/graph_00_0-0_inference", "rank1/graph_00_0-1_inference"),
    ]
    # without the group, position alone would pair rank 0 with rank 1
    assert pair_graphs(a, b, same)[0] == ("rank0/graph_00_0-0_inference", "rank1/graph_00_0-1_inference")


def test_repeated_names_pair_in_order_and_by_name_only_on_request():
    a = [("0/0", "fwd"), ("0/0", "bwd"), ("0/1", "fwd")]
    b = [("0/0", "log fwd"), ("0/0", "log bwd")]
    assert pair_graphs(a, b, lambda g: g[0], by_position=False) == [
        (("0/0", "fwd"), ("0/0", "log fwd")),
        (("0/0", "bwd"), ("0/0", "log bwd")),
        (("0/1", "fwd"), None),
    ]


def test_kernels_pair_by_nodes_then_name_then_handle_with_nodes_in_common():
    old = {"k_a:1": ["mm", "add"], "k_b:2": ["relu"], "k_c:3": ["sum"], "k_d:4": ["exp"], "k_e:5": ["neg"]}
    new = {
        "k_a:1": ["mm", "add"],  # the same key: the same kernel, no rename
        "k_renamed:7": ["relu"],  # the same nodes
        "k_c:9": ["sum_1"],  # the same name, renumbered
        "k_other:4": ["exp", "log"],  # the same N, a node in common
        "k_new:5": ["abs"],  # the same N, nothing in common: not the same kernel
    }
    assert pair_kernels(old, new) == KernelPairs(
        renamed={"k_b:2": "k_renamed:7", "k_c:3": "k_c:9", "k_d:4": "k_other:4"},
        removed=["k_e:5"],
        added=["k_new:5"],
    )


def test_a_kernel_with_no_nodes_is_no_rename_of_another_with_none():
    assert pair_kernels({"a:1": []}, {"b:2": []}) == KernelPairs(renamed={}, removed=["a:1"], added=["b:2"])
