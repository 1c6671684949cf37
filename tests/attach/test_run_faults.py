"""Faults (issue 45 point 5): a program that compiles once and then raises, calls
``sys.exit(3)`` or ``os._exit(3)``, is interrupted (SIGINT) in the middle of its run, is
stopped (SIGTERM) or killed (SIGKILL, with ``run`` itself) in the middle of its second
compile. Every finished compile's artifacts stay whole and valid, the exit status is the
program's (128+N for a signal), and the compile it did not finish is reported unfinished,
never complete.

The six runs of ``programs/faults.py`` start at once (the first compile's kernel is the same
in each, so the C++ compile is shared through Inductor's cache) and are read by every test.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from helpers.run_program import (
    PROGRAMS,
    Ran,
    cli,
    leftovers,
    needs_startup_hook,
    run_command,
    start_program,
    wait_for_line,
)
from spyre_provenance.launch import run_summary
from spyre_provenance.logs import tlparse_render
from spyre_provenance.logs.graphs import read_log_graphs

pytestmark = [pytest.mark.compile, needs_startup_hook]

#: mode of faults.py -> how the test ends it (None: it ends itself)
ENDINGS = {
    "raise": None,
    "exit3": None,
    "_exit3": None,
    "sigint": signal.SIGINT,  # to run, which passes it on, while the program waits
    "sigterm": signal.SIGTERM,  # to run, which passes it on, in the second compile
    "sigkill": signal.SIGKILL,  # to run and the program at once, in the second compile
}
PROGRAM_MODE = {"sigint": "wait", "sigterm": "stall", "sigkill": "stall"}


@pytest.fixture(scope="session")
def faults(tmp_path_factory) -> dict[str, Ran]:
    root = tmp_path_factory.mktemp("faults")
    started = {}
    for case in ENDINGS:
        argv = run_command(root / case, "python", PROGRAMS / "faults.py", PROGRAM_MODE.get(case, case))
        started[case] = start_program(argv, root / case)
    for case, how in ENDINGS.items():
        if how is not None:
            process = started[case]
            wait_for_line(Path(f"{root / case}.stdout"), "READY", process)
            if how == signal.SIGKILL:
                os.killpg(process.pid, how)  # the whole session: run, and the program it started
            else:
                process.send_signal(how)  # run alone: it passes the signal on
    ran = {}
    for case, process in started.items():
        code = process.wait(timeout=900)
        ran[case] = Ran(
            root / case, code, Path(f"{root / case}.stdout").read_text(), Path(f"{root / case}.stderr").read_text()
        )
    return ran


@pytest.mark.parametrize(
    ("case", "status"),
    [("raise", 1), ("exit3", 3), ("_exit3", 3), ("sigint", 128 + signal.SIGINT), ("sigterm", 128 + signal.SIGTERM)],
)
def test_run_exits_with_the_programs_status(faults, case, status):
    assert faults[case].returncode == status, faults[case].stderr[-3000:]


def test_a_killed_run_is_killed(faults):
    assert faults["sigkill"].returncode == -signal.SIGKILL
    assert "spyre-provenance run:" not in faults["sigkill"].stderr  # nothing of ours could print


@pytest.mark.parametrize("case", list(ENDINGS))
def test_the_finished_compile_is_whole_and_valid(faults, case):
    (folder,) = faults[case].folders()
    assert leftovers(folder) == []
    graphs = read_log_graphs(next((folder / "trace").glob("*.log")))
    finished = [g for g in graphs if g.output_code is not None and g.diagnostics is not None]
    assert [g.compile_id for g in finished] == ["[0/0]"]
    assert finished[0].diagnostics["complete"] is True
    (graph_folder,) = folder.glob("graph_*")
    assert sorted(p.name for p in graph_folder.iterdir()) == [
        "inductor_provenance_tracking_kernel_stack_traces.json",
        "inductor_provenance_tracking_node_mappings.json",
        "spyre_provenance_diagnostics.json",
        "spyre_source_lines.json",
    ]
    done = cli("validate", faults[case].out)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr
    assert "INVALID" not in done.stdout


@pytest.mark.parametrize("case", ["raise", "exit3", "_exit3", "sigint"])
def test_a_program_that_compiled_everything_it_started_is_complete(faults, case):
    (summary,) = run_summary.summarize_run(faults[case].out)
    assert (summary.word, summary.graphs, summary.unfinished) == ("complete", 1, [])
    assert f"{summary.folder.name}  1 graph(s), 1/1 kernel call site(s) linked: complete" in faults[case].stderr


@pytest.mark.parametrize("case", ["sigterm", "sigkill"])
def test_the_compile_it_stopped_in_is_unfinished_never_complete(faults, case):
    (summary,) = run_summary.summarize_run(faults[case].out)
    assert (summary.word, summary.graphs, summary.unfinished) == ("unfinished", 1, ["[1/0]"])
    done = cli("validate", faults[case].out)
    assert f"{summary.folder.name}  1 graph(s), 1/1 kernel call site(s) linked: unfinished" in done.stdout
    assert "compile [1/0] UNFINISHED" in done.stdout


def test_run_says_which_compile_was_unfinished(faults):
    assert "compile [1/0] UNFINISHED: the process stopped in the middle of it" in faults["sigterm"].stderr
    assert ": complete" not in faults["sigterm"].stderr


@pytest.mark.skipif(tlparse_render.tlparse_binary() is None, reason="tlparse is not installed")
def test_open_makes_the_pages_of_a_killed_run_later(faults):
    out = faults["sigkill"].out
    assert not (out / "tlparse").exists()  # run was killed before it could make them
    done = cli("open", out, "--no-browser")
    assert done.returncode == 0, done.stdout + done.stderr
    (folder,) = faults["sigkill"].folders()
    page = next(line.split()[-1] for line in done.stdout.splitlines() if line.startswith(f"{folder.name} [0/0]"))
    assert Path(page).is_file() and (folder / "view.html").is_file()
