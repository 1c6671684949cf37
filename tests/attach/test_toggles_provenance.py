"""A program that switches Inductor's provenance tracking itself (issue 55 point 1), as
PyTorch's own provenance tests do (``programs/toggles_provenance.py``): a compile under
``config.patch("trace.provenance_tracking_level", 1)``, one after the patch ended, one after
setting the level to 0. Tracked from outside with ``run``, every compile is recorded, none is
called unfinished, and the program reads back the level it set, as plain. Two runs.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from helpers.fresh_process import environment
from helpers.run_program import PROGRAMS, needs_startup_hook, run_program

pytestmark = [pytest.mark.compile, needs_startup_hook]

PROGRAM = PROGRAMS / "toggles_provenance.py"


def test_every_compile_is_recorded_whatever_the_program_sets(tmp_path) -> None:
    tracked = run_program(tmp_path / "out", "python", PROGRAM)
    plain = subprocess.run(
        [sys.executable, str(PROGRAM)], capture_output=True, text=True, env=environment(), timeout=600
    )
    assert tracked.returncode == plain.returncode == 0, tracked.stderr[-3000:] + plain.stderr[-3000:]
    assert tracked.stdout == plain.stdout  # the results, and "level 0" read back
    assert plain.stdout.splitlines()[-1] == "level 0"
    (line,) = [line for line in tracked.stderr.splitlines() if "graph(s)" in line]
    assert line.endswith("3 graph(s), 3/3 kernel call site(s) linked: complete"), tracked.stderr
    assert "UNFINISHED" not in tracked.stderr and "NOT RECORDED" not in tracked.stderr
    (folder,) = tracked.folders()
    assert len(list(folder.glob("graph_*/inductor_provenance_tracking_node_mappings.json"))) == 3
