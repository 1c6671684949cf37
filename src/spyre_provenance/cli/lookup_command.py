"""``spyre-provenance lookup NAME... [--from PATH...] [--format text|json]``: from a kernel
name met at run time (a device error, a profiler event, a bundle folder, a mapping key, an
OpSpec handle id) to the model's source. Exit 0 when every name matched, 1 when one did not
(the closest known names are listed), 2 for input that cannot be read."""

from __future__ import annotations

import argparse
import sys
from typing import Any

import msgspec

from spyre_provenance.base.errors import EXIT_FOUND_WANTING, EXIT_OK
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


def add_from_option(parser: argparse.ArgumentParser) -> None:
    """``--from PATH``: the folders and logs to read provenance from, ``lookup``'s and
    ``annotate``'s one name for it (the API's ``from_``). ``--in``, lookup's name in 0.1.0,
    still works on both, hidden, and says it is deprecated."""
    parser.add_argument(
        "--from",
        dest="paths",
        action="append",
        default=None,
        metavar="PATH",
        help="a compile --out folder, a TORCH_TRACE log, or a folder of them (repeatable; default ./out)",
    )
    parser.add_argument("--in", dest="paths", action=_DeprecatedIn, default=None, help=argparse.SUPPRESS)


class _DeprecatedIn(argparse._AppendAction):
    def __call__(
        self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, option: Any = None
    ) -> None:
        print(f"{parser.prog}: warning: {option} is deprecated, use --from", file=sys.stderr)
        super().__call__(parser, namespace, values, option)


def run(args: argparse.Namespace) -> int:
    document = lookup(args.names, kernel_index.build(args.paths or []))
    if args.format == "json":
        sys.stdout.write(msgspec.json.encode(document).decode() + "\n")
    else:
        sys.stdout.write(render(document))
    return EXIT_OK if all(a.matches for a in document.answers) else EXIT_FOUND_WANTING
