"""``spyre-provenance annotate TRACE.json --from PATH [-o OUT.json]``: a torch.profiler
Chrome trace (plain or gzipped) with each known kernel event's provenance in its ``args``
(``runtime.annotate`` lists the fields). Prints ``annotated K of N kernel events``; exit 0
when every kernel event was annotated, 1 when some are unknown, 2 for unusable input."""

from __future__ import annotations

import argparse
from pathlib import Path

from spyre_provenance.errors import EXIT_FOUND_WANTING, EXIT_OK
from spyre_provenance.runtime import index as kernel_index
from spyre_provenance.runtime.annotate import annotate


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "trace", type=Path, metavar="TRACE", help="Chrome trace from torch.profiler (.json or .json.gz)"
    )
    parser.add_argument(
        "--from",
        dest="paths",
        action="append",
        default=None,
        metavar="PATH",
        help="a compile --out folder, a TORCH_TRACE log, or a folder of them (repeatable; default ./out)",
    )
    parser.add_argument(
        "-o",
        "--output",
        type=Path,
        default=None,
        help="where to write the annotated trace (default: TRACE with .annotated before .json)",
    )


def default_output(trace: Path) -> Path:
    name = trace.name
    for suffix in (".json.gz", ".json"):
        if name.endswith(suffix):
            return trace.with_name(name[: -len(suffix)] + ".annotated" + suffix)
    return trace.with_name(name + ".annotated.json")


def run(args: argparse.Namespace) -> int:
    index = kernel_index.build(args.paths or [])
    summary = annotate(args.trace, index, args.output or default_output(args.trace))
    print(summary.line())
    return EXIT_OK if summary.annotated == summary.kernel_events else EXIT_FOUND_WANTING
