"""SuperDSC bundles' ``debug_handle_`` in ``diff`` and ``golden``: read from ``sdsc/`` (or a
golden's ``superdsc_bundle_handles.json``), normalized like the OpSpec handles, one line per
change. Hand-made bundle folders, plus one real pair of compiles (the same model from two
files, its source lines moved)."""

from __future__ import annotations

import copy
import json
import re
import shutil
from pathlib import Path

import pytest
from test_bundle_cache import compile_with_cache

from helpers.where import GOLDEN  # tests/ is on sys.path
from spyre_provenance import golden
from spyre_provenance.model.folders import bundle_folder_name
from spyre_provenance.model.layout import Layout
from spyre_provenance.model.names import OPSPEC_DEBUG_HANDLES
from spyre_provenance.validate import paths as path_validation
from zoo.user_models import SOURCE

KERNEL = "sdsc_fused_addmm_0"


def handle(line: int = 3, file: str = "m.py", hid: str = "1", children: list | None = None) -> dict:
    """A handle as torch-spyre's ``DebugHandle.to_dict()`` writes it (children nested)."""
    return {
        "id": hid,
        "source": {"file": file, "start_line": line, "start_col": 0, "end_line": None, "end_col": None},
        "aten_op": "aten.addmm.default",
        "ir_chain": ["mm", "buf0"],
        "fused_from": children or [],
        "transform_history": [{"kind": "fusion", "pass_name": "inductor.lowering", "reason": None}],
    }


def kernel_folder(root: Path, kernel: str, label: str = "m-make") -> Path:
    """A kernel's bundle folder in ``root``'s ``sdsc/<label>/``, laid out and named as the
    reference backend's (``inductor-spyre/<uuid8>_<kernel>_<suffix>/``; named here from the
    kernel and label alone, so the two sides' names differ, as two machines' would)."""
    return Layout(root, label).bundle_folder(bundle_folder_name(kernel, label.encode()))


def bundle_folder(root: Path, handles: dict[str, dict | None], label: str = "m-make") -> Path:
    """A bundle per ``handles`` key ``<kernel>/sdsc_<i>.json``, in the kernel's folder
    (``kernel_folder``), each with a device spec around the handle (which the diff must ignore)."""
    for rel, h in handles.items():
        kernel, name = rel.split("/")
        path = kernel_folder(root, kernel, label) / name
        path.parent.mkdir(parents=True, exist_ok=True)
        body = {"debug_handle_": h, "opFunc_": "addmm", "numCoresUsed_": 1}
        path.write_text(json.dumps({f"{path.stem[5:]}_addmm": body}, indent=2, sort_keys=True))
    return root


def diff(tmp_path: Path, a: dict, b: dict) -> list[str]:
    pa = golden.load(bundle_folder(tmp_path / "a", a))
    pb = golden.load(bundle_folder(tmp_path / "b", b, label="other-make"))  # labels never count
    return [str(c) for c in golden.differences(pa, pb, golden.Roots(), labels=("A", "B")).changes]


B0, B1 = f"{KERNEL}/sdsc_0.json", f"{KERNEL}/sdsc_1.json"


def test_same_bundles_are_no_change(tmp_path):
    assert diff(tmp_path, {B0: handle(), B1: None}, {B0: handle(), B1: None}) == []


def test_a_moved_source_line_names_the_bundle_and_both_lines(tmp_path):
    assert diff(tmp_path, {B1: handle(3)}, {B1: handle(5)}) == [f"bundle {B1}: debug_handle_ source m.py:3 -> m.py:5"]


def test_a_moved_constituent_is_named(tmp_path):
    lines = diff(tmp_path, {B0: handle(children=[handle(3)])}, {B0: handle(children=[handle(4)])})
    assert lines == [f"bundle {B0}: debug_handle_ constituent mm+buf0 source m.py:3 -> m.py:4"]


def test_a_changed_id_only_is_no_change(tmp_path):
    """Ids are content hashes, recomputed from the normalized content on both sides."""
    assert diff(tmp_path, {B0: handle(hid="1")}, {B0: handle(hid="987654321")}) == []


def test_bundles_on_one_side_only(tmp_path):
    lines = diff(tmp_path, {B0: handle(), B1: handle()}, {B0: handle(), "sdsc_relu_1/sdsc_0.json": handle()})
    assert lines == [f"bundle {B1} only in A", "bundle sdsc_relu_1/sdsc_0.json only in B"]


def test_a_null_handle_is_a_handle_lost_or_gained(tmp_path):
    assert diff(tmp_path, {B0: handle(), B1: None}, {B0: None, B1: handle()}) == [
        f"bundle {B0}: lost its debug_handle_",
        f"bundle {B1}: gained a debug_handle_",
    ]


def test_one_side_without_any_bundles_says_so(tmp_path):
    with_bundles = golden.load(bundle_folder(tmp_path, {B0: handle(), B1: None}))
    without = golden.Provenance("B", {})
    comparison = golden.differences(with_bundles, without, golden.Roots(), labels=("A", "B"))
    assert [str(c) for c in comparison.changes] == ["SuperDSC bundles only in A (2 bundle(s))"]


def test_ids_normalize_like_the_opspec_handles(tmp_path):
    """Absolute paths hashed into the ids: after normalization the nested ids are the ones
    ``golden.handle_id`` gives the flattened (table) form of the same content."""
    root = tmp_path / "proj"
    abs_handle = handle(file=f"{root}/m.py", hid="11", children=[handle(file=f"{root}/m.py", hid="12")])
    (normal,) = golden.normalize_bundle_handles({B0: abs_handle}, golden.Roots(project=(f"{root}/",))).values()
    child = normal["fused_from"][0]
    assert child["source"]["file"] == normal["source"]["file"] == "m.py"
    assert child["id"] == golden.handle_id({**child, "fused_from": []})
    assert normal["id"] == golden.handle_id({**normal, "fused_from": [child["id"]]}) != "11"
    again = golden.normalize_bundle_handles({B0: normal}, golden.Roots(project=(f"{root}/",)))
    assert again == {B0: normal}  # normalizing twice changes nothing


def test_a_malformed_handle_is_one_line_exit_2(tmp_path, run_cli):
    bad = handle()
    del bad["ir_chain"]
    bundle_folder(tmp_path / "a", {B0: bad})
    bundle_folder(tmp_path / "b", {B0: handle()})
    code, out, err = run_cli("diff", tmp_path / "a", tmp_path / "b")
    assert code == 2 and not out and len(err.strip().splitlines()) == 1, err
    assert f"bundle {B0}: debug_handle_ is not well-formed" in err and "Traceback" not in err


def test_a_bundle_that_is_no_bundle_is_exit_2(tmp_path, run_cli):
    path = kernel_folder(tmp_path / "a", KERNEL, "m") / "sdsc_0.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"debug_handle_": "nope"}')
    code, out, err = run_cli("diff", tmp_path / "a", tmp_path / "a")
    assert code == 2 and not out and "not a SuperDSC bundle" in err and len(err.strip().splitlines()) == 1


def test_the_cli_prints_bundle_lines_and_exits_1(tmp_path, run_cli):
    bundle_folder(tmp_path / "a", {B1: handle(3)})
    bundle_folder(tmp_path / "b", {B1: handle(5)})
    code, out, err = run_cli("diff", tmp_path / "a", tmp_path / "b")
    assert code == 1 and not err
    assert f"  bundle {B1}: debug_handle_ source m.py:3 -> m.py:5" in out.splitlines()


def test_bundle_indices_sort_as_numbers(tmp_path):
    handles = {f"{KERNEL}/sdsc_{i}.json": handle(i + 1) for i in (10, 2, 0)}
    assert list(golden.load(bundle_folder(tmp_path, handles)).bundles) == [
        f"{KERNEL}/sdsc_0.json",
        f"{KERNEL}/sdsc_2.json",
        f"{KERNEL}/sdsc_10.json",
    ]


# --- golden cases keep each bundle's debug_handle_, nothing else of the device spec ----------


def test_golden_bundle_file_round_trips_through_the_one_serializer(tmp_path):
    provenance = golden.load(bundle_folder(tmp_path / "out", {B0: handle(), B1: None})).normalized(golden.Roots())
    files = provenance.files()
    assert list(files) == [golden.BUNDLE_HANDLES_FILE]
    doc = json.loads(files[golden.BUNDLE_HANDLES_FILE])
    assert (
        doc["format"] == 1
        and set(doc["bundles"]) == {B0, B1}
        and "opFunc_" not in files[golden.BUNDLE_HANDLES_FILE].decode()
    )
    assert golden.write_case(tmp_path / "case", files) == []
    again = golden.read_case(tmp_path / "case")
    assert again.bundles == provenance.bundles and again.files() == files


def test_golden_reference_cases_hold_bundle_handles_and_still_validate():
    for name, case in golden.CASES.items():
        has_file = (GOLDEN / name / golden.BUNDLE_HANDLES_FILE).is_file()
        # stock Inductor writes no bundles; an audit case keeps only the audit
        assert has_file == (case.backend == "reference" and not case.audit), name
    results = path_validation.validate_paths([GOLDEN / "mlp"])
    assert results and all(r.ok for r in results), results
    assert not any(golden.BUNDLE_HANDLES_FILE in str(r.location) for r in results)  # skipped, not an artifact


def test_golden_bundle_handles_are_the_opspec_handles():
    """Each bundle's handle copies an OpSpec handle: normalized alike, so the same id."""
    case = golden.read_case(GOLDEN / "mlp")
    (graph,) = case.graphs.values()
    spec_ids = {s["debug_handle"] for specs in graph[OPSPEC_DEBUG_HANDLES]["kernels"].values() for s in specs}
    bundle_ids = {h["id"] for h in case.bundles.values() if h is not None}
    assert bundle_ids and bundle_ids <= spec_ids
    assert bundle_ids <= set(graph[OPSPEC_DEBUG_HANDLES]["handles"])


def test_editing_a_golden_bundle_handle_is_a_change(tmp_path):
    shutil.copytree(GOLDEN / "mlp", tmp_path / "mlp")
    file = tmp_path / "mlp" / golden.BUNDLE_HANDLES_FILE
    doc = json.loads(file.read_text())
    key, first = next((k, h) for k, h in doc["bundles"].items() if h and h["source"])
    edited = copy.deepcopy(first)
    edited["source"]["start_line"] += 2
    doc["bundles"][key] = edited
    file.write_text(json.dumps(doc, indent=2))
    comparison = golden.differences(golden.read_case(GOLDEN / "mlp"), golden.read_case(tmp_path / "mlp"))
    old, new = first["source"]["start_line"], edited["source"]["start_line"]
    assert [str(c) for c in comparison.changes] == [
        f"bundle {key}: debug_handle_ source {first['source']['file']}:{old} -> {first['source']['file']}:{new}"
    ]


# --- one real case: the same model compiled from two files, its lines moved -----------------


@pytest.mark.compile
def test_two_compiles_name_the_moved_source_in_bundle_lines(tmp_path, run_cli):
    (tmp_path / "a.py").write_text(SOURCE)
    (tmp_path / "b.py").write_text("\n\n# the same model, two lines lower\n" + SOURCE)
    for name in ("a", "b"):
        done = compile_with_cache(tmp_path / f"{name}.py", tmp_path / name, tmp_path / "cache")
        assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    code, out, err = run_cli("diff", tmp_path / "a", tmp_path / "b")
    assert code == 1 and not err, out + err
    lines = [line.strip() for line in out.splitlines() if line.strip().startswith("bundle ")]
    # a handle with no source (the split bias add's) is the same in both: not listed
    assert lines, out
    for line in lines:  # every bundle line is the move: a.py line N -> b.py line N + 3
        moved = re.search(r" source (\S*/a\.py):(\d+)\S* -> (\S*/b\.py):(\d+)", line)
        assert moved and int(moved[4]) == int(moved[2]) + 3, line


@pytest.mark.compile
def test_a_compile_and_its_own_log_are_the_same_provenance(compile_case):
    """A TORCH_TRACE log holds no bundles: comparing with one is a hint, never a change."""
    case = compile_case("mlp")
    assert case.returncode == 0, case.stdout + case.stderr[-3000:]
    out, log = golden.load(case.out), golden.load(case.log)
    assert out.bundles and log.bundles is None and not log.holds_bundles
    for a, b in ((out, log), (log, out)):
        comparison = golden.differences(a, b, labels=("A", "B"))
        assert comparison.changes == []
        assert [h for h in comparison.hints if "SuperDSC bundles not compared" in h] == [
            f"SuperDSC bundles not compared: {'B' if b is log else 'A'} is a TORCH_TRACE log, which holds none"
        ]


def test_two_graphs_kernels_of_one_name_keep_their_own_bundles(tmp_path):
    """Kernel suffixes restart per graph: a forward and a backward can each have a
    ``sdsc_fused_add_0``. Each has its own folder (as on torch-spyre main), and a golden names
    each after the graph whose OpSpec artifact records it, not after its folder's hash."""
    from spyre_provenance.golden.store import read_bundles

    forward, backward = (
        Layout(tmp_path, "m").bundle_folder(bundle_folder_name("sdsc_fused_add_0", s)) for s in (b"f", b"b")
    )
    for folder, line in ((forward, 3), (backward, 5)):
        folder.mkdir(parents=True)
        (folder / "sdsc_0.json").write_text(json.dumps({"0_add": {"debug_handle_": handle(line)}}))
    graphs = {
        g: {OPSPEC_DEBUG_HANDLES: {"bundles": {"sdsc_fused_add_0:1": {"provenance_key": None, "folder": f.name}}}}
        for g, f in (("graph_00_0-0_forward", forward), ("graph_01_0-0_backward", backward))
    }
    found = read_bundles(tmp_path, graphs)
    assert found is not None
    assert {k: h["source"]["start_line"] for k, h in found.items()} == {
        "graph_00_0-0_forward/sdsc_fused_add_0/sdsc_0.json": 3,
        "graph_01_0-0_backward/sdsc_fused_add_0/sdsc_0.json": 5,
    }
    # without the graphs that record them, each folder by its whole name: never one lost
    assert sorted(read_bundles(tmp_path) or {}) == sorted(f"{f.name}/sdsc_0.json" for f in (forward, backward))
