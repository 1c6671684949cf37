"""``spyre-provenance view OUT [-o FILE.html] [--trace TRACE.json] [--compare B]``: one self-contained
HTML page of a compile ``--out`` folder, or of a plain TORCH_TRACE folder or log (as ``open``
reads them): the model's source lines, the pre-grad and post-grad graphs, kernel call
sites, their OpSpecs and debug handles, and SuperDSC bundles, every graph with a selector,
a click lighting what the evidence relates to each element (``spyre_provenance.viewer``).
With ``--compare B``, OUT and B side by side by source line, from ``compare``'s comparison
(OUT and B as ``compare`` names them: ``PATH`` or ``PATH:COMPILE_ID``).

Prints the page's path (and its size); exit 0, or 2 for unusable input (a folder without
artifacts, an invalid or truncated artifact, an unreadable trace), with nothing written.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from spyre_provenance.base.errors import EXIT_OK
from spyre_provenance.viewer.page import PAGE, write_page


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "out",
        type=Path,
        metavar="OUT",
        help="a compile --out folder (every graph in it, each rank's too), or a TORCH_TRACE folder or log",
    )
    parser.add_argument(
        "-o",
        "--output",
        type=Path,
        default=None,
        metavar="FILE.html",
        help=f"the page (default: OUT/{PAGE}; for a log X.log, X.{PAGE} beside it)",
    )
    parser.add_argument(
        "--trace",
        type=Path,
        default=None,
        metavar="TRACE.json",
        help="a profiled run's Chrome trace (compile --profile's, or torch-spyre's): time per call site, line and element, as annotate --summary counts it",
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
    parser.add_argument(
        "--compare",
        default=None,
        metavar="B",
        help="another compile (PATH or PATH:COMPILE_ID, as compare takes it; OUT may then be PATH:COMPILE_ID too):"
        f" both side by side by source line, from compare's comparison (default page: OUT/compare.{PAGE})",
    )


def run(args: argparse.Namespace) -> int:
    target, size = write_page(args.out, args.output, args.trace, args.bundles, args.compare)
    print(f"viewer page: {target}  ({size / 1e6:.2f} MB)")
    return EXIT_OK
