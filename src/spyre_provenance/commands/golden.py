"""``spyre-provenance golden check|update [CASE...]``: the golden provenance of the built-in cases.

Both recompile each case (``golden.CASES``) in its own process (TORCH_TRACE must be set
before torch is imported), normalize what the compile wrote, and check the coverage
invariants on its TORCH_TRACE log.

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
import dataclasses
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from spyre_provenance import coverage, golden
from spyre_provenance.errors import EXIT_FOUND_WANTING, EXIT_OK, UnusableInput

COMPILE_TIMEOUT = 900  # seconds per case; a compile takes 7-20 s


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=("check", "update"), help="check: compare; update: rewrite")
    parser.add_argument("cases", nargs="*", metavar="CASE", help=f"cases (default: all): {', '.join(golden.CASES)}")
    parser.add_argument(
        "--golden-dir", type=Path, default=None, metavar="DIR",
        help="the folder holding one folder per case (default: golden/ of this checkout)",
    )
    parser.add_argument("-j", "--jobs", type=int, default=1, metavar="N", help="compile N cases at a time")


def run(args: argparse.Namespace) -> int:
    cases = golden.select_cases(args.cases)
    golden_dir = args.golden_dir or default_golden_dir()
    if args.action == "check" and not golden_dir.is_dir():
        raise UnusableInput(str(golden_dir), "no such folder (run: spyre-provenance golden update)")
    ok = True
    with tempfile.TemporaryDirectory(prefix="spyre-provenance-golden-") as work:
        for case, compiled in zip(cases, compile_cases(cases, Path(work), max(1, args.jobs))):
            folder = golden_dir / case.name
            lines, passed = (check_case if args.action == "check" else update_case)(case, compiled, folder)
            print("\n".join(lines), flush=True)
            ok &= passed
    return EXIT_OK if ok else EXIT_FOUND_WANTING


def default_golden_dir() -> Path:
    checkout = golden.source_checkout()
    if checkout is None:
        raise UnusableInput("--golden-dir", "not running from a source checkout: name the golden folder")
    return checkout / "golden"


# --- compiling --------------------------------------------------------------------------------


@dataclasses.dataclass
class Compiled:
    """One case's compile: its ``--out`` folder, exit status and last output lines."""

    out: Path
    returncode: int
    output: str

    def failure(self) -> str | None:
        if self.returncode == 0:
            return None
        tail = [line.strip() for line in self.output.strip().splitlines() if line.strip()][-3:]
        return f"compile failed (exit {self.returncode}): " + " | ".join(tail)

    def log(self) -> Path | None:
        logs = sorted((self.out / "trace").glob("*.log"))
        return logs[0] if logs else None


def compile_case(case: golden.Case, out: Path) -> Compiled:
    """``spyre-provenance compile`` for one case, in a fresh process, tlparse skipped."""
    command = [sys.executable, "-m", "spyre_provenance", "compile", *case.compile_args(), "--out", str(out), "--no-tlparse"]
    env = {k: v for k, v in os.environ.items() if k != "TORCH_TRACE"}  # compile sets its own
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=COMPILE_TIMEOUT, env=env)
    except subprocess.TimeoutExpired:
        return Compiled(out, -1, f"timed out after {COMPILE_TIMEOUT} s")
    return Compiled(out, done.returncode, done.stdout + done.stderr)


def compile_cases(cases: list[golden.Case], work: Path, jobs: int):
    """Compile results in case order (each yielded as soon as it and those before are done)."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        yield from pool.map(lambda c: compile_case(c, work / c.name), cases)


def coverage_violations(compiled: Compiled, fresh: golden.Provenance) -> list[coverage.Violation]:
    log = compiled.log()
    if log is None:
        return [coverage.Violation("call-sites", "trace", "the compile wrote no TORCH_TRACE log")]
    return coverage.check_log(log, labels=list(fresh.graphs))


# --- check and update -----------------------------------------------------------------------------


def check_case(case: golden.Case, compiled: Compiled, folder: Path) -> tuple[list[str], bool]:
    head = f"golden {case.name}"
    try:
        fresh = golden.fresh_case(case, compiled.out)
    except UnusableInput as exc:
        return [f"{head}: FAILED: {compiled.failure() or exc}"], False
    expected = golden.read_case(folder)
    if expected is None:
        return [f"{head}: FAILED: no golden in {_show(folder)} (run: spyre-provenance golden update {case.name})"], False
    comparison = golden.compare(expected, fresh, labels=(_show(folder), "this compile"))
    violations = coverage_violations(compiled, fresh)
    failure = compiled.failure()
    problems = len(comparison.changes) + len(violations) + bool(failure)
    lines = [f"{head}: ok" if not problems else f"{head}: {len(comparison.changes)} change(s) from {_show(folder)}"]
    lines += [f"  {change}" for change in comparison.changes]
    lines += [f"  coverage: {v}" for v in violations]
    lines += [f"  {failure}"] if failure else []
    lines += [f"  hint: {h}" for h in comparison.hints]
    return lines, not problems


def update_case(case: golden.Case, compiled: Compiled, folder: Path) -> tuple[list[str], bool]:
    head = f"golden {case.name}"
    refused = f"{head}: NOT written"
    if compiled.failure():
        return [f"{refused}: {compiled.failure()}"], False
    try:
        fresh = golden.fresh_case(case, compiled.out)
    except UnusableInput as exc:
        return [f"{refused}: {exc}"], False
    violations = coverage_violations(compiled, fresh)
    if violations:
        return [f"{refused}: coverage invariant broken"] + [f"  {v}" for v in violations], False
    files = fresh.files()
    previous = golden.read_case(folder)
    unchanged = all((folder / rel).is_file() and (folder / rel).read_bytes() == data for rel, data in files.items())
    stale = golden.stale_files(folder, files)
    problems = golden.write_case(folder, files)
    if problems:
        return [f"{refused}: invalid artifact"] + [f"  {p}" for p in problems[:10]], False
    if previous is None:
        return [f"{head}: created {_show(folder)} ({len(files)} files)"], True
    if unchanged and not stale:
        return [f"{head}: unchanged"], True
    comparison = golden.compare(previous, fresh, labels=("the old golden", "this compile"))
    lines = [f"{head}: updated {_show(folder)}, {len(comparison.changes)} change(s)"]
    lines += [f"  {change}" for change in comparison.changes]
    lines += [f"  removed {rel}" for rel in stale]
    lines += [f"  hint: {h}" for h in comparison.hints]
    return lines, True


def _show(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)
