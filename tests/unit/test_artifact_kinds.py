"""The one table of artifact kinds (``model.names.ARTIFACT_KINDS``) and the engines reading it:
each kind has its schema, validate tells a file's kind by the table's name pattern, and what
golden compares and what a log is read for are the table's columns. Each kind's record is
its module's (``validate/kinds/``), and a new kind is three places: contributing.md's diff,
applied to a copy of the package, is checked end to end."""

from __future__ import annotations

import ast
import dataclasses
import fnmatch
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from helpers.where import GOLDEN, PACKAGE, REPO, SCHEMAS
from spyre_provenance import golden
from spyre_provenance.golden import normalize
from spyre_provenance.links import portable, redact
from spyre_provenance.model import detect, names
from spyre_provenance.model.detect import Detected, Problem, artifact_for_filename, keyed
from spyre_provenance.model.names import (
    ARTIFACT_KINDS,
    ARTIFACTS,
    COMPANION_DOCUMENTS,
    DIAGNOSTICS,
    GOLDEN_ARTIFACTS,
    KERNEL_STACK_TRACES,
    KINDS,
    LOGGED_ARTIFACTS,
    NODE_MAPPINGS,
    SOURCE_LINES,
    SPYRE_SIDECAR,
    ArtifactKind,
)
from spyre_provenance.validate import fastpath, kinds, rules, schemas
from spyre_provenance.validate import kind as kind_record


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


# --- one record per kind (validate.kinds): its parts, and the engines reading it -------------

PARTS = ("version", "fast", "full", "rules", "normalize", "redact")


@pytest.mark.parametrize("kind", kinds.KINDS.values(), ids=lambda k: k.name)
def test_every_record_is_whole(kind: kinds.Kind) -> None:
    """Each registered kind has every part: its filing row, a schema folder with the version
    it writes, and its functions (a fast decoder unless it is a companion document)."""
    assert kind.filing is KINDS[kind.name]
    assert kind.current is None or int(float(kind.current)) in schemas.available_versions(kind.name)
    assert all(callable(getattr(kind, part)) for part in PARTS if part != "fast")
    assert callable(kind.fast) or not kind.filing.provenance


@pytest.mark.parametrize("part", PARTS)
def test_a_kind_without_one_of_its_parts_is_refused(part: str) -> None:
    whole = kinds.KINDS[NODE_MAPPINGS]
    with pytest.raises(TypeError, match=f"{NODE_MAPPINGS}: .*{part}|{part}"):
        dataclasses.replace(whole, **{part: None})
    parts = {f.name: getattr(whole, f.name) for f in dataclasses.fields(whole) if f.name != part}
    with pytest.raises(TypeError):
        kinds.Kind(**parts)  # left out, not only None


def test_the_registry_holds_one_record_per_row_of_the_table() -> None:
    records = list(kinds.KINDS.values())
    assert list(kinds.KINDS) == [row.name for row in ARTIFACT_KINDS]
    with pytest.raises(ValueError, match=f"without a record: {records[-1].name}; records without a row: none"):
        kinds.registry(*records[:-1])
    with pytest.raises(ValueError, match="registered twice"):
        kinds.registry(*records, records[0])
    extra = ArtifactKind("test_kind", "test_kind*.json", ("hook",), False, False, True)
    with pytest.raises(ValueError, match="records without a row: test_kind"):
        kinds.registry(*records, dataclasses.replace(records[0], filing=extra))


class _Spy:
    """A part of the test kind's record that notes each call."""

    def __init__(self, result: Any) -> None:
        self.result, self.calls = result, 0

    def __call__(self, *args: Any) -> Any:
        self.calls += 1
        return self.result(*args) if callable(self.result) else self.result


@pytest.fixture
def test_kind(monkeypatch: pytest.MonkeyPatch) -> kinds.Kind:
    """A kind no engine has heard of, registered for one test: its schema is the source
    lines' (any schema will do), every part a spy."""
    filing = ArtifactKind("test_kind", "test_kind*.json", ("hook",), False, False, True)
    detected = Detected("test_kind", "1", 1)
    kind = kinds.Kind(
        filing,
        version=_Spy(detected),
        current="1",
        fast=_Spy(lambda run: (detected, run.top(), (1, 0))),
        full=_Spy(lambda schema, doc: dict(doc)),
        rules=_Spy([Problem("$", "the test kind's rule")]),
        normalize=_Spy({"normalized": True}),
        redact=_Spy({"redacted": True}),
        shape=keyed("test_notes", "test_kernels"),
        schema=SOURCE_LINES,
    )
    monkeypatch.setitem(kinds.KINDS, kind.name, kind)
    yield kind
    schemas._schema.cache_clear()  # it cached the test kind's schema under its name
    schemas._validator.cache_clear()


def test_the_engines_and_golden_read_every_registered_kind(test_kind: kinds.Kind) -> None:
    """No list of kinds is left in fastpath, schemas, rules or golden.normalize: a kind
    registered only in the registry is decoded, detected, checked and normalized by its own
    record, on both engines."""
    doc = {"version": 1, "context": 3, "files": {}}
    fast = schemas.validate_bytes(json.dumps(doc), "test_kind")
    assert (fast.artifact, fast.version, [str(p) for p in fast.problems]) == (
        "test_kind",
        "1",
        ["$: the test kind's rule"],
    )
    assert (test_kind.fast.calls, test_kind.rules.calls) == (1, 1)
    full = schemas.validate_bytes(json.dumps(doc), "test_kind", full=True)
    assert full == fast
    assert (test_kind.version.calls, test_kind.full.calls, test_kind.rules.calls) == (1, 1, 2)
    assert golden.normalize("test_kind", doc) == {"normalized": True}
    assert test_kind.normalize.calls == 1
    assert schemas.check_built_artifacts(None) == []  # the gate reads the records too
    # told by its shape, before the looser shapes (a keyed document is a bare map too)
    shaped = {"test_notes": {"k:1": []}, "test_kernels": {}}
    assert schemas.guess_artifact(shaped, strict=False) == "test_kind"
    assert schemas.validate_bytes(json.dumps(shaped)).artifact == "test_kind"


def test_a_kind_is_told_by_its_tightest_shape() -> None:
    """Each tier before the next, the registry's order within one: keys of a kind's own
    before a mapping field before a bare map (every document here is a bare map too)."""
    assert kinds.guess_artifact({"preToPost": {}, "faults": [], "partial": False}) == DIAGNOSTICS
    assert kinds.guess_artifact({"preToPost": {}, "x": []}) == NODE_MAPPINGS
    assert kinds.guess_artifact({"x": []}) == KERNEL_STACK_TRACES
    assert kinds.guess_artifact({"x": {}}) == names.KERNEL_INFORMATION
    assert kinds.guess_artifact({"x": 1}) is None
    assert kinds.KINDS[SOURCE_LINES].shape is None  # told by its file name only


_KIND_NAMES = {name for name, value in vars(names).items() if isinstance(value, str) and value in kinds.KINDS}


def kinds_named(source: str, allowed: set[str] = frozenset()) -> set[str]:
    """The artifact-name constants (``NODE_MAPPINGS``, ...) code uses, imports aside, outside
    the functions ``allowed``."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef) and child.name in allowed:
                continue
            if isinstance(child, ast.Name) and child.id in _KIND_NAMES:
                found.add(child.id)
            visit(child)

    visit(ast.parse(source))
    return found


@pytest.mark.parametrize(
    ("module", "allowed"),
    [
        (fastpath, set()),
        (rules, set()),
        (portable, set()),  # what the kinds' normalizers are made of
        (kind_record, set()),
        (kinds, set()),  # the registry collects the kinds' modules, naming none
        (normalize, set()),
        (redact, set()),  # each kind's redaction is its record's part
        (detect, set()),  # each kind's shape and version reader are its record's parts
        (schemas, {"check_built_artifacts"}),  # the hook's four arguments, named
    ],
    ids=lambda m: getattr(m, "__name__", "").rpartition(".")[2],
)
def test_the_consumers_name_no_kind(module: Any, allowed: set[str]) -> None:
    """The places that chose a kind by if-chains (and ``Redactor.artifact``) name no kind now (but the emitter's
    gate, whose arguments are four kinds): every choice goes through the registry."""
    assert kinds_named(inspect.getsource(module), allowed) == set()


def test_an_if_chain_on_kinds_is_found() -> None:
    # the check above must see a chain like the ones it replaced, not pass on anything
    chain = "def normalize(artifact, doc):\n    if artifact == KERNEL_STACK_TRACES:\n        return doc\n"
    assert kinds_named(chain) == {"KERNEL_STACK_TRACES"}
    assert kinds_named(chain, {"normalize"}) == set()


# --- adding a kind: contributing.md's diff, applied to a copy of the package ----------------

#: The kind contributing.md adds: a provenance artifact with every part of its own.
DOCUMENTED = "spyre_compile_notes"


def documented_diff() -> str:
    """The diff of contributing.md's "Add an artifact kind"."""
    section = (REPO / "docs" / "contributing.md").read_text().split("## Add an artifact kind\n", 1)[1]
    return section.split("```diff\n", 1)[1].split("```", 1)[0]


def apply_diff(diff: str, root: Path) -> list[str]:
    """``diff`` (unified) applied to the files under ``root`` by content: each hunk's old lines,
    found exactly once, become its new ones (from ``/dev/null``: a new file). The files touched."""
    touched = []
    for section in re.split(r"^--- ", diff, flags=re.M)[1:]:
        source, _, rest = section.partition("\n")
        target, _, body = rest.partition("\n")
        name = target.removeprefix("+++ b/")
        text = "" if source == "/dev/null" else (root / name).read_text()
        for hunk in re.split(r"^@@.*\n", body, flags=re.M)[1:]:
            lines = [line if line.strip("\n") else " \n" for line in hunk.splitlines(keepends=True)]
            old = "".join(line[1:] for line in lines if line[0] in " -")
            new = "".join(line[1:] for line in lines if line[0] in " +")
            assert not old or text.count(old) == 1, f"{name}: a hunk's lines are not found once"
            text = text.replace(old, new, 1) if old else text + new
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
        touched.append(name)
    return touched


def test_a_kind_is_three_places_as_contributing_shows(tmp_path: Path) -> None:
    """contributing.md's diff (the filing row, the kind's module, its schema) applied to a copy
    of the package, and nothing else: validate tells the new kind's files by name and checks
    them on both engines, golden.normalize and --redact-paths' redaction read its record."""
    checkout = tmp_path / "checkout"
    shutil.copytree(PACKAGE, checkout / "src" / "spyre_provenance", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(SCHEMAS, checkout / "schemas")
    assert apply_diff(documented_diff(), checkout) == [
        "src/spyre_provenance/model/names.py",
        f"src/spyre_provenance/validate/kinds/{DOCUMENTED.removeprefix('spyre_')}.py",
        f"schemas/{DOCUMENTED}/v1.schema.json",
    ]
    good, bad = tmp_path / "out" / "graph_0" / f"{DOCUMENTED}.json", tmp_path / "out" / "graph_1" / f"{DOCUMENTED}.json"
    good.parent.mkdir(parents=True), bad.parent.mkdir(parents=True)
    good.write_text(json.dumps({"version": 1, "notes": {"sdsc_mm_0:1": ["split over 4 cores"]}}))
    bad.write_text(json.dumps({"version": 1, "notes": {"sdsc_mm_0:1": [" "], "x": []}}))
    env = {**os.environ, "PYTHONPATH": str(checkout / "src")}
    for engine in ("fast", "full"):
        command = [sys.executable, "-m", "spyre_provenance", "validate", "--engine", engine, str(tmp_path / "out")]
        done = subprocess.run(command, capture_output=True, text=True, env=env)
        assert (done.returncode, done.stderr) == (1, ""), engine
        assert done.stdout.splitlines() == [
            f"OK      v1    {DOCUMENTED}  {good}",
            f"INVALID v1    {DOCUMENTED}  {bad}",
            f'  $.notes["x"]: {rules.MSG_KERNEL_KEY}',
            '  $.notes["sdsc_mm_0:1"][0]: a blank note',
        ], engine
    project = tmp_path / "project"
    doc = {"version": 1, "notes": {"k:1": [f'File "{project}/m.py", line 3, at 0x7f00deadbeef']}}
    read = (
        "import json, sys\n"
        "from spyre_provenance import golden\n"
        "from spyre_provenance.links.redact import Redactor\n"
        "from spyre_provenance.validate.kinds import KINDS\n"
        "name, doc, project = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]\n"
        "normal = golden.normalize(name, doc, golden.Roots(project=(project + '/',)))\n"
        "redacted = KINDS[name].redact(doc, Redactor.default(project, home='/nowhere', user='nobody'))\n"
        "print(json.dumps([normal, redacted]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", read, DOCUMENTED, json.dumps(doc), str(project)], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout) == [
        {"version": 1, "notes": {"k:1": ['File "m.py", line 3, at 0xADDR']}},
        {"version": 1, "notes": {"k:1": ['File "<project>/m.py", line 3, at 0x7f00deadbeef']}},
    ]


def test_a_hunk_that_no_longer_fits_is_refused(tmp_path: Path) -> None:
    # the test above must fail when the documented row's context has moved, not apply it anywhere
    (tmp_path / "names.py").write_text("A = 1\n")
    with pytest.raises(AssertionError, match="not found once"):
        apply_diff("--- a/names.py\n+++ b/names.py\n@@ -1,1 +1,2 @@\n B = 2\n+C = 3\n", tmp_path)
