"""``--from PATH``, the option ``lookup`` and ``annotate`` share, defined once: a command
module imports no other command module.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any


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
