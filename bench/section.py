"""One section of ``make bench`` run alone (``python -m bench.<section>``):
its measurement, full or ``--quick``, printed as the markdown the whole table holds."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from typing import Any


def section_main(
    argv: list[str] | None,
    *,
    prog: str,
    description: str,
    run: Callable[[Any, Callable[[str], None]], Any],
    render_section: Callable[[list[str], Any], str],
    quick: Any,
    full: Any,
) -> int:
    """Parse ``--quick``, run the measurement with timestamped progress on stderr, and write
    the section and its verdict line to stdout."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("--quick", action="store_true", help="a tiny run (seconds), for the smoke test")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    result = run(
        quick if args.quick else full,
        lambda m: print(f"[bench {time.perf_counter() - start:6.0f}s] {m}", file=sys.stderr, flush=True),
    )
    lines: list[str] = []
    verdict = render_section(lines, result)
    sys.stdout.write("\n".join([*lines, f"- {verdict}"]) + "\n")
    return 0
