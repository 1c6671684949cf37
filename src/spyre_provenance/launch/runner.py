"""``run``'s engine: any program, unmodified, with every ``torch.compile`` in it and in
every Python process it starts tracked.

A launcher, as ``torchrun``, ``nsys profile`` or ``py-spy record --`` are: COMMAND runs with
``SPYRE_PROVENANCE_OUT=OUT`` (and ``SPYRE_PROVENANCE_BACKEND``) in its environment, which
every Python process of this environment reads at start-up (``spyre_provenance_startup``,
then ``capture.attach``), so a script, ``python -m``, ``torchrun``, a console script or a
shell script that starts Python are all tracked, each process into its own folder of OUT
(``Layout.processes``). This environment's ``bin`` comes first on COMMAND's ``PATH``, so
``python`` and ``torchrun`` are the ones the package is installed in (as ``uv run`` does).

COMMAND's stdin, stdout and stderr are its own; SIGINT and SIGTERM sent to ``run`` are
passed on to it. Its status is as a shell gives it (128+N when a signal N ended it; 127
when COMMAND is not found, 126 when it cannot be executed). ``Runner`` returns what the
command prints: the screen (``launch.run_summary``), then the pages (``launch.end_report``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import threading
from collections.abc import Callable
from pathlib import Path
from types import FrameType, TracebackType
from typing import TYPE_CHECKING

import msgspec

from spyre_provenance.base import environment
from spyre_provenance.base.errors import UnusableInput
from spyre_provenance.launch.early_end import POLL, EarlyEnd
from spyre_provenance.model.layout import Layout

if TYPE_CHECKING:  # imported when COMMAND has ended, not before it starts
    from spyre_provenance.launch.end_report import RunPages

EXIT_NOT_FOUND = 127  # what a shell exits with for a command it cannot find
EXIT_NOT_EXECUTABLE = 126  # ... and for one it cannot execute
#: The signals ``run`` passes on to COMMAND instead of ending by them itself.
FORWARDED = (signal.SIGINT, signal.SIGTERM)


class Ran(msgspec.Struct):
    """COMMAND as it ended: its exit status, and the lines ``run`` prints then (stderr:
    stdout is the program's): why it did not start, if so, then the screen."""

    status: int
    lines: list[str]
    processes: int  # how many tracked processes the screen names: no pages without one


class Runner:
    """One ``run`` into ``out``: prepared as it is made (an earlier run's output goes; a
    folder holding anything else is refused, exit 2, before COMMAND starts), ``run`` to
    COMMAND's end, then ``pages``; a context manager, for the threads of the early end."""

    def __init__(self, out: Path, *, backend: str | None, pages: bool) -> None:
        self.out = out
        self.layout = Layout(out)  # where each process's folder and the pages go
        self.backend = backend
        self.write_pages = pages
        self._users = out.is_dir() and not any(out.iterdir())  # an empty folder the user made: stays
        prepare(out)
        #: said before COMMAND starts
        self.warnings = [] if startup_hook_installed() else [_NO_HOOK]
        self.tlparse = _tlparse() if pages else None
        self._early = EarlyEnd(self.layout, pages=pages, tlparse=self.tlparse)
        self._stack = contextlib.ExitStack()

    def __enter__(self) -> Runner:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._stack.close()
        self._early.close()

    def run(self, command: list[str]) -> Ran:
        """COMMAND to its end, then the run's screen."""
        from spyre_provenance.launch import end_report as report
        from spyre_provenance.launch import run_summary
        from spyre_provenance.validate.read_once import reading_once

        env = {**child_environment(self.out, self.backend), **self._early.environment}
        status, lines = launch(command, env, self._early.poll)
        if not self._users:
            remove_if_empty(self.out)
        self._ended = self._early.ended()
        self._stack.enter_context(reading_once())  # each log read for its line and viewer page
        self._processes = self.layout.processes()  # listed once: the screen and the pages are of these
        self._summaries = report.summaries(self._processes, self._ended)
        lines += run_summary.render(self._summaries, self.out, self._early.other_backends())
        return Ran(status, lines, len(self._summaries))

    def pages(self) -> RunPages:
        """The run's pages, after ``run``: tlparse's and the viewer's."""
        from spyre_provenance.launch import end_report as report

        return report.pages(self._processes, self.layout.pages_root, self._summaries, _tlparse(), self._ended)


_NO_HOOK = (
    f"spyre-provenance run: warning: {environment.STARTUP_FILE} is not in this environment's site-packages"
    " (an install from before it existed?): no process will be tracked; reinstall spyre-provenance"
)


def startup_hook_installed() -> bool:
    """Whether this environment's site-packages holds the start-up hook's ``.pth`` file,
    without which no Python process of COMMAND reads ``SPYRE_PROVENANCE_OUT``."""
    return any(
        os.path.isfile(os.path.join(site, environment.STARTUP_FILE))
        for site in {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    )


def child_environment(out: Path, backend: str | None) -> dict[str, str]:
    """COMMAND's environment: this one, tracking switched on into ``out``, this
    environment's ``bin`` first on ``PATH``."""
    env = dict(os.environ)
    env[environment.OUT] = str(out)
    if backend is not None:
        env[environment.BACKEND] = backend
    here = os.path.dirname(sys.executable)
    env["PATH"] = os.pathsep.join([here, *(p for p in env.get("PATH", "").split(os.pathsep) if p and p != here)])
    return env


def launch(command: list[str], env: dict[str, str], waiting: Callable[[], None]) -> tuple[int, list[str]]:
    """COMMAND to its end, SIGINT and SIGTERM passed on, ``waiting`` called every ``POLL``
    seconds meanwhile: its exit status as a shell gives it, and why it did not start."""
    try:
        child = subprocess.Popen(command, env=env)
    except FileNotFoundError:
        return EXIT_NOT_FOUND, [f"spyre-provenance run: {command[0]}: command not found"]
    except PermissionError as exc:
        return EXIT_NOT_EXECUTABLE, [f"spyre-provenance run: {command[0]}: cannot execute: {exc.strerror}"]

    def forward(signum: int, frame: FrameType | None) -> None:
        if child.poll() is None:
            child.send_signal(signum)

    # a thread blocks in wait() while this one wakes once per POLL (Popen.wait(timeout)
    # would wake every 0.5 to 50 ms) and still runs the signal handlers above
    exited = threading.Event()

    def wait() -> None:
        child.wait()
        exited.set()

    threading.Thread(target=wait, daemon=True).start()
    previous = {sig: signal.signal(sig, forward) for sig in FORWARDED}
    try:
        while not exited.wait(POLL):
            waiting()
        code = child.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return (code if code >= 0 else 128 - code), []


def prepare(out: Path) -> None:
    """An empty ``out``, or one holding only an earlier run's output (which goes); anything
    else is refused, exit 2, before COMMAND starts."""
    if out.exists() and not out.is_dir():
        raise UnusableInput(str(out), "exists and is not a folder")
    if not out.is_dir():
        return
    layout = Layout(out)
    ours = {layout.out / f.name for f, _ in layout.processes()} | {layout.pages_root, layout.viewer_page}
    # a link is no run's output, whatever its name: never removed through, never replaced
    strangers = sorted(p.name for p in out.iterdir() if p not in ours or p.is_symlink())
    if strangers:
        shown = ", ".join(strangers[:3]) + (f" and {len(strangers) - 3} more" if len(strangers) > 3 else "")
        raise UnusableInput(str(out), f"holds what no run wrote ({shown}); use another --out")
    for path in sorted(ours):
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()


def remove_if_empty(out: Path) -> None:
    """``out`` goes when no process left anything in it (a program that compiled nothing
    tracking records): an empty folder says nothing."""
    with contextlib.suppress(OSError):  # not empty, or not there: it stays as it is
        out.rmdir()


def _tlparse() -> str | None:
    from spyre_provenance.logs import tlparse_render

    return tlparse_render.tlparse_binary()
