"""``spyre-provenance view OUT [-o FILE.html] [--trace TRACE.json]``: one self-contained
HTML page of a compile ``--out`` folder: the model's source lines, pre-grad and post-grad
nodes, kernel call sites, their OpSpecs and debug handles, and SuperDSC bundles, every graph
of the folder with a selector, click-to-highlight both ways (``spyre_provenance.viewer``).

Prints the page's path (and its size); exit 0, or 2 for unusable input (a folder without
artifacts, an invalid or truncated artifact, an unreadable trace), with nothing written.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from spyre_provenance.errors import EXIT_OK, UnusableInput
from spyre_provenance.viewer import data, page, timing

#: The page's name in an ``--out`` folder, where ``compile`` and ``open`` write it.
PAGE = "view.html"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "out", type=Path, metavar="OUT", help="a compile --out folder (every graph in it, each rank's too)"
    )
    parser.add_argument(
        "-o", "--output", type=Path, default=None, metavar="FILE.html", help=f"the page (default: OUT/{PAGE})"
    )
    parser.add_argument(
        "--trace",
        type=Path,
        default=None,
        metavar="TRACE.json",
        help="a profiled run's Chrome trace (compile --profile's, or torch-spyre's): time and calls per call site",
    )
    parser.add_argument(
        "--bundles",
        type=Path,
        action="append",
        default=None,
        metavar="DIR",
        help="a folder of torch-spyre's SuperDSC bundle folders (its cache's inductor-spyre/), repeatable;"
        " OUT's own sdsc/ is always read",
    )


def write_page(
    out: Path, target: Path | None = None, trace: Path | None = None, bundles: list[Path] | None = None
) -> tuple[Path, int]:
    """Build and write the page of ``out``: (its path, its size in bytes). Raises
    UnusableInput before anything is written."""
    target = target if target is not None else out / PAGE
    if target.is_dir():
        raise UnusableInput(str(target), "is a folder; name the page's file")
    timed = timing.read(trace) if trace is not None else None
    document = data.build(out, timed, bundles)
    return target, page.write(document, target)


def beside(out: Path) -> str:
    """``compile``'s and ``open``'s line for the page of ``out``, written now; a folder the
    page cannot be made of is said, never a failure of the command that printed it."""
    try:
        target, _ = write_page(out)
    except UnusableInput as exc:
        return f"viewer page: NOT WRITTEN: {exc}"
    return f"viewer page: {target}"


def run(args: argparse.Namespace) -> int:
    target, size = write_page(args.out, args.output, args.trace, args.bundles)
    print(f"viewer page: {target}  ({size / 1e6:.2f} MB)")
    return EXIT_OK
