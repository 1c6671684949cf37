"""``spyre-provenance annotate TRACE.json --from PATH [-o OUT.json]``: a torch.profiler
Chrome trace (plain or gzipped) with each known kernel event's provenance in its ``args``
(``runtime.annotate`` lists the fields). Prints ``annotated K of N kernel events``; exit 0
when every kernel event was annotated, 1 when some are unknown, ambiguous, malformed or from
another build, 2 for unusable input.

``--summary`` writes no trace: it prints where the kernel time went, per source line and
per module (``runtime.time_summary``), as text that fits a screen (``runtime.time_screen``;
``--all``: every row), ``--format json`` (schema
``provenance_time_summary``) or ``csv``, joined with an ``acelyzer`` summary CSV by kernel
when ``--acelyzer`` names one; exit 1 when some timed events could not be placed."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from spyre_provenance.base.errors import EXIT_FOUND_WANTING, EXIT_OK, UnusableInput
from spyre_provenance.cli.from_option import add_from_option
from spyre_provenance.runtime import index as kernel_index
from spyre_provenance.runtime import time_screen, time_summary
from spyre_provenance.runtime.annotate import annotate, default_output


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "trace", type=Path, metavar="TRACE", help="Chrome trace from torch.profiler (.json or .json.gz)"
    )
    add_from_option(parser)
    parser.add_argument(
        "-o",
        "--output",
        type=Path,
        default=None,
        help="where to write the annotated trace (default: TRACE with .annotated before .json)",
    )
    add_summary_arguments(parser)


def add_summary_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--summary", action="store_true", help="print kernel time per source line and per module instead"
    )
    parser.add_argument("--format", choices=("text", "json", "csv"), default="text", help="of --summary")
    parser.add_argument(
        "--all",
        action="store_true",
        help="--summary's text lists every line, kernel and module (by default the heaviest, about 60 lines)",
    )
    parser.add_argument(
        "--acelyzer", type=Path, default=None, metavar="CSV", help="an acelyzer summary CSV to join by kernel"
    )


def run(args: argparse.Namespace) -> int:
    index = kernel_index.build(args.paths or [])
    if args.summary:
        timed = time_summary.summarize(args.trace, index, args.acelyzer)
        text = time_summary.render_text if args.all else time_screen.render
        render = {"text": text, "json": time_summary.render_json, "csv": time_summary.render_csv}
        sys.stdout.write(render[args.format](timed))
        placed = timed.attributed == timed.timed_events and not timed.unplaced
        return EXIT_OK if placed else EXIT_FOUND_WANTING
    if args.format != "text" or args.acelyzer is not None or args.all:
        raise UnusableInput("annotate", "--format, --acelyzer and --all are options of --summary")
    summary = annotate(args.trace, index, args.output or default_output(args.trace))
    print(summary.line())
    placed = summary.annotated == summary.kernel_events and not summary.unplaced
    return EXIT_OK if placed else EXIT_FOUND_WANTING
