"""Fault injection on the reference backend: each of the hook's seven stages raises in turn.

For every stage: the compile completes and matches eager, exactly one warning names the
stage, the mapping the TORCH_TRACE log gets (ours, or Inductor's own when ours was left
out) holds only pairs the clean compile's mapping holds, and the loss is reported in the
``spyre_provenance_diagnostics`` artifact, logged and written beside the other artifacts,
valid against its schema. ``tests/test_hook_faults.py`` does the same on stock Inductor;
the last test here goes through ``spyre-provenance compile`` (summary, exit code, files).

In-process compiles of a two-kernel model (about a second each on the reference backend).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path
from typing import Any

import msgspec
import pytest
import torch
from test_hook_faults import INPUTS, TINY_SOURCE, Tiny

import spyre_provenance
from spyre_provenance import emit, hook, mapping
from spyre_provenance.backends.reference import ReferenceBackend
from spyre_provenance.model.names import DIAGNOSTICS, NODE_MAPPINGS
from spyre_provenance.validate import paths as path_validation
from spyre_provenance.validate import schemas

pytestmark = pytest.mark.compile

REPO = Path(__file__).parents[1]
MAPS = ("preToPost", "postToPre", "cppCodeToPost", "postToCppCode")


class Injected(RuntimeError):
    pass


def boom(*args: Any, **kwargs: Any) -> Any:
    raise Injected("injected fault")


class FaultyOpSpecs(ReferenceBackend):
    def opspecs_for(self, kernel_name: str, node_schedule: Any) -> Any:
        raise Injected("injected fault")


# stage -> (object, attribute) made to raise; "OpSpec handle reading" uses FaultyOpSpecs
FAULTS: dict[str, tuple[Any, str] | None] = {
    "record collection": (hook, "_origin_names"),
    "get_kernel_metadata": (hook, "_kernel_metadata"),
    "OpSpec handle reading": None,
    "build": (mapping, "build_node_mappings"),
    "validate": (schemas, "check_built_artifacts"),
    "emit": (emit, "log_artifact"),
    "file write": (emit, "atomic_write_bytes"),
}
assert tuple(FAULTS) == hook.STAGES


class Run:
    """One tracked compile: the session's graph, our warnings, what was logged."""

    def __init__(self, session: hook.Session, warned: list[warnings.WarningMessage], logged: list[tuple[str, Any]]):
        (self.graph,) = session.results
        self.warned = [w for w in warned if issubclass(w.category, hook.ProvenanceWarning)]
        self.logged = logged

    def logged_docs(self, name: str) -> list[Any]:
        return [doc for n, doc in self.logged if n == name]

    def logged_mapping(self) -> dict[str, Any]:
        """What compile_fx logs as the graph's node mapping: ours, or upstream's instead."""
        if self.graph.diagnostics.mapping == "hook":
            return msgspec.to_builtins(self.graph.node_mappings)
        return self.graph.upstream_node_mappings or {}


def record_logged(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Any]]:
    """Every artifact the hook logs, as (name, document), still logged for real."""
    logged: list[tuple[str, Any]] = []
    real_log = emit.log_artifact

    def recording_log(name: str, document: Any) -> None:
        real_log(name, document)
        logged.append((name, json.loads(json.dumps(document))))

    monkeypatch.setattr(emit, "log_artifact", recording_log)
    return logged


def compile_tiny(backend: Any, out_dir: Path | None, logged: list[tuple[str, Any]]) -> Run:
    torch._dynamo.reset()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with spyre_provenance.tracking(backend, out_dir=out_dir) as session:
            got = torch.compile(Tiny())(*INPUTS)
    torch._dynamo.reset()
    torch.testing.assert_close(got, Tiny()(*INPUTS))  # the compile completed, and is right
    return Run(session, caught, logged)


def pairs(doc: dict[str, Any]) -> set[tuple[str, str, str]]:
    return {(field, key, value) for field in MAPS for key, values in (doc.get(field) or {}).items() for value in values}


@pytest.fixture(scope="module")
def clean() -> Run:
    with pytest.MonkeyPatch.context() as mp:
        run = compile_tiny(ReferenceBackend(), None, record_logged(mp))
    assert not run.warned and not run.graph.diagnostics.partial
    assert run.graph.diagnostics.opspecs > 0  # the reference backend's OpSpecs were read
    return run


def test_clean_compile_logs_complete_diagnostics(clean: Run) -> None:
    (doc,) = clean.logged_docs(DIAGNOSTICS)
    assert doc == hook.diagnostics_document(clean.graph)
    assert doc["partial"] is False and doc["faults"] == [] and doc["mapping"] == "hook"
    assert doc["kernels"] == len(clean.graph.records) == 2
    assert schemas.validate(doc, DIAGNOSTICS).ok


@pytest.mark.parametrize("stage", hook.STAGES)
def test_each_stage_faulted_on_the_reference_backend(stage: str, clean: Run, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    backend: Any = FaultyOpSpecs() if stage == "OpSpec handle reading" else ReferenceBackend()
    target = FAULTS[stage]
    logged = record_logged(monkeypatch)
    if target is not None:
        monkeypatch.setattr(*target, boom)  # after the recorder: a faulted log_artifact wins
    run = compile_tiny(backend, tmp_path, logged)

    # one warning, naming the stage
    assert len(run.warned) == 1, [str(w.message) for w in run.warned]
    assert f"spyre-provenance: {stage}: Injected: injected fault" in str(run.warned[0].message)

    # the graph says it is partial, and why
    diag = run.graph.diagnostics
    assert diag.partial and diag.fault_records[0].stage == stage
    assert {f.stage for f in diag.fault_records} == {stage}

    # never a wrong mapping: what the log holds is a part of the clean compile's mapping
    held = pairs(run.logged_mapping())
    assert held <= pairs(clean.logged_mapping())
    if stage in ("build", "validate"):
        assert run.graph.node_mappings is None and diag.mapping == "upstream"

    # the loss is reported: logged (unless logging is the fault) and written (unless writing is)
    document = hook.diagnostics_document(run.graph)
    assert schemas.validate(document, DIAGNOSTICS).ok
    logged_diag = run.logged_docs(DIAGNOSTICS)
    files = sorted(tmp_path.glob(f"graph_*/{DIAGNOSTICS}.json"))
    if stage == "emit":
        assert logged_diag == []
    else:
        (doc,) = logged_diag
        assert doc["partial"] is True and doc["faults"][0]["stage"] == stage
        assert doc["mapping"] == diag.mapping
    if stage == "file write":
        assert files == [] and not any(tmp_path.rglob("*.json"))
    else:
        (file,) = files
        written = json.loads(file.read_bytes())
        assert written == document and written["faults"][0]["stage"] == stage
        report = path_validation.validate_paths([file.parent])
        assert report and all(r.ok for r in report), report
        # the mapping file is there exactly when the log holds ours
        assert (file.parent / f"{NODE_MAPPINGS}.json").exists() == (diag.mapping == "hook")


def test_a_buffer_whose_handle_cannot_be_built_is_counted_not_dropped(
    clean: Run, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The reference backend's handle builder fails on one buffer: that buffer still has its
    OpSpec (without a handle), the loss is one warning, one fault, one handleless OpSpec."""
    from spyre_provenance.backends import opspec as opspec_mod

    real, calls = opspec_mod.build_debug_handle, []

    def fails_once(buffer: Any) -> Any:
        calls.append(buffer)
        if len(calls) == 1:
            raise Injected("injected fault")
        return real(buffer)

    monkeypatch.setattr(opspec_mod, "build_debug_handle", fails_once)
    run = compile_tiny(ReferenceBackend(), tmp_path, record_logged(monkeypatch))

    (warned,) = run.warned
    assert "spyre-provenance: OpSpec handle reading: " in str(warned.message)
    assert "building its debug handle failed: Injected: injected fault" in str(warned.message)
    diag = run.graph.diagnostics
    assert diag.partial and not diag.complete and [f.stage for f in diag.fault_records] == ["OpSpec handle reading"]
    assert diag.opspecs == clean.graph.diagnostics.opspecs  # no buffer dropped
    assert diag.handleless_opspecs == 1
    (doc,) = run.logged_docs(DIAGNOSTICS)
    assert doc["handleless_opspecs"] == 1 and doc["partial"] and not doc["complete"]
    specs = [s for specs in run.logged_docs("spyre_opspec_debug_handles")[0]["kernels"].values() for s in specs]
    assert [s["debug_handle"] for s in specs].count(None) == 1


# --- through the command line ------------------------------------------------------------------

# spyre-provenance compile, with the build stage raising inside the hook
DRIVER = '''
import sys
from spyre_provenance import cli, mapping


def boom(*args, **kwargs):
    raise RuntimeError("injected fault")


mapping.build_node_mappings = boom
sys.exit(cli.main(sys.argv[1:]))
'''


def test_compile_command_reports_the_loss(tmp_path: Path) -> None:
    (tmp_path / "tiny.py").write_text(TINY_SOURCE)
    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if k != "TORCH_TRACE"}
    env["PYTHONPATH"] = str(REPO / "src")
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(DRIVER), "compile", f"{tmp_path / 'tiny.py'}:make",
         "--backend", "reference", "--out", str(out), "--no-tlparse"],
        capture_output=True, text=True, timeout=600, env=env,
    )
    assert done.returncode == 1, done.stdout + done.stderr[-3000:]  # partial: found wanting
    assert "Traceback" not in done.stderr
    assert "output vs eager: match" in done.stdout
    assert "PARTIAL: build: RuntimeError: injected fault" in done.stdout
    assert "mapping left out" in done.stdout and "all valid" in done.stdout
    assert done.stderr.count("spyre-provenance: build: RuntimeError: injected fault") == 1

    (folder,) = out.glob("graph_tiny-make_*")
    assert sorted(p.name for p in folder.iterdir()) == [f"{DIAGNOSTICS}.json"]  # mapping left out
    written = json.loads((folder / f"{DIAGNOSTICS}.json").read_bytes())
    assert written["partial"] and written["mapping"] == "upstream"
    assert written["faults"] == [{"stage": "build", "error": "RuntimeError: injected fault"}]

    from spyre_provenance.logs import tracelog

    log = out / "trace" / "tiny-make.log"
    logged = {name: json.loads(payload) for _, name, payload in tracelog.artifact_payloads(log)
              if name in (DIAGNOSTICS, NODE_MAPPINGS)}
    assert logged[DIAGNOSTICS] == written
    # upstream's own mapping is logged instead, and it is valid
    assert schemas.validate(logged[NODE_MAPPINGS], NODE_MAPPINGS).ok
    validated = subprocess.run(
        [sys.executable, "-m", "spyre_provenance", "validate", str(out)],
        capture_output=True, text=True, env=env,
    )
    assert validated.returncode == 0, validated.stdout + validated.stderr
    assert f"OK      v2    {DIAGNOSTICS}" in validated.stdout
