"""A project's own strict test suite, tracked from outside (issue 55 point 2).

Suites commonly turn every warning into an error (``filterwarnings = error``). pytest warns
``Module already imported so cannot be rewritten`` for a ``pytest11`` plugin's package that
was imported before pytest marked it for rewriting; if the start-up hook imported
``spyre_provenance``, such a suite stopped at collection under ``SPYRE_PROVENANCE_OUT`` or
``run`` while it passed plain. Here a real strict suite (``programs/strict_suite/``: one test
compiles, one uses the ``provenance_regression`` fixture of this package's pytest plugin)
runs plain, with the variable, and under ``run``: the same outcomes each time, and the
tracked runs recorded the compile.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.fresh_process import TIMEOUT, environment
from helpers.run_program import PROGRAMS, STARTUP, needs_startup_hook, run_command
from spyre_provenance.logs.graphs import read_log_graphs
from spyre_provenance.model.layout import Layout

pytestmark = [pytest.mark.compile, needs_startup_hook]
SUITE = PROGRAMS / "strict_suite"
#: the start-up hook of this checkout, which the tracked runs below must be started by
HOOK = Path(__file__).resolve().parents[2] / "src" / STARTUP.name


def _pytest(suite: Path, *args: str, env: dict[str, str] | None = None, out: Path | None = None) -> str:
    """The suite's ``pytest -p no:cacheprovider -q -rA --show-capture=no`` (with ``run`` around it when ``out``
    is given); its outcome lines and exit status as one text."""
    argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rA", "--show-capture=no", *args]
    if out is not None:
        argv = run_command(out, *argv, options=("--no-pages",))
    done = subprocess.run(argv, cwd=suite, capture_output=True, text=True, env=environment(env), timeout=TIMEOUT)
    outcomes = sorted(line for line in done.stdout.splitlines() if line.startswith(("PASSED ", "FAILED ", "ERROR ")))
    return "\n".join([f"exit {done.returncode}", *outcomes]) + "\n--\n" + done.stdout[-3000:] + done.stderr[-3000:]


@pytest.fixture(scope="module")
def suite(tmp_path_factory) -> Path:
    """The suite in a folder of its own, its golden made by a plain first run."""
    if STARTUP.read_bytes() != HOOK.read_bytes():
        pytest.fail(f"{STARTUP} is not this checkout's {HOOK}: reinstall the package (make venv)")
    copy = tmp_path_factory.mktemp("strict") / "suite"
    shutil.copytree(SUITE, copy)
    first = _pytest(copy, env={"SPYRE_PROVENANCE_OUT": ""})
    assert first.startswith("exit 1\nFAILED test_suite.py::test_the_block_keeps_its_provenance"), first
    assert "provenance golden created" in first, first
    return copy


def _outcomes(text: str) -> str:
    return text.split("\n--\n")[0]


def test_the_strict_suite_passes_plain_and_tracked_alike(suite, tmp_path):
    plain = _pytest(suite, env={"SPYRE_PROVENANCE_OUT": ""})
    assert _outcomes(plain) == (
        "exit 0\nPASSED test_suite.py::test_a_compiled_function\n"
        "PASSED test_suite.py::test_the_block_keeps_its_provenance"
    ), plain
    by_variable = _pytest(suite, env={"SPYRE_PROVENANCE_OUT": str(tmp_path / "env")})
    under_run = _pytest(suite, env={"SPYRE_PROVENANCE_OUT": ""}, out=tmp_path / "run")
    for tracked in (by_variable, under_run):
        assert "PytestAssertRewriteWarning" not in tracked, tracked
        assert _outcomes(tracked) == _outcomes(plain), tracked
    for out in (tmp_path / "env", tmp_path / "run"):
        ((process, layout),) = Layout(out).processes()  # pytest's one process: the suite compiled there
        assert process.program == "pytest"
        (log,) = layout.trace_logs()
        graphs = read_log_graphs(log)
        assert graphs and all(g.diagnostics["complete"] for g in graphs), os.listdir(layout.out)
