"""``spyre-provenance golden check|update`` end to end on a copy of one golden case.

Two real compiles (check, then update; ~8 s each): editing one node name makes ``check``
fail with one line naming that change, a torch mismatch in the manifest is a hint while the
comparison still runs, and ``update`` restores the committed bytes (on the torch that made
them: the goldens are made with 2.13.0, and update writes the installed torch's version).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from helpers.torch_changes import expected_changes, unexplained  # tests/ is on sys.path
from helpers.where import GOLDEN  # tests/ is on sys.path
from spyre_provenance import golden
from spyre_provenance.golden import check as golden_check

GRAPH = "graph_00_0-0_inference"
MAPPINGS = f"{GRAPH}/inductor_provenance_tracking_node_mappings.json"


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _edited_copy(tmp_path: Path) -> str:
    """golden/mlp copied into tmp_path with one node name edited; the edited kernel's key."""
    shutil.copytree(GOLDEN / "mlp", tmp_path / "mlp")
    mappings = tmp_path / "mlp" / MAPPINGS
    doc = json.loads(mappings.read_text())
    kernel = next(iter(doc["cppCodeToPost"]))
    doc["cppCodeToPost"][kernel] = [n.replace("relu", "relu_7") for n in doc["cppCodeToPost"][kernel]]
    mappings.write_text(json.dumps(doc, indent=2))
    return kernel


def _golden_torch() -> str:
    return golden.read_case(GOLDEN / "mlp").manifest["torch"]


@pytest.mark.compile
def test_edit_then_check_names_the_change_and_the_torch_hint(run_cli, tmp_path):
    kernel = _edited_copy(tmp_path)
    manifest = tmp_path / "mlp" / golden.MANIFEST
    # the golden now claims a torch that is installed nowhere, whatever torch runs this test
    manifest.write_text(manifest.read_text().replace(f'"torch": "{_golden_torch()}"', '"torch": "2.12.0"'))

    code, out, err = run_cli("golden", "check", "mlp", "--golden-dir", tmp_path)
    assert code == 1, out + err
    lines = out.splitlines()
    edit = f"  {GRAPH}: kernel {kernel}: post-grad node relu_7 -> relu"
    # on a torch other than the goldens' own, what that torch writes differently comes too
    changes = lines[1:-1]
    torch_own = [line.strip() for line in changes if line != edit]
    assert edit in changes and not unexplained(torch_own, expected_changes("mlp", golden.torch_version()) or ())
    assert lines[0] == f"golden mlp: {len(changes)} change(s) from {tmp_path / 'mlp'}"
    assert lines[-1] == (
        f"  hint: {tmp_path / 'mlp'} was made with torch 2.12.0, this compile with torch {golden.torch_version()}: "
        "differences may come from the compiler version rather than a regression"
    )
    assert not err


@pytest.mark.compile
@pytest.mark.skipif(
    golden.torch_version() != _golden_torch(),
    reason=f"update rewrites golden/mlp byte for byte only on the torch that made it ({_golden_torch()}); "
    f"this is torch {golden.torch_version()} (make test runs it)",
)
def test_edit_then_update_restores_the_committed_bytes(run_cli, tmp_path):
    kernel = _edited_copy(tmp_path)
    committed = snapshot(GOLDEN / "mlp")

    code, out, err = run_cli("golden", "update", "mlp", "--golden-dir", tmp_path)
    assert code == 0, out + err
    assert out.splitlines()[:2] == [
        f"golden mlp: updated {tmp_path / 'mlp'}, 1 change(s)",
        f"  {GRAPH}: kernel {kernel}: post-grad node relu_7 -> relu",
    ]
    assert snapshot(tmp_path / "mlp") == committed


def test_unknown_case_is_exit_2(run_cli):
    code, out, err = run_cli("golden", "check", "mlp", "no_such_case")
    assert code == 2 and not out
    assert err.strip() == (
        "spyre-provenance golden: error: no_such_case: not a golden case; known: " + ", ".join(golden.CASES)
    )


def test_missing_golden_folder_is_exit_2(run_cli, tmp_path):
    code, _, err = run_cli("golden", "check", "mlp", "--golden-dir", tmp_path / "nowhere")
    assert code == 2 and "no such folder" in err and len(err.strip().splitlines()) == 1


# --- update's gate, without a compile: invalid artifacts and broken coverage are not written ---


def _fake_compile(tmp_path: Path, returncode: int = 0) -> golden_check.CaseCompile:
    """What a compile of the mlp case leaves in --out, faked from the committed golden."""
    out = tmp_path / "out"
    shutil.copytree(GOLDEN / "mlp" / GRAPH, out / GRAPH)
    return golden_check.CaseCompile(out, returncode, "compiled mlp\n  artifacts: 3 validated, 1 INVALID")


@pytest.mark.compile
def test_update_refuses_an_invalid_artifact(golden_compile, tmp_path):
    """A real compile (the session's), one of its files made invalid: nothing is written."""
    out = Path(shutil.copytree(golden_compile("mlp").out, tmp_path / "out"))
    (graph,) = out.glob("graph_*")  # named by the compile (a model label may be in it)
    mappings = graph / Path(MAPPINGS).name
    doc = json.loads(mappings.read_text())
    doc["postToCppCode"]["relu"] = ["no_such_kernel:9"]
    mappings.write_text(json.dumps(doc))
    compiled = golden_check.CaseCompile(out, 0, "")
    lines, ok = golden_check.update_case(golden.CASES["mlp"], compiled, tmp_path / "golden" / "mlp")
    assert not ok and lines[0] == "golden mlp: NOT written: invalid artifact"
    assert lines[1].startswith(f"  {MAPPINGS}: $.postToCppCode") and "no_such_kernel:9" in "".join(lines)
    assert not (tmp_path / "golden").exists()


def test_update_refuses_a_failed_compile(tmp_path):
    compiled = _fake_compile(tmp_path, returncode=1)
    lines, ok = golden_check.update_case(golden.CASES["mlp"], compiled, tmp_path / "golden" / "mlp")
    assert not ok and lines == [
        "golden mlp: NOT written: compile failed (exit 1): compiled mlp | artifacts: 3 validated, 1 INVALID"
    ]
    assert not (tmp_path / "golden").exists()


def test_update_refuses_broken_coverage(tmp_path):
    compiled = _fake_compile(tmp_path)  # a --out without a TORCH_TRACE log: coverage unknown
    compiled.returncode = 0
    lines, ok = golden_check.update_case(golden.CASES["mlp"], compiled, tmp_path / "golden" / "mlp")
    assert not ok and lines[0] == "golden mlp: NOT written: coverage invariant broken"
    assert not (tmp_path / "golden").exists()


def test_write_case_removes_stale_files_and_is_atomic(tmp_path):
    folder = tmp_path / "mlp"
    shutil.copytree(GOLDEN / "mlp", folder)
    (folder / "graph_01_1-0_inference").mkdir()
    (folder / "graph_01_1-0_inference" / "inductor_provenance_tracking_node_mappings.json").write_text("{}")
    files = golden.read_case(GOLDEN / "mlp").files()
    assert golden.stale_files(folder, files) == [
        "graph_01_1-0_inference/inductor_provenance_tracking_node_mappings.json"
    ]
    assert golden.write_case(folder, files) == []
    assert snapshot(folder) == snapshot(GOLDEN / "mlp")
    assert not any(p.name.startswith(".spyre-provenance-tmp-") for p in folder.rglob("*"))
