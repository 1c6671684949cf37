"""``spyre-provenance compare A B [--format text|json|csv]``: two compiles side by side per
source line (``runtime.compare``): for each line, the kernels, its own OpSpecs and ATen ops
it became in A and in B, with its time in each when there are profiler traces, the lines that
changed first; on one screen (``runtime.compare_screen``), every line with ``--all``. A and B are ``--out`` folders (or ``run`` folders, TORCH_TRACE logs),
``PATH:COMPILE_ID`` for one compile of a folder (prefill against decode). Where no frame is
the user's, a module (path and class) is the place, marked as module evidence. Exit 0 when the
compiles are the same line by line, 1 when they differ, 2 for unusable input."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from spyre_provenance.base.errors import EXIT_FOUND_WANTING, EXIT_OK
from spyre_provenance.runtime import compare_render, compare_screen
from spyre_provenance.runtime.compare_folders import compare_folders


def add_arguments(parser: argparse.ArgumentParser) -> None:
    for side in ("A", "B"):
        parser.add_argument(
            side.lower(),
            metavar=side,
            help="a compile --out folder, a run folder or a TORCH_TRACE log; PATH:COMPILE_ID for one compile of it",
        )
    parser.add_argument(
        "--format",
        choices=("text", "json", "csv"),
        default="text",
        help="text: one screen, what changed first (--all: every line); json and csv: every line, always",
    )
    parser.add_argument("--all", action="store_true", help="text: list every line, not one screen's worth")
    for side in ("a", "b"):
        parser.add_argument(
            f"--trace-{side}",
            type=Path,
            default=None,
            metavar="TRACE",
            help=f"a torch.profiler trace of {side.upper()}'s run, for time per line "
            "(default: the one compile --profile wrote beside its log, if any)",
        )
    parser.add_argument("--no-trace", action="store_true", help="compare the compiles only: no time per line")


def run(args: argparse.Namespace) -> int:
    comparison = compare_folders(
        args.a, args.b, trace_a=args.trace_a, trace_b=args.trace_b, find_traces=not args.no_trace
    )
    render = {
        "text": compare_render.render_text if args.all else compare_screen.render,
        "json": compare_render.render_json,
        "csv": compare_render.render_csv,
    }
    sys.stdout.write(render[args.format](comparison))
    return EXIT_OK if comparison.same else EXIT_FOUND_WANTING
