"""Programs whose compiles go to a backend tracking does not record (issue 55 point 5):
``aot_eager``, ``eager``, a program's own backend function. Tracking records compiles
through Inductor; of another backend there is no kernel to record. ``run`` says which
backends are recorded and which one the run used instead, and leaves no empty folder.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.fresh_process import TIMEOUT, environment
from helpers.run_program import needs_startup_hook, run_program

pytestmark = [pytest.mark.compile, needs_startup_hook]

PROGRAM = """
import sys
import torch

def my_backend(gm, example_inputs):
    return gm.forward

backend = {"aot_eager": "aot_eager", "mine": my_backend}[sys.argv[1]]
f = torch.compile(lambda x: torch.relu(x) + 1, backend=backend)
print("result", f(torch.arange(-2.0, 2.0)).tolist())
"""


@pytest.fixture(scope="module")
def program(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("backends") / "other_backend.py"
    path.write_text(PROGRAM)
    return path


@pytest.mark.parametrize(("backend", "named"), [("aot_eager", "aot_eager"), ("mine", "my_backend")])
def test_run_names_the_backend_it_does_not_record_and_leaves_no_folder(program, tmp_path, backend, named):
    out = tmp_path / "run"
    ran = run_program(out, "python", program, backend)
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert ran.stdout == "result [1.0, 1.0, 1.0, 2.0]\n"  # the program's own output, as untracked
    (screen,) = [line for line in ran.stderr.splitlines() if line.startswith("spyre-provenance run:")]
    assert re.fullmatch(
        re.escape(
            "spyre-provenance run: nothing recorded: tracking records torch.compile's compiles through"
            ' Inductor (backend "inductor", the default; torch-spyre\'s compile through it too);'
            f" this run compiled with {named} instead (other-backend_pid"
        )
        + r"[0-9]+"
        + re.escape(f"); no folder left at {out}"),
        screen,
    ), ran.stderr
    assert not out.exists()


def test_a_folder_that_was_there_stays(program, tmp_path):
    """``OUT`` made by the user before the run is the user's: left, empty, as it was."""
    out = tmp_path / "mine"
    out.mkdir()
    ran = run_program(out, "python", program, "aot_eager")
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert "this run compiled with aot_eager instead" in ran.stderr
    assert ran.stderr.rstrip().endswith(f"; nothing in {out}"), ran.stderr
    assert out.is_dir() and not list(out.iterdir())


def test_the_variable_alone_leaves_no_folder_either(program, tmp_path):
    out = tmp_path / "env" / "out"
    done = subprocess.run(
        [sys.executable, str(program), "aot_eager"],
        capture_output=True,
        text=True,
        env=environment({"SPYRE_PROVENANCE_OUT": str(out)}),
        timeout=TIMEOUT,
    )
    assert (done.returncode, done.stdout) == (0, "result [1.0, 1.0, 1.0, 2.0]\n"), done.stderr[-3000:]
    assert "spyre-provenance" not in done.stderr  # nothing said where no run asked
    assert not (tmp_path / "env").exists()
