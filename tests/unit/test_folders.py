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


@pytest.mark.parametrize(
    "args, read",
    [
        ((0, "0/0", "inference"), (None, "0/0")),
        ((3, "1/0_1", "backward", "mlp"), ("mlp", "1/0_1")),
        ((1, "0/2", None, "tiny.py:make"), ("tiny.py-make", "0/2")),
    ],
)
def test_a_graph_folder_name_reads_back_its_label_and_compile_id(args, read):
    assert folders.label_and_compile_id(folders.graph_folder(*args)) == read


def test_other_names_are_no_graph_folders():
    assert folders.label_and_compile_id("graph_") is None
    assert folders.label_and_compile_id("trace") is None


def test_non_ascii_is_transliterated_one_way_everywhere():
    assert folders.transliterate("modèle_ß") == "modele_ss"
    assert folders.model_label("modèle.py") == "modele.py"
    assert folders.model_label("模型") == "model"  # no ASCII form: the fallback


def test_an_unlabeled_session_numbers_after_the_folders_already_there():
    """A second session without a label (after torch._dynamo.reset(), compile ids from 0/0
    again) starts after the unlabeled folders of the first, never over them."""
    names = ["graph_00_0-0_forward", "graph_01_0-0_backward", "graph_mlp_07_0-0_inference", "trace"]
    assert folders.next_unlabeled_order(names) == 2
    assert folders.next_unlabeled_order(["graph_mlp_00_0-0_inference"]) == 0
    assert folders.graph_folder(2, "0/0", "forward") == "graph_02_0-0_forward"
