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
mode; ``launch.run_summary``), then the pages: tlparse's (a multi-rank landing page for
torchrun's ranks; a process's per-op compiles' pages one line per op kind) and each
process's viewer page. ``run`` exits with COMMAND's status (128+N when a signal N ended it;
127 when COMMAND is not found, 126 when it cannot be executed, as a shell says), whatever
the verdict: ``validate OUT`` judges.

The engine is ``launch.runner``'s; this module parses the arguments and prints what it
returns.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from spyre_provenance.backends import BACKEND_NAMES
from spyre_provenance.base.errors import UnusableInput
from spyre_provenance.launch.runner import Runner

DEFAULT_OUT = Path("out") / "run"


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
    parser.add_argument("program", nargs=argparse.REMAINDER, metavar="-- COMMAND [ARGS...]", help="the program to run")


def run(args: argparse.Namespace) -> int:
    command = args.program[1:] if args.program[:1] == ["--"] else args.program
    if not command:
        raise UnusableInput("COMMAND", "nothing to run: spyre-provenance run [--out OUT] -- COMMAND [ARGS...]")
    with Runner(args.out.absolute(), backend=args.backend, pages=not args.no_pages) as runner:
        for line in runner.warnings:
            print(line, file=sys.stderr)
        ran = runner.run(command)
        for line in ran.lines:
            print(line, file=sys.stderr)
        if args.no_pages or not ran.processes:
            return ran.status
        pages = runner.pages()
    for line in pages.problems:
        print(line, file=sys.stderr)
    width = max((len(label) for label, _ in pages.lines), default=0)
    for label, where in pages.lines:
        print(f"  {label.ljust(width)}  {where}", file=sys.stderr)
    return ran.status
