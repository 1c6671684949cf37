"""``spyre-provenance golden check|update [CASE...]``: the golden provenance of the built-in cases.

Both recompile each case (``golden.CASES``) in its own process (TORCH_TRACE must be set
before torch is imported); ``golden.check`` normalizes what the compile wrote, compares or
writes it, and judges coverage on its TORCH_TRACE log.

- ``check`` compares with ``golden/<case>/`` and prints one line per change. A golden made
  with another torch (its manifest says which) is a hint, and the comparison still runs.
  Exit 0: every case matches and is complete; 1: a difference, a broken invariant, a failed
  compile, or no golden yet.
- ``update`` writes ``golden/<case>/`` (validated first, each file atomically, stale files
  removed) and prints what changed. It refuses to write a case whose compile failed, whose
  artifacts are invalid, or whose coverage invariants are broken (exit 1).

``make golden`` runs ``golden update``. ``pytest --force-regen`` writes the same bytes (the
golden tests go through the same normalize function and serializer).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from spyre_provenance import golden
from spyre_provenance.base.errors import UnusableInput, Verdict
from spyre_provenance.golden.check import CaseCompile, check_case, update_case

COMPILE_TIMEOUT = 900  # seconds per case; a compile takes 7-20 s


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=("check", "update"), help="check: compare; update: rewrite")
    parser.add_argument("cases", nargs="*", metavar="CASE", help=f"cases (default: all): {', '.join(golden.CASES)}")
    parser.add_argument(
        "--golden-dir",
        type=Path,
        default=None,
        metavar="DIR",
        help="the folder holding one folder per case (default: golden/ of this checkout)",
    )
    parser.add_argument("-j", "--jobs", type=int, default=1, metavar="N", help="compile N cases at a time")


def run(args: argparse.Namespace) -> int:
    cases = _runnable(golden.select_cases(args.cases))
    golden_dir = args.golden_dir or default_golden_dir()
    if args.action == "check" and not golden_dir.is_dir():
        raise UnusableInput(str(golden_dir), "no such folder (run: spyre-provenance golden update)")
    failed: list[str] = []
    with tempfile.TemporaryDirectory(prefix="spyre-provenance-golden-") as work:
        for case, compiled in zip(cases, compile_cases(cases, Path(work), max(1, args.jobs)), strict=True):
            folder = golden_dir / case.name
            lines, passed = (check_case if args.action == "check" else update_case)(case, compiled, folder)
            print("\n".join(lines), flush=True)
            failed += [] if passed else [case.name]
    return Verdict.judge(wanting=failed).exit_code


def _runnable(cases: list[golden.Case]) -> list[golden.Case]:
    """The cases this process can compile: a torch-spyre case is skipped, with a line saying
    why, where torch-spyre does not import (a skip, not a failure)."""
    if not any(case.needs_torch_spyre for case in cases):
        return cases
    from spyre_provenance.backends import spyre as spyre_backend

    usable, why = spyre_backend.probe()
    if usable:
        return cases
    for case in cases:
        if case.needs_torch_spyre:
            print(f"golden/{case.name}: skipped: a torch-spyre case, and {why}", flush=True)
    return [case for case in cases if not case.needs_torch_spyre]


def default_golden_dir() -> Path:
    checkout = golden.source_checkout()
    if checkout is None:
        raise UnusableInput("--golden-dir", "not running from a source checkout: name the golden folder")
    return checkout / "golden"


# --- compiling --------------------------------------------------------------------------------


def compile_case(case: golden.Case, out: Path) -> CaseCompile:
    """``spyre-provenance compile`` for one case, in a fresh process, tlparse skipped."""
    command = [
        sys.executable,
        "-m",
        "spyre_provenance",
        "compile",
        *case.compile_args(),
        "--out",
        str(out),
        "--no-tlparse",
    ]
    env = {k: v for k, v in os.environ.items() if k != "TORCH_TRACE"}  # compile sets its own
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=COMPILE_TIMEOUT, env=env)
    except subprocess.TimeoutExpired:
        return CaseCompile(out, -1, f"timed out after {COMPILE_TIMEOUT} s")
    return CaseCompile(out, done.returncode, done.stdout + done.stderr)


def compile_cases(cases: list[golden.Case], work: Path, jobs: int):
    """Compile results in case order (each yielded as soon as it and those before are done)."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        yield from pool.map(lambda c: compile_case(c, work / c.name), cases)
