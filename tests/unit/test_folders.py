"""Graph-folder names: the one rule ``emit`` writes by and ``golden`` reads by."""

from __future__ import annotations

import pytest

from spyre_provenance.model import folders


@pytest.mark.parametrize(
    "args, name",
    [
        ((0, "0/0", "inference"), "graph_00_0-0_inference"),
        ((3, "[1/0_1]", "backward", "mlp"), "graph_mlp_03_1-0_1_backward"),
        ((1, "0/0", None, "tiny.py:make"), "graph_tiny.py-make_01_0-0"),
        ((0, "", None), "graph_00_none"),
    ],
)
def test_graph_folder(args, name):
    assert folders.graph_folder(*args) == name


def test_a_label_is_recognised_and_stripped():
    labeled = folders.graph_folder(0, "0/0", "forward", "mlp")
    assert folders.is_graph_folder_of(labeled, "mlp") and not folders.is_graph_folder_of(labeled, None)
    assert folders.without_label(labeled) == "graph_00_0-0_forward"
    assert folders.is_graph_folder_of("graph_00_0-0_forward", None)
    # an all-digit model name never reads as the compile order
    assert folders.model_label("123") == "model-123"
    assert folders.without_label(folders.graph_folder(0, "0/0", "forward", "123")) == "graph_00_0-0_forward"
