"""Programs run the way a user runs them: ``spyre-provenance run [--out OUT] -- COMMAND``,
or with ``SPYRE_PROVENANCE_OUT`` alone, in fresh processes (``helpers.fresh_process``:
the checkout's ``src`` first, no parent ``TORCH_TRACE``). The programs are in
``tests/attach/programs/``; each is run once per session by its test module's fixture."""

from __future__ import annotations

import socket
import subprocess
import sys
import sysconfig
import time
from collections.abc import Mapping
from pathlib import Path

import msgspec
import pytest

from helpers.fresh_process import TIMEOUT, environment

PROGRAMS = Path(__file__).resolve().parents[1] / "attach" / "programs"
#: the start-up hook's file in this interpreter's site-packages (the editable install puts it
#: there; an environment installed before it existed has none, and tracks nothing)
STARTUP = Path(sysconfig.get_paths()["purelib"]) / "spyre_provenance_startup.pth"

needs_startup_hook = pytest.mark.skipif(
    not STARTUP.is_file(),
    reason=f"{STARTUP} is missing: this environment's install predates the start-up hook (reinstall the package)",
)


class Ran(msgspec.Struct):
    """One program's run: its folder and what it printed, as the user saw it."""

    out: Path
    returncode: int
    stdout: str
    stderr: str

    def folders(self) -> list[Path]:
        from spyre_provenance.model.layout import Layout

        return [layout.out for _, layout in Layout(self.out).processes()]


#: how torch's own teardown of a gloo DDP job ends a rank now and then: SIGABRT after its
#: interpreter is gone (no Python frame left, PYTHONFAULTHANDLER says; the rank printed its
#: loss and its folder is complete). Untracked, programs/ddp_train.py with the caches on ended
#: so in 4 of 151 runs here, 2 of them with its DDP model deleted before destroy_process_group.
TEARDOWN_ABORT = "terminate called without an active exception"


def torch_aborted_in_teardown(ran: Ran, ranks: int = 2) -> bool:
    """Every rank printed its loss and torchrun names a rank SIGABRT ended, after the
    message torch's C++ runtime prints as it aborts (``TEARDOWN_ABORT``)."""
    losses = [line for line in ran.stdout.splitlines() if line.startswith("rank ") and " loss " in line]
    return len(losses) == ranks and TEARDOWN_ABORT in ran.stderr and "(SIGABRT)" in ran.stderr


def run_command(out: Path, *command: object, options: tuple[str, ...] = ()) -> list[str]:
    """``spyre-provenance run --out OUT [options] -- COMMAND``, as argv."""
    return [sys.executable, "-m", "spyre_provenance", "run", "--out", str(out), *options, "--", *map(str, command)]


def run_program(out: Path, *command: object, env: Mapping[str, str] | None = None, timeout: float = TIMEOUT) -> Ran:
    done = subprocess.run(
        run_command(out, *command), capture_output=True, text=True, env=environment(env), timeout=timeout
    )
    return Ran(out, done.returncode, done.stdout, done.stderr)


def start_program(argv: list[str], log: Path, *, env: Mapping[str, str] | None = None) -> subprocess.Popen[bytes]:
    """``argv`` started in a session of its own (a signal to its group reaches every process
    of it), stdout into ``log.stdout``, stderr into ``log.stderr``."""
    with open(f"{log}.stdout", "wb") as stdout, open(f"{log}.stderr", "wb") as stderr:
        return subprocess.Popen(argv, stdout=stdout, stderr=stderr, env=environment(env), start_new_session=True)


def wait_for_line(path: Path, prefix: str, process: subprocess.Popen[bytes], timeout: float = TIMEOUT) -> str:
    """The first line of ``path`` starting with ``prefix``, once the program printed it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = path.read_text() if path.exists() else ""
        for line in text.splitlines():
            if line.startswith(prefix):
                return line
        if process.poll() is not None:
            raise AssertionError(f"the program ended ({process.returncode}) before printing {prefix!r}: {text[-2000:]}")
        time.sleep(0.2)
    raise AssertionError(f"no {prefix!r} line in {path} after {timeout} s")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cli(*args: object, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """A reading command on a run's folder (``validate``, ``open``, ...), in a fresh process."""
    return subprocess.run(
        [sys.executable, "-m", "spyre_provenance", *map(str, args)],
        capture_output=True,
        text=True,
        env=environment(),
        cwd=cwd,
        timeout=TIMEOUT,
    )


def leftovers(folder: Path) -> list[Path]:
    """A writer's temporaries left behind (``base.files``): torn files."""
    from spyre_provenance.base.files import TMP_PREFIX

    return [p for p in folder.rglob("*") if p.name.startswith(TMP_PREFIX)]
