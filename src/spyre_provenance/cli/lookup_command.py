"""``spyre-provenance lookup NAME... [--from PATH...] [--format text|json]``: from a kernel
name met at run time (a device error, a profiler event, a bundle folder, a mapping key, an
OpSpec handle id) to the model's source. Exit 0 when every name matched, 1 when one did not
(the closest known names are listed), 2 for input that cannot be read."""

from __future__ import annotations

import argparse
import sys

import msgspec

from spyre_provenance.base.errors import EXIT_FOUND_WANTING, EXIT_OK
from spyre_provenance.cli.from_option import add_from_option
from spyre_provenance.runtime import index as kernel_index
from spyre_provenance.runtime.lookup import lookup
from spyre_provenance.runtime.render import render


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "names",
        nargs="+",
        metavar="NAME",
        help="kernel name (as called, with a runtime suffix, graph_<i>_ profiler prefix or bundle "
        "folder name), mapping key NAME:N, or OpSpec debug-handle id",
    )
    add_from_option(parser)
    parser.add_argument("--format", choices=("text", "json"), default="text")


def run(args: argparse.Namespace) -> int:
    document = lookup(args.names, kernel_index.build(args.paths or []))
    if args.format == "json":
        sys.stdout.write(msgspec.json.encode(document).decode() + "\n")
    else:
        sys.stdout.write(render(document))
    return EXIT_OK if all(a.matches for a in document.answers) else EXIT_FOUND_WANTING
