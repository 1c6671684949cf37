"""The regression check: a fresh compile of a case against its golden, and the update.

``check_case`` compares what a compile wrote with ``golden/<case>/`` and judges coverage on
its TORCH_TRACE log; ``update_case`` rewrites the golden, refusing a failed compile,
invalid artifacts or broken coverage. Both return the lines ``golden check|update`` prints
and whether the case passed. The compile itself is the caller's (``golden check`` runs
``spyre-provenance compile`` in a fresh process per case).

Pure: no torch import.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from spyre_provenance.base.errors import UnusableInput, Verdict
from spyre_provenance.golden.cases import Case
from spyre_provenance.golden.diff import differences
from spyre_provenance.golden.store import (
    Provenance,
    fresh_case,
    read_case,
    stale_files,
    write_case,
)
from spyre_provenance.model.layout import Layout
from spyre_provenance.validate import coverage


@dataclasses.dataclass
class CaseCompile:
    """One case's ``spyre-provenance compile`` in its own process: its ``--out`` folder,
    exit status and output. Its verdict is the compile's own (``compile_job``), read back
    from the exit status; the golden comparison comes on top."""

    out: Path
    returncode: int
    output: str

    @property
    def verdict(self) -> Verdict:
        return Verdict.of_exit(self.returncode, self._tail())

    def failure(self) -> str | None:
        if self.verdict.ok:
            return None
        return f"compile failed (exit {self.returncode}): {self._tail()}"

    def _tail(self) -> str:
        """The compile's last three lines of output, where its verdict's reasons are."""
        return " | ".join([line.strip() for line in self.output.strip().splitlines() if line.strip()][-3:])

    def log(self) -> Path | None:
        logs = Layout(self.out).trace_logs()
        return logs[0] if logs else None

    def rank_logs(self) -> dict[str, Path | None]:
        """A ``--ranks`` compile's log per rank folder (``rank0``: its log or None)."""
        return {ranked.out.name: next(iter(ranked.trace_logs()), None) for _, ranked in Layout(self.out).ranks()}


def coverage_violations(compiled: CaseCompile, fresh: Provenance) -> list[coverage.Violation]:
    out = Layout(compiled.out)
    ranks = compiled.rank_logs()
    if not ranks:
        return _log_violations(compiled.log(), list(fresh.graphs), out.trace_dir.relative_to(out.out).as_posix())
    found = []
    for _, ranked in out.ranks():  # each rank's log judged with its own graphs' names
        name, where = ranked.out.name, ranked.trace_dir.relative_to(out.out).as_posix()
        found += _log_violations(ranks[name], [g for g in fresh.graphs if g.startswith(name + "/")], where)
    return found


def _log_violations(log: Path | None, labels: list[str], where: str) -> list[coverage.Violation]:
    if log is None:
        return [coverage.Violation("call-sites", where, "the compile wrote no TORCH_TRACE log")]
    return coverage.check_log(log, labels=labels)


def check_case(case: Case, compiled: CaseCompile, folder: Path) -> tuple[list[str], bool]:
    head = f"golden {case.name}"
    try:
        fresh = fresh_case(case, compiled.out)
    except UnusableInput as exc:
        return [f"{head}: FAILED: {compiled.failure() or exc}"], False
    expected = read_case(folder)
    if expected is None:
        return [
            f"{head}: FAILED: no golden in {_show(folder)} (run: spyre-provenance golden update {case.name})"
        ], False
    comparison = differences(expected, fresh, labels=(_show(folder), "this compile"))
    violations = coverage_violations(compiled, fresh)
    failure = compiled.failure()
    problems = len(comparison.changes) + len(violations) + bool(failure)
    lines = [f"{head}: ok" if not problems else f"{head}: {len(comparison.changes)} change(s) from {_show(folder)}"]
    lines += [f"  {change}" for change in comparison.changes]
    lines += [f"  coverage: {v}" for v in violations]
    lines += [f"  {failure}"] if failure else []
    lines += [f"  hint: {h}" for h in comparison.hints]
    return lines, not problems


def update_case(case: Case, compiled: CaseCompile, folder: Path) -> tuple[list[str], bool]:
    head = f"golden {case.name}"
    refused = f"{head}: NOT written"
    if compiled.failure():
        return [f"{refused}: {compiled.failure()}"], False
    try:
        fresh = fresh_case(case, compiled.out)
    except UnusableInput as exc:
        return [f"{refused}: {exc}"], False
    violations = coverage_violations(compiled, fresh)
    if violations:
        return [f"{refused}: coverage invariant broken"] + [f"  {v}" for v in violations], False
    files = fresh.files()
    previous = read_case(folder)
    unchanged = all((folder / rel).is_file() and (folder / rel).read_bytes() == data for rel, data in files.items())
    stale = stale_files(folder, files)
    problems = write_case(folder, files)
    if problems:
        return [f"{refused}: invalid artifact"] + [f"  {p}" for p in problems[:10]], False
    if previous is None:
        return [f"{head}: created {_show(folder)} ({len(files)} files)"], True
    if unchanged and not stale:
        return [f"{head}: unchanged"], True
    comparison = differences(previous, fresh, labels=("the old golden", "this compile"))
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
