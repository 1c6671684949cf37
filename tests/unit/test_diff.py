"""``golden.differences`` and ``spyre-provenance diff``: one readable line per change (no compile)."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import pytest

from helpers.where import GOLDEN  # tests/ is on sys.path
from spyre_provenance import golden
from spyre_provenance.model.names import KERNEL_STACK_TRACES, NODE_MAPPINGS, OPSPEC_DEBUG_HANDLES

GRAPH = "graph_00_0-0_inference"
NM = f"{GRAPH}/{NODE_MAPPINGS}.json"
ST = f"{GRAPH}/{KERNEL_STACK_TRACES}.json"
OP = f"{GRAPH}/{OPSPEC_DEBUG_HANDLES}.json"


def mappings(cpp: dict[str, list[str]], pre: dict[str, list[str]]) -> dict:
    inverse = lambda m: {v: [k for k in m if v in m[k]] for vs in m.values() for v in vs}  # noqa: E731
    return {
        "preToPost": pre,
        "postToPre": inverse(pre),
        "cppCodeToPost": cpp,
        "postToCppCode": inverse(cpp),
        "version": 2.0,
    }


BASE_CPP = {"k_fused_0:1": ["mm", "permute", "add", "relu"], "k_1:2": ["mm_1", "add_1"]}
BASE_PRE = {"linear": ["permute", "mm", "add"], "h": ["relu"], "linear_1": ["mm_1", "add_1"]}


def changes(cpp_b=None, pre_b=None, cpp_a=BASE_CPP, pre_a=BASE_PRE) -> list[str]:
    a = golden.Provenance("A", {"g": {NODE_MAPPINGS: mappings(cpp_a, pre_a)}})
    b = golden.Provenance("B", {"g": {NODE_MAPPINGS: mappings(cpp_b or cpp_a, pre_b or pre_a)}})
    return [c.text for c in golden.differences(a, b, golden.Roots()).changes]


def test_equal_is_no_change():
    assert changes() == []


def test_kernel_renamed_with_the_same_nodes():
    cpp = {"k_fused_0:1": BASE_CPP["k_fused_0:1"], "k_addmm_1:2": ["mm_1", "add_1"]}
    assert changes(cpp) == ["kernel renamed: k_1:2 -> k_addmm_1:2 (same post-grad nodes)"]


def test_kernel_added_and_removed():
    cpp = {"k_fused_0:1": BASE_CPP["k_fused_0:1"], "k_mm_1:3": ["mm_1"], "k_add_2:4": ["add_1"]}
    assert changes(cpp) == [
        "kernel removed: k_1:2 (was [mm_1, add_1])",
        "kernel added: k_mm_1:3 -> [mm_1]",
        "kernel added: k_add_2:4 -> [add_1]",
    ]


def test_kernel_split_keeps_its_call_site():
    """Same handle N, nodes in common: the call site was renamed and lost nodes."""
    cpp = {"k_fused_0:1": BASE_CPP["k_fused_0:1"], "k_mm_1:2": ["mm_1"], "k_add_2:3": ["add_1"]}
    assert changes(cpp) == [
        "kernel renamed: k_1:2 -> k_mm_1:2",
        "kernel added: k_add_2:3 -> [add_1]",
        "kernel k_mm_1:2: post-grad nodes lost: add_1",
    ]


def test_nodes_gained_lost_replaced_reordered_per_kernel():
    assert changes({**BASE_CPP, "k_1:2": ["mm_1"]}) == ["kernel k_1:2: post-grad nodes lost: add_1"]
    assert changes({**BASE_CPP, "k_1:2": ["mm_1", "add_1", "relu"]}) == ["kernel k_1:2: post-grad nodes gained: relu"]
    assert changes({**BASE_CPP, "k_1:2": ["add_1", "mm_1"]}) == [
        "kernel k_1:2: post-grad node order [mm_1, add_1] -> [add_1, mm_1]"
    ]


def test_one_node_name_edited_in_one_place_is_one_line():
    a = mappings(BASE_CPP, BASE_PRE)
    edited = copy.deepcopy(a)
    edited["cppCodeToPost"]["k_fused_0:1"][3] = "relux"  # only there: the file is now inconsistent
    got = golden.differences(
        golden.Provenance("golden", {"g": {NODE_MAPPINGS: edited}}), golden.Provenance("now", {"g": {NODE_MAPPINGS: a}})
    )
    assert [str(c) for c in got.changes] == ["g: kernel k_fused_0:1: post-grad node relux -> relu"]


def test_a_node_renamed_everywhere_is_one_line():
    def rename(m):
        return {
            k.replace("relu", "relu_1") if k == "relu" else k: [
                v.replace("relu", "relu_1") if v == "relu" else v for v in vs
            ]
            for k, vs in m.items()
        }

    assert changes(rename(BASE_CPP), rename(BASE_PRE)) == ["post-grad node renamed: relu -> relu_1 (everywhere)"]
    pre = {"linear": BASE_PRE["linear"], "relu": ["relu"], "linear_1": BASE_PRE["linear_1"]}
    assert changes(pre_b=pre) == ["pre-grad node renamed: h -> relu (everywhere)"]


def test_pre_post_links():
    pre = {**BASE_PRE, "linear": ["permute", "mm"]}
    assert changes(pre_b=pre) == ["pre-grad node linear: linked post-grad nodes lost: add"]
    pre = {"linear": BASE_PRE["linear"], "h": ["relu"]}
    assert changes(pre_b=pre) == ["pre-grad node unlinked: linear_1 (was -> [mm_1, add_1])"]


def test_an_inverse_map_that_disagrees_is_reported():
    a = mappings(BASE_CPP, BASE_PRE)
    b = copy.deepcopy(a)
    b["postToCppCode"]["relu"] = ["k_1:2"]
    got = golden.differences(
        golden.Provenance("A", {"g": {NODE_MAPPINGS: a}}), golden.Provenance("B", {"g": {NODE_MAPPINGS: b}})
    )
    assert [c.text for c in got.changes] == ["postToCppCode[relu]: kernel k_fused_0:1 -> k_1:2"]


def test_version_and_unknown_keys_never_pass_silently():
    a = mappings(BASE_CPP, BASE_PRE)
    b = {**a, "version": 1.0, "extra": 1}
    got = golden.differences(
        golden.Provenance("A", {"g": {NODE_MAPPINGS: a}}), golden.Provenance("B", {"g": {NODE_MAPPINGS: b}})
    )
    assert [c.text for c in got.changes] == ["version 2.0 -> 1.0", 'node mappings["extra"] added: 1']


# --- on the committed golden files (stack traces, OpSpec handles, whole cases) -----------------


@pytest.fixture
def case(tmp_path) -> Path:
    """A copy of golden/mlp to edit."""
    return Path(shutil.copytree(GOLDEN / "mlp", tmp_path / "mlp"))


def edit(folder: Path, rel: str, change) -> None:
    path = folder / rel
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc, indent=1))


def diff_lines(a: Path, b: Path) -> list[str]:
    return [c.text for c in golden.differences(golden.load(a), golden.load(b)).changes]


def test_stack_trace_moved(case):
    edit(case, ST, lambda d: d.update({k: [t.replace("line 39", "line 41") for t in v] for k, v in d.items()}))
    assert diff_lines(GOLDEN / "mlp", case) == [
        "stack traces of sdsc_fused_linear_relu_0:1: lost examples.py:39 `return self.fc2(h)`;"
        " gained examples.py:41 `return self.fc2(h)`"
    ]


def _spec(doc: dict, kernel: int, index: int) -> dict:
    return list(doc["kernels"].values())[kernel][index]


def test_opspec_handle_changes(case):
    def change(doc):
        _spec(doc, 0, 2)["debug_handle"] = None
        doc["handles"][_spec(doc, 0, 4)["debug_handle"]]["aten_op"] = "aten.add.Tensor"
        _spec(doc, 0, 3)["op"] = "bmm"

    edit(case, OP, change)
    assert diff_lines(GOLDEN / "mlp", case) == [
        "OpSpec sdsc_fused_linear_relu_0:1 buf2 (relufwd): lost its debug handle",
        'OpSpec sdsc_fused_linear_relu_0:1 buf3 (bmm): op "batchmatmul" -> "bmm"',
        "OpSpec sdsc_fused_linear_relu_0:1 buf4 (add): handle aten_op aten.linear.default -> aten.add.Tensor",
    ]


def test_fused_constituent_dropped(case):
    def change(doc):
        doc["handles"][_spec(doc, 0, 0)["debug_handle"]]["fused_from"].pop()

    edit(case, OP, change)
    assert diff_lines(GOLDEN / "mlp", case) == [
        "OpSpec sdsc_fused_linear_relu_0:1 buf0 (batchmatmul): handle fused_from [mm, permute] -> [mm]"
    ]


def test_a_kernel_renamed_in_every_artifact_is_one_line(case):
    for rel in (NM, ST, OP):
        path = case / rel
        path.write_text(path.read_text().replace("sdsc_fused_linear_relu_0", "sdsc_fused_addmm_relu_0"))
    assert diff_lines(GOLDEN / "mlp", case) == [
        "kernel renamed: sdsc_fused_linear_relu_0:1 -> sdsc_fused_addmm_relu_0:1 (same post-grad nodes)"
    ]


def test_graphs_added_and_removed_and_artifacts_missing(case):
    shutil.copytree(case / GRAPH, case / "graph_01_1-0_inference")
    (case / OP).unlink()
    assert diff_lines(GOLDEN / "mlp", case) == [
        "OpSpec handles only in A",
        "graph only in B",
    ]


def test_different_cases_explain_backend_changes():
    lines = diff_lines(GOLDEN / "mlp", GOLDEN / "mlp_inductor")
    assert "kernel added: extern_kernels.addmm:1 -> [addmm]" in lines
    assert "kernel removed: sdsc_fused_linear_relu_0:1 (was [mm, permute, add, relu, mm_1, permute_1, add_1])" in lines
    assert "pre-grad node linear: linked post-grad nodes lost: mm, add; gained: addmm" in lines


def test_manifests_give_hints_not_changes(case):
    edit(case, golden.MANIFEST, lambda d: d.update(torch="2.12.0", dtype="float16"))
    got = golden.differences(golden.load(GOLDEN / "mlp"), golden.load(case), labels=("golden", "copy"))
    assert got.equal
    assert got.hints[0].startswith(f"golden was made with torch {golden.torch_version()}, copy with torch 2.12.0")
    assert got.hints[1] == 'golden has dtype "float32", copy has "float16"'


# --- the command --------------------------------------------------------------------------------


def test_diff_equal_is_exit_0(run_cli):
    code, out, err = run_cli("diff", GOLDEN / "mlp", GOLDEN / "mlp_fp16")
    assert code == 0 and out.startswith("same provenance") and not err
    assert "hint: " in out and '"float16"' in out


def test_diff_of_a_compile_out_a_log_and_files(run_cli, case):
    edit(case, NM, lambda d: d["cppCodeToPost"]["sdsc_fused_linear_relu_0:1"].__setitem__(3, "relux"))
    code, out, err = run_cli("diff", case, GOLDEN / "mlp")
    assert code == 1, err
    assert out.splitlines() == [
        f"1 change(s) from {case} to {GOLDEN / 'mlp'}:",
        f"  {GRAPH}: kernel sdsc_fused_linear_relu_0:1: post-grad node relux -> relu",
    ]
    code, out, _ = run_cli("diff", case / NM, GOLDEN / "mlp" / NM)
    assert code == 1 and out.splitlines()[1] == "  kernel sdsc_fused_linear_relu_0:1: post-grad node relux -> relu"


@pytest.mark.parametrize(
    ("a", "b", "message"),
    [
        ("missing", "mlp", "no such file or folder"),
        ("bad.json", "bad.json", "not valid JSON"),
        ("list.json", "list.json", "top level is a JSON array"),
        ("mlp/manifest.json", "mlp/manifest.json", "not a provenance artifact"),
        (NM, OP, "nothing to compare"),
        ("mlp", OP, "compare a file with a file"),
        ("empty", "mlp", "no provenance artifacts"),
        ("wrongtype", "mlp", "not an object of string lists"),
    ],
)
def test_unusable_input_is_one_line_and_exit_2(run_cli, tmp_path, a, b, message):
    shutil.copytree(GOLDEN / "mlp", tmp_path / "mlp")
    (tmp_path / "bad.json").write_text("{")
    (tmp_path / "list.json").write_text("[]")
    (tmp_path / "empty").mkdir()
    (tmp_path / "wrongtype").mkdir()
    (tmp_path / "wrongtype" / f"{NODE_MAPPINGS}.json").write_text('{"cppCodeToPost": [], "version": 2.0}')
    resolve = lambda p: tmp_path / p if not p.startswith(GRAPH) else tmp_path / "mlp" / p  # noqa: E731
    code, out, err = run_cli("diff", resolve(a), resolve(b))
    assert code == 2 and not out
    assert len(err.strip().splitlines()) == 1 and message in err and "Traceback" not in err
