"""A test suite this project did not write, run plain and tracked (issue 55 point 8): einops'
own tests, shipped in its wheel, those of ``torch.compile`` (``-k torch_compile``: functions
and layers, static and dynamic shapes, forward and backward), on the torch they run with.
The same outcomes and warnings either way, and under ``run`` every compile recorded
complete. Each side compiles cold, in an Inductor cache dir of its own, with Inductor's
caches as a user has them (on). Two pytest runs.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from helpers.fresh_process import environment
from helpers.run_program import Ran, needs_startup_hook, run_command
from helpers.where import on_measured_torch

pytestmark = [
    pytest.mark.compile,
    needs_startup_hook,
    # whole programs, minutes of CI: on the next torches the seams they rest on are held by
    # tests/compile/test_cache.py and test_cached_artifacts.py
    pytest.mark.skipif(not on_measured_torch(), reason="run on torch 2.13 only (the next torches: test_cache.py)"),
]

SUITE = ("-m", "pytest", "--pyargs", "einops.tests", "-k", "torch_compile", "-p", "no:cacheprovider", "-q")


def _env(tmp_path, side: str) -> dict[str, str]:
    # the suite's own setting (tests/conftest.py turns the caches off) is not the user's
    env = {"EINOPS_TEST_BACKENDS": "torch", "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / f"cache-{side}")}
    env.update(TORCHINDUCTOR_FX_GRAPH_CACHE="1", TORCHINDUCTOR_AUTOGRAD_CACHE="1")
    return env


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> tuple[subprocess.CompletedProcess[str], Ran]:
    pytest.importorskip("einops.tests", reason="einops (the [test] extra) is not installed")
    root = tmp_path_factory.mktemp("peer")
    done = {}
    for side, argv in (
        ("plain", [sys.executable, *SUITE]),
        ("tracked", run_command(root / "out", sys.executable, *SUITE)),
    ):
        # both from one empty folder: no pytest configuration of ours applies to either
        env = environment(_env(root, side))
        done[side] = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=root, timeout=900)
    tracked = done["tracked"]
    return done["plain"], Ran(root / "out", tracked.returncode, tracked.stdout, tracked.stderr)


def _outcome(stdout: str) -> tuple[str, list[str]]:
    """pytest's closing line without its time, and its warnings summary."""
    lines = stdout.splitlines()
    closing = re.sub(r" in [0-9.]+s.*$", "", lines[-1])
    start = next((i for i, line in enumerate(lines) if "warnings summary" in line), len(lines))
    return closing, [line for line in lines[start:-1] if not line.startswith("DEBUG")]


def test_the_suite_has_the_same_outcome_and_warnings_tracked(runs) -> None:
    plain, tracked = runs
    assert plain.returncode == tracked.returncode == 0, plain.stdout[-2000:] + tracked.stdout[-2000:]
    closing, warned = _outcome(plain.stdout)
    assert re.fullmatch(r"[0-9]+ passed, [0-9]+ deselected(, [0-9]+ warnings)?", closing), closing
    assert _outcome(tracked.stdout) == (closing, warned)


def test_every_compile_of_the_suite_is_recorded_complete(runs) -> None:
    _, tracked = runs
    (line,) = [line for line in tracked.stderr.splitlines() if "graph(s)" in line]
    assert line.endswith(": complete"), tracked.stderr[-3000:]
    assert "UNFINISHED" not in tracked.stderr and "NOT RECORDED" not in tracked.stderr
    (folder,) = tracked.folders()
    diagnostics = [json.loads(p.read_bytes()) for p in folder.glob("graph_*/spyre_provenance_diagnostics.json")]
    kinds = {d["graph"] for d in diagnostics}
    assert len(diagnostics) >= 3 and {"forward", "backward"} <= kinds, kinds
    assert all(d["complete"] for d in diagnostics)
