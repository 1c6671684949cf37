"""``spyre-provenance run [--out OUT] [--backend NAME] -- COMMAND [ARGS...]``: any program,
unmodified, with every ``torch.compile`` in it and in every Python process it starts tracked.

A launcher, as ``torchrun``, ``nsys profile`` or ``py-spy record --`` are: COMMAND runs with
``SPYRE_PROVENANCE_OUT=OUT`` (and ``SPYRE_PROVENANCE_BACKEND``) in its environment, which
every Python process of this environment reads at start-up (``spyre_provenance_startup``), so a
script, ``python -m``, ``torchrun``, a console script or a shell script that starts Python
are all tracked, each process into its own folder of OUT (``Layout.processes``). This
environment's ``bin`` comes first on COMMAND's ``PATH``, so ``python`` and ``torchrun`` are
the ones the package is installed in (as ``uv run`` does).

COMMAND's stdin, stdout and stderr are its own; SIGINT and SIGTERM sent to ``run`` are
passed on to it. When it ends, one screen goes to stderr (per process: graphs, kernel call
sites linked, verdict, and one line per op kind of its per-op compiles, torch-spyre's eager
mode; ``validate.run_summary``), then the pages: tlparse's (a multi-rank landing page for
torchrun's ranks; a process's per-op compiles' pages one line per op kind) and each
process's viewer page. ``run`` exits with COMMAND's status (128+N when a signal N ended it;
127 when COMMAND is not found, 126 when it cannot be executed, as a shell says), whatever
the verdict: ``validate OUT`` judges.
"""

from __future__ import annotations

import argparse
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
from types import FrameType
from typing import TYPE_CHECKING

from spyre_provenance.backends import BACKEND_NAMES
from spyre_provenance.base import environment
from spyre_provenance.base.errors import UnusableInput
from spyre_provenance.cli.run_end import POLL, EarlyEnd, ProcessEnd
from spyre_provenance.model.layout import Layout

if TYPE_CHECKING:
    from spyre_provenance.validate.run_summary import ProcessSummary

DEFAULT_OUT = Path("out") / "run"
EXIT_NOT_FOUND = 127  # what a shell exits with for a command it cannot find
EXIT_NOT_EXECUTABLE = 126  # ... and for one it cannot execute
#: The signals ``run`` passes on to COMMAND instead of ending by them itself.
FORWARDED = (signal.SIGINT, signal.SIGTERM)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        help=f"the run's folder: one folder per tracked process, the pages (default: {DEFAULT_OUT}); an earlier run's"
        " output there is replaced",
    )
    parser.add_argument(
        "--backend",
        choices=BACKEND_NAMES,
        default=None,
        help="what the processes' compiles are tracked on; auto (the default) = torch-spyre where the program"
        " loaded it, else stock Inductor: tracking never changes what the program compiles",
    )
    parser.add_argument("--no-pages", action="store_true", help="write no tlparse or viewer pages at the end")
    parser.add_argument("command", nargs=argparse.REMAINDER, metavar="-- COMMAND [ARGS...]", help="the program to run")


def run(args: argparse.Namespace) -> int:
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        raise UnusableInput("COMMAND", "nothing to run: spyre-provenance run [--out OUT] -- COMMAND [ARGS...]")
    out: Path = args.out.absolute()
    users = out.is_dir() and not any(out.iterdir())  # an empty folder the user made: stays
    _prepare(out)
    if not startup_hook_installed():
        print(
            f"spyre-provenance run: warning: {environment.STARTUP_FILE} is not in this environment's site-packages"
            " (an install from before it existed?): no process will be tracked; reinstall spyre-provenance",
            file=sys.stderr,
        )
    pages = not args.no_pages
    early = EarlyEnd(out, pages=pages, tlparse=_tlparse() if pages else None)
    try:
        status = _launch(command, {**_environment(out, args.backend), **early.environment}, early.poll)
        if not users:
            _remove_if_empty(out)
        _report(out, early.ended(), early.other_backends(), pages=pages)
    finally:
        early.close()
    return status


def startup_hook_installed() -> bool:
    """Whether this environment's site-packages holds the start-up hook's ``.pth`` file,
    without which no Python process of COMMAND reads ``SPYRE_PROVENANCE_OUT``."""
    return any(
        os.path.isfile(os.path.join(site, environment.STARTUP_FILE))
        for site in {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    )


def _environment(out: Path, backend: str | None) -> dict[str, str]:
    env = dict(os.environ)
    env[environment.OUT] = str(out)
    if backend is not None:
        env[environment.BACKEND] = backend
    here = os.path.dirname(sys.executable)
    env["PATH"] = os.pathsep.join([here, *(p for p in env.get("PATH", "").split(os.pathsep) if p and p != here)])
    return env


def _launch(command: list[str], env: dict[str, str], waiting: Callable[[], None]) -> int:
    """COMMAND to its end, SIGINT and SIGTERM passed on, ``waiting`` called every ``POLL``
    seconds meanwhile; its exit status as a shell gives it."""
    try:
        child = subprocess.Popen(command, env=env)
    except FileNotFoundError:
        print(f"spyre-provenance run: {command[0]}: command not found", file=sys.stderr)
        return EXIT_NOT_FOUND
    except PermissionError as exc:
        print(f"spyre-provenance run: {command[0]}: cannot execute: {exc.strerror}", file=sys.stderr)
        return EXIT_NOT_EXECUTABLE

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
    return code if code >= 0 else 128 - code


def _prepare(out: Path) -> None:
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


def _remove_if_empty(out: Path) -> None:
    """``out`` goes when no process left anything in it (a program that compiled nothing
    tracking records): an empty folder says nothing."""
    with contextlib.suppress(OSError):  # not empty, or not there: it stays as it is
        out.rmdir()


def _report(out: Path, ended: dict[str, ProcessEnd], other_backends: dict[str, list[str]], *, pages: bool) -> None:
    """The run's screen on stderr, then its pages (their lines on stderr too: stdout is the
    program's); what was made early of a process that had ended (``run_end``) is not made
    again."""
    from spyre_provenance.logs.graphs import reading_each_log_once
    from spyre_provenance.runtime.lookup import logged_per_op
    from spyre_provenance.validate import run_summary

    with reading_each_log_once():  # each log is read for its process's line and viewer page
        summaries = [
            ended[layout.out.name].summary
            if layout.out.name in ended
            else run_summary.summarize_process(process, layout, logged_per_op)
            for process, layout in Layout(out).processes()
        ]
        for line in run_summary.render(summaries, out, other_backends):
            print(line, file=sys.stderr)
        if not pages or not summaries:
            return
        lines = fold_pages(_pages(out, ended), summaries)
    width = max((len(label) for label, _ in lines), default=0)
    for label, where in lines:
        print(f"  {label.ljust(width)}  {where}", file=sys.stderr)


def _tlparse() -> str | None:
    from spyre_provenance.logs import tlparse_render

    return tlparse_render.tlparse_binary()


def _pages(out: Path, ended: dict[str, ProcessEnd] | None = None) -> list[tuple[str, str]]:
    """tlparse's pages and the viewer's, (label, page) lines in that order. tlparse runs in
    processes of its own while this one writes the viewer pages (they read and write
    different files), so the program's user waits for the longer of the two, not both."""
    from concurrent.futures import ThreadPoolExecutor

    from spyre_provenance.cli.open_command import run_pages, run_viewers
    from spyre_provenance.logs import tlparse_render

    ended = ended or {}
    rendered = {name: end.pages for name, end in ended.items() if end.pages is not None}
    written = {name: end.viewer for name, end in ended.items() if end.viewer is not None}
    tlparse = _tlparse()
    if tlparse is None:
        print(
            f"  tlparse pages: NOT WRITTEN: tlparse is not installed ({tlparse_render.INSTALL_HINT})", file=sys.stderr
        )
        return run_viewers(out, written)
    with ThreadPoolExecutor(max_workers=1) as pool:
        tlparse_pages = pool.submit(run_pages, tlparse, out, Layout(out).pages_root, viewers=False, rendered=rendered)
        viewers = run_viewers(out, written)
        try:
            return [*tlparse_pages.result()[0], *viewers]
        except UnusableInput as exc:
            print(f"  tlparse pages: NOT WRITTEN: {exc}", file=sys.stderr)
            return viewers


def fold_pages(lines: list[tuple[str, str]], summaries: list[ProcessSummary]) -> list[tuple[str, str]]:
    """The pages' (label, page) lines, a process's per-op compiles' pages (tlparse writes one
    per graph) as one line per op kind where its first page stood: that page, and how many
    more of the op's graphs have one beside it. A page with a note keeps its own line."""
    op_of = {
        f"{s.folder.name} {compile_id}": (s.folder.name, op)
        for s in summaries
        for op, tally in s.per_op.items()
        for compile_id in tally.compile_ids
    }
    kept: list[tuple[str, str]] = []
    pages: dict[tuple[str, str], list[str]] = {}
    for label, where in lines:
        group = op_of.get(" ".join(label.split(" ")[:2]))
        if group is None or "  (" in where:  # a ranked report's page, the viewer's, or a page with a note
            kept.append((label, where))
            continue
        if group not in pages:
            kept.append(("\0", "\0".join(group)))  # where the op's line goes
        pages.setdefault(group, []).append(where)
    return [_op_pages(line[1], pages) if line[0] == "\0" else line for line in kept]


def _op_pages(key: str, pages: dict[tuple[str, str], list[str]]) -> tuple[str, str]:
    owner, op = key.split("\0")
    found = pages[(owner, op)]
    more = f" and {len(found) - 1} more beside it" if len(found) > 1 else ""
    return f"{owner} {op} per-op, {len(found)} graph(s)", f"{found[0]}{more}"
