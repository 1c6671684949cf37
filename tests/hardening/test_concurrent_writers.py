"""Concurrent writers: two processes compile different models into one ``--out`` (so one
TORCH_TRACE folder) at the same time, over the stale output of an earlier run of both.

Every artifact is valid, none is lost or interleaved: each model's log holds only its own
process's records, each graph folder is byte-identical to the same model compiled alone,
and each model has its bundles and pages. Two compiles in parallel (~20 s on 2 cores).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from helpers.fresh_process import FRESH  # tests/ is on sys.path
from spyre_provenance.logs import tracelog
from spyre_provenance.model.names import (
    DIAGNOSTICS,
    KERNEL_STACK_TRACES,
    NODE_MAPPINGS,
    OPSPEC_DEBUG_HANDLES,
    SOURCE_LINES,
)
from spyre_provenance.validate import paths as path_validation
from spyre_provenance.validate import schemas

pytestmark = pytest.mark.compile

MODELS = ("mlp", "residual")


@pytest.fixture(scope="module")
def shared_out(compile_case, tmp_path_factory: pytest.TempPathFactory) -> Path:
    alone = {model: compile_case(model) for model in MODELS}  # the session's solo compiles
    for model, case in alone.items():
        assert case.returncode == 0, f"{model}: " + case.stdout + case.stderr[-2000:]
    out = tmp_path_factory.mktemp("shared") / "out"
    # an earlier run of both models left its output (and a dead writer's temporary) behind
    for case in alone.values():
        shutil.copytree(case.out, out, dirs_exist_ok=True)
    (out / "graph_mlp_00_0-0_inference" / ".spyre-provenance-tmp-999999999-x.part").write_bytes(b"stale")

    procs = {model: FRESH.start("compile", model, "--out", out) for model in MODELS}
    for model, proc in procs.items():
        stdout, stderr = proc.communicate(timeout=900)
        assert proc.returncode == 0, f"{model}: {stdout}{stderr[-3000:]}"
        assert "artifacts: " in stdout and "all valid" in stdout, stdout
    return out


def graph_folders(out: Path, model: str) -> list[Path]:
    return sorted(out.glob(f"graph_{model}_*"))


def test_layout_has_each_models_output_once(shared_out: Path) -> None:
    # each model's log and the marker naming the model its label stands for
    expected = sorted(f"{m}{suffix}" for m in MODELS for suffix in (".log", ".model"))
    assert sorted(p.name for p in (shared_out / "trace").iterdir()) == expected
    for model in MODELS:
        assert graph_folders(shared_out, model), model
        assert any((shared_out / "sdsc" / model).rglob("sdsc_*.json")), model
        assert any((shared_out / "tlparse" / model).glob("provenance_tracking_*.html")), model
    assert not list(shared_out.rglob(".spyre-provenance-tmp-*"))  # the dead writer's temporary is gone


def test_every_artifact_is_valid(shared_out: Path) -> None:
    reports = path_validation.validate_paths([shared_out])
    assert all(r.ok for r in reports), [r for r in reports if not r.ok]
    # 4 artifacts per graph, in files and in logs: a valid file is named on its log record's
    # result (``copies``), where it is not a result of its own
    results = path_validation.check_paths([str(shared_out)])
    assert len(results) == len(reports)
    assert len(results) + sum(len(r.copies) for r in results) >= 2 * 4 * len(MODELS)


def test_each_log_holds_one_process_and_one_model(shared_out: Path) -> None:
    pids = {}
    for model in MODELS:
        data = (shared_out / "trace" / f"{model}.log").read_bytes()
        found = {m["pid"] for line in data.splitlines() if (m := tracelog.GLOG_PREFIX.match(line))}
        assert len(found) == 1, (model, found)  # never interleaved with the other run's records
        pids[model] = found.pop()
        assert [
            p
            for p in tracelog.read_trace(shared_out / "trace" / f"{model}.log", names=None)
            if isinstance(p, schemas.Problem)
        ] == []  # no damaged record
    assert pids["mlp"] != pids["residual"]


def test_artifacts_are_those_of_each_model_compiled_alone(shared_out: Path, compile_case) -> None:
    names = {f"{a}.json" for a in (NODE_MAPPINGS, KERNEL_STACK_TRACES, OPSPEC_DEBUG_HANDLES, DIAGNOSTICS, SOURCE_LINES)}
    for model in MODELS:
        alone = compile_case(model).out
        mine = graph_folders(shared_out, model)
        assert [p.name for p in mine] == [p.name for p in graph_folders(alone, model)]
        for folder in mine:
            assert {p.name for p in folder.iterdir()} == names, folder
            for name in names:
                assert (folder / name).read_bytes() == (alone / folder.name / name).read_bytes(), (folder, name)
        # and the log's mapping is the file's
        logged = [
            json.loads(p)
            for _, n, p in tracelog.artifact_payloads(shared_out / "trace" / f"{model}.log")
            if n == NODE_MAPPINGS
        ]
        assert logged == [json.loads((f / f"{NODE_MAPPINGS}.json").read_bytes()) for f in mine]
