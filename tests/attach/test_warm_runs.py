"""Warm starts of programs tracked from outside (issue 54): the same program run twice under
``run`` over one TORCHINDUCTOR_CACHE_DIR, and a DDP job of two torchrun ranks sharing one
cache dir, twice. The first run of each compiles and writes the cache (the two ranks into
the same dir, at once: whichever writes an entry, both record the graph); the second starts
warm. Every folder is complete, and a warm one holds what the cold one did.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers.run_program import PROGRAMS, Ran, free_port, needs_startup_hook, run_program, torch_aborted_in_teardown
from helpers.where import on_measured_torch
from spyre_provenance.golden.normalize import normalize
from spyre_provenance.logs import tracelog

pytestmark = [
    pytest.mark.compile,
    needs_startup_hook,
    # whole programs, minutes of CI: on the next torches the seams they rest on are held by
    # tests/compile/test_cache.py and test_cached_artifacts.py
    pytest.mark.skipif(not on_measured_torch(), reason="run on torch 2.13 only (the next torches: test_cache.py)"),
]

HIT_ARTIFACTS = ("fx_graph_cache_hit", "aotautograd_cache_hit")
CACHES_ON = {"TORCHINDUCTOR_FX_GRAPH_CACHE": "1", "TORCHINDUCTOR_AUTOGRAD_CACHE": "1"}


def _twice(root: Path, *command: object) -> tuple[Ran, Ran]:
    env = {**CACHES_ON, "TORCHINDUCTOR_CACHE_DIR": str(root / "cache")}
    cold = run_program(root / "cold", *command, env=env)
    warm = run_program(root / "warm", *command, env=env)
    return cold, warm


@pytest.fixture(scope="module")
def plain(tmp_path_factory) -> tuple[Ran, Ran]:
    return _twice(tmp_path_factory.mktemp("warm-plain"), "python", PROGRAMS / "plain.py")


@pytest.fixture(scope="module")
def ddp(tmp_path_factory) -> tuple[Ran, Ran]:
    """Cold then warm, over a fresh cache dir; once more from scratch if torch's teardown
    aborted a rank (``run_program.TEARDOWN_ABORT``): an abort in both attempts would be no accident."""
    for attempt in range(2):
        root = tmp_path_factory.mktemp(f"warm-ddp-{attempt}")
        ran = _twice(
            root, "torchrun", "--nproc-per-node", "2", "--master-port", str(free_port()), PROGRAMS / "ddp_train.py"
        )
        if not any(torch_aborted_in_teardown(r) for r in ran):
            break
    return ran


def _graph_docs(folder: Path) -> dict[str, object]:
    """Each graph file of a process folder, normalized as golden compares it; the
    diagnostics without ``cache``, which says how the graph was had."""
    docs: dict[str, object] = {}
    for path in sorted(folder.glob("graph_*/*.json")):
        doc = json.loads(path.read_bytes())
        if path.stem == "spyre_provenance_diagnostics":
            doc.pop("cache")
        docs[f"{path.parent.name}/{path.name}"] = normalize(path.stem, doc)
    return docs


def _caches(folder: Path) -> list[str]:
    return [
        json.loads(p.read_bytes())["cache"] for p in sorted(folder.glob("graph_*/spyre_provenance_diagnostics.json"))
    ]


def _hits(folder: Path) -> list[str]:
    return [
        name
        for log in folder.glob("trace/*.log")
        for _, name, _ in tracelog.artifact_payloads(log)
        if name in HIT_ARTIFACTS
    ]


@pytest.mark.parametrize("case", ["plain", "ddp"])
def test_cold_and_warm_runs_compute_the_same_and_are_complete(case, request) -> None:
    cold, warm = request.getfixturevalue(case)
    for ran in (cold, warm):
        assert ran.returncode == 0, ran.stdout + ran.stderr[-3000:]
    outputs = [
        sorted(line for line in ran.stdout.splitlines() if line.startswith(("result", "rank"))) for ran in (cold, warm)
    ]
    assert outputs[0] and outputs[0] == outputs[1]
    for ran in (cold, warm):
        processes = [line for line in ran.stderr.splitlines() if "graph(s)" in line]
        assert processes and all(line.endswith(": complete") for line in processes), ran.stderr


@pytest.mark.parametrize("case", ["plain", "ddp"])
def test_a_warm_run_records_what_the_cold_run_did_and_says_it_came_from_the_cache(case, request) -> None:
    cold, warm = request.getfixturevalue(case)
    cold_folders, warm_folders = cold.folders(), warm.folders()
    assert len(cold_folders) == len(warm_folders) == (2 if case == "ddp" else 1)
    for before, after in zip(cold_folders, warm_folders, strict=True):
        assert _caches(before) and set(_caches(before)) == {"compiled"}
        assert set(_caches(after)) == {"cached"}, after
        assert _hits(after) and not _hits(before)
        assert _graph_docs(after) == _graph_docs(before)
    graphs = [line for line in warm.stderr.splitlines() if "graph(s)" in line]
    assert graphs and all("from Inductor's cache)" in line for line in graphs), warm.stderr
