"""The one table of artifact kinds (``model.names.ARTIFACT_KINDS``) and the engines reading it:
each kind has its schema, validate tells a file's kind by the table's name pattern, and what
golden compares and what a log is read for are the table's columns."""

from __future__ import annotations

import fnmatch
import json

import pytest

from helpers.where import GOLDEN
from spyre_provenance import golden
from spyre_provenance.model.detect import artifact_for_filename
from spyre_provenance.model.names import (
    ARTIFACT_KINDS,
    ARTIFACTS,
    COMPANION_DOCUMENTS,
    DIAGNOSTICS,
    GOLDEN_ARTIFACTS,
    LOGGED_ARTIFACTS,
    SPYRE_SIDECAR,
    ArtifactKind,
)
from spyre_provenance.validate import schemas


@pytest.mark.parametrize("kind", ARTIFACT_KINDS, ids=lambda k: k.name)
def test_every_kind_has_a_schema(kind: ArtifactKind) -> None:
    assert schemas.available_versions(kind.name), f"schemas/{kind.name}/ holds no v<N>.schema.json"
    assert kind.written_by and set(kind.written_by) <= {"torch", "hook", "audit", "viewer", "torch-spyre"}


@pytest.mark.parametrize("kind", ARTIFACT_KINDS, ids=lambda k: k.name)
def test_validate_tells_a_file_by_the_tables_pattern(kind: ArtifactKind) -> None:
    assert fnmatch.fnmatchcase(kind.file, kind.file_pattern)
    assert artifact_for_filename(f"graph_0/{kind.file}") == (kind.name if kind.validated else None)


def test_the_engines_lists_are_the_tables_columns() -> None:
    assert list(golden.ARTIFACT_FILES) == list(GOLDEN_ARTIFACTS)
    assert all(golden.ARTIFACT_FILES[k.name] == k.file for k in ARTIFACT_KINDS if k.golden)
    assert {k.name for k in ARTIFACT_KINDS if k.logged} == LOGGED_ARTIFACTS
    assert set(ARTIFACTS) | set(COMPANION_DOCUMENTS) == {k.name for k in ARTIFACT_KINDS}
    # the command line's --artifact offers the provenance artifacts, in the table's order
    assert tuple(k.name for k in ARTIFACT_KINDS if k.provenance) == ARTIFACTS


def test_validate_lists_and_checks_the_viewers_source_lines(run_cli, tmp_path) -> None:
    """The table says validate checks spyre_source_lines: a folder scan lists it (it used
    to skip it), a bad one is found wanting with the path of each problem."""
    good, bad = tmp_path / "graph_0", tmp_path / "graph_1"
    good.mkdir(), bad.mkdir()
    doc = {"version": 1, "context": 3, "files": {"m.py": {"made": [2], "lines": {"2": "x = 1"}, "error": None}}}
    (good / "spyre_source_lines.json").write_text(json.dumps(doc))
    doc["files"]["m.py"]["made"] = [0]
    (bad / "spyre_source_lines.json").write_text(json.dumps(doc))
    code, out, err = run_cli("validate", tmp_path)
    assert (code, err) == (1, "")
    assert out.splitlines() == [
        f"OK      v1    spyre_source_lines  {good / 'spyre_source_lines.json'}",
        f"INVALID v1    spyre_source_lines  {bad / 'spyre_source_lines.json'}",
        '  $.files["m.py"].made[0]: must be >= 1, got 0',
    ]
    code, out, _ = run_cli("validate", "--engine", "fast", good / "spyre_source_lines.json")
    assert code == 0 and out.startswith("OK      v1    spyre_source_lines")


def test_tlparses_file_of_the_hooks_label_record_is_no_artifact(run_cli, tmp_path) -> None:
    """tlparse writes each record of a log as ``<name>_<n>.json``; the hook's model label
    (``spyre_provenance_model_label``, no artifact) matches the sidecar's pattern by name, and
    ``run`` puts tlparse's folders under OUT: validate OUT found it an invalid sidecar."""
    assert artifact_for_filename("-_0_0_0/spyre_provenance_model_label_14.json") is None
    assert artifact_for_filename("-_0_0_0/spyre_provenance_13.json") == SPYRE_SIDECAR
    assert artifact_for_filename("-_0_0_0/spyre_provenance_diagnostics_15.json") == DIAGNOSTICS
    pages = tmp_path / "tlparse" / "-_0_0_0"
    pages.mkdir(parents=True)
    (pages / "spyre_provenance_model_label_14.json").write_text(json.dumps({"label": "train"}))
    mappings = GOLDEN / "mlp" / "graph_00_0-0_inference" / "inductor_provenance_tracking_node_mappings.json"
    (pages / "inductor_provenance_tracking_node_mappings_16.json").write_bytes(mappings.read_bytes())
    code, out, err = run_cli("validate", tmp_path)
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        f"OK      v2.0  inductor_provenance_tracking_node_mappings  {pages / 'inductor_provenance_tracking_node_mappings_16.json'}"
    ]
