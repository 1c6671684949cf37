"""A process folder is the process's own (issue 55 point 11).

In a container the program is often pid 1 on every start: two runs of ``python train.py``
into one ``SPYRE_PROVENANCE_OUT`` (a mounted volume) both name their folder ``train_pid1``.
Here the clash is real: each run is the first process of a pid namespace of its own
(``unshare --pid --fork``). And ``OUT`` is shared: a link another user put there, named as
the second run's folder would be, points at a folder of theirs. Each process claims a
folder no one has (a name taken gets the next, said on stderr), appends to and replaces
nothing of another's, and never writes through the link.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.fresh_process import TIMEOUT, environment
from helpers.run_program import PROGRAMS, cli, needs_startup_hook
from spyre_provenance.logs.graphs import read_log_graphs
from spyre_provenance.model.layout import Layout

pytestmark = [pytest.mark.compile, needs_startup_hook]
UNSHARE = shutil.which("unshare")


def _pid_namespace_works() -> bool:
    if UNSHARE is None:
        return False
    done = subprocess.run([UNSHARE, "--pid", "--fork", "true"], capture_output=True, timeout=60)
    return done.returncode == 0


needs_pid_namespaces = pytest.mark.skipif(
    not _pid_namespace_works(), reason="unshare --pid --fork is not permitted here (needs root or user namespaces)"
)


def _first_process(program: Path, out: Path) -> subprocess.CompletedProcess[str]:
    """``python program`` as pid 1 of a pid namespace of its own, tracked into ``out``."""
    return subprocess.run(
        [str(UNSHARE), "--pid", "--fork", sys.executable, str(program)],
        capture_output=True,
        text=True,
        env=environment({"SPYRE_PROVENANCE_OUT": str(out)}),
        timeout=TIMEOUT,
    )


@needs_pid_namespaces
def test_two_first_processes_into_one_out_each_get_a_folder_of_their_own(tmp_path):
    out, theirs = tmp_path / "out", tmp_path / "theirs"
    out.mkdir()
    theirs.mkdir()
    (out / "plain_pid1-2").symlink_to(theirs)  # another user's link, named as the second claim would be
    program = PROGRAMS / "plain.py"
    first = _first_process(program, out)
    assert first.returncode == 0, first.stderr[-3000:]
    assert "spyre-provenance" not in first.stderr  # its name was free: nothing to say
    second = _first_process(program, out)
    assert second.returncode == 0, second.stderr[-3000:]
    assert first.stdout == second.stdout  # the program's own output, whatever the folder
    assert (
        f"spyre-provenance: {out / 'plain_pid1'} is taken (another process's folder, or a link):"
        f" this process's folder is {out / 'plain_pid1-3'}\n"
    ) in second.stderr

    assert list(theirs.iterdir()) == []  # nothing written through the link
    processes = Layout(out).processes()
    assert [p.name for p, _ in processes] == ["plain_pid1", "plain_pid1-3"]
    for process, layout in processes:
        assert process.pid == 1
        (log,) = layout.trace_logs()
        (graph,) = read_log_graphs(log)  # one compile each: nothing appended to the other's log
        assert graph.diagnostics["complete"] is True
        assert len(list(layout.out.glob("graph_*"))) == 1
    done = cli("validate", out)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr
    said = [line.split(",")[0].split()[:3] for line in done.stdout.splitlines() if line.startswith("  plain_pid")]
    assert said == [["plain_pid1", "1", "graph(s)"], ["plain_pid1-3", "1", "graph(s)"]], done.stdout
    assert os.path.islink(out / "plain_pid1-2")  # the link is left as it was
