"""The eager program of ``tests/scripts/eager`` (per-op compiles reused from several functions,
profiled with stacks), run once per session for every test module that reads it
(``tests/compile/test_eager_runtime.py``, ``tests/browser/test_viewer_eager.py``): it runs at one
place under the session's base temp folder, and a second module finds it done there."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.fresh_process import TIMEOUT, environment
from helpers.where import SCRIPTS
from spyre_provenance.runtime import index as kernel_index

PROGRAM = SCRIPTS / "eager" / "program.py"


class EagerRun:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.out = root / "out"
        self.log_dir = root / "torch_trace"
        self.trace = root / "trace.json"

    @property
    def events(self) -> list[dict]:
        return json.loads(self.trace.read_text())["traceEvents"]

    def index(self) -> kernel_index.KernelIndex:
        return kernel_index.build([self.log_dir])


def eager_run(tmp_path_factory: pytest.TempPathFactory) -> EagerRun:
    """The program's run: its ``--out`` folder, TORCH_TRACE folder and profiled trace."""
    run = EagerRun(tmp_path_factory.getbasetemp() / "eager-run")
    done_marker = run.root / "done"
    if done_marker.is_file():
        return run
    run.root.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [sys.executable, str(PROGRAM), str(run.out), str(run.trace)],
        capture_output=True,
        text=True,
        env=environment({"TORCH_TRACE": str(run.log_dir)}),
        timeout=TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    done_marker.touch()
    return run
