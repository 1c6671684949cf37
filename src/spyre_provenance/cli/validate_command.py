"""``spyre-provenance validate PATH...``: artifact JSON files, TORCH_TRACE logs, folders.

A PATH is one of:
- a JSON artifact: the artifact is told by file name (``--artifact`` overrides), else shape;
- a TORCH_TRACE log (first non-blank line has the glog prefix): every provenance artifact in
  it is validated, one result per record (``log:[0/0] (line 1168)``); damage to the log
  itself (bad lines, payloads failing their MD5) is one more result;
- a folder, searched recursively for artifact JSON files (by name, or by an unmistakable
  shape) and for logs (``*.log``, ``dedicated_log_torch_trace_*``); tlparse's pages folder
  of an OUT in it is not (its copies), and each artifact is said once: a log record and its
  graph folder's file, both valid, are one line (``... (line 1486), and graph_.../x.json``).

Two verdicts, kept apart. Whether an artifact is valid (its schema and invariants; damage to
its log record): ``INVALID`` and its problems, exit 1. Whether tlparse will file and render it
as the user expects (a log record with no compile id goes to tlparse's ``-_-_-_-`` folder;
one with part of a compile id lands where no page shows it): ``WARN`` and the reasons,
indented as ``warning: ...``, exit 0, or 1 with ``--strict`` (as tlparse's own ``--strict``
fails a log it can read only in part). A valid artifact without warnings is ``OK``. A log's
provenance records logged with no payload (``tracelog.EmptyRecord``: a cache hit of a graph
compiled without provenance tracking) are no artifact: a ``NOTE`` line says so, no verdict.

Exit 0: all valid (warnings allowed without --strict); 1: any invalid, or any warning with
--strict; 2: any PATH unusable (missing, empty, not JSON, not UTF-8, top level not an object,
no artifacts in it, larger than --max-bytes), reported as one line on stderr while the other
PATHs are still checked. ``--format json`` gives each result's ``status`` (ok, invalid,
unusable) and its ``warnings``. The size limit defaults to ``SPYRE_PROVENANCE_MAX_BYTES`` or
1 GiB. Text that cannot be printed as is (lone surrogates in a file name) is printed escaped.
An unsupported artifact version is INVALID (exit 1): the file is a provenance artifact, just
not one this version of the tool accepts.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import msgspec

from spyre_provenance.base.errors import Verdict
from spyre_provenance.model import jsonio
from spyre_provenance.model.layout import Layout
from spyre_provenance.model.names import ARTIFACTS
from spyre_provenance.validate.paths import Options, Result, by_rank, check_paths

__all__ = ["Options", "Result", "add_arguments", "check_paths", "exit_code", "render", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", metavar="PATH", help="artifact JSON file, TORCH_TRACE log, or folder")
    parser.add_argument("--format", choices=("text", "json"), default="text", help="json: one document for CI")
    parser.add_argument(
        "--artifact",
        choices=ARTIFACTS,
        help="treat JSON files as this artifact; in logs and folders, check only this artifact",
    )
    parser.add_argument(
        "--max-bytes",
        type=_size,
        default=None,
        metavar="N",
        help=f"refuse files larger than N bytes (suffixes K, M, G; default: ${jsonio.MAX_BYTES_ENV}, else 1G)",
    )
    parser.add_argument(
        "--engine",
        choices=("auto", "fast", "full"),
        default="auto",
        help="fast: msgspec + invariants; full: jsonschema + invariants; auto: full below 4 MiB",
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="exit 1 on warnings too (artifacts tlparse will not file or render as expected)",
    )


def run(args: argparse.Namespace) -> int:
    max_bytes = args.max_bytes if args.max_bytes is not None else jsonio.default_max_bytes()
    options = Options(artifact=args.artifact, max_bytes=max_bytes, engine=args.engine)
    results = check_paths(args.paths, options)
    for r in results:
        if r.status == "unusable":
            _print(f"spyre-provenance validate: error: {r.path}: {r.error}", sys.stderr)
    if args.format == "json":
        # msgspec writes lone surrogates (from undecodable file names) as \u escapes
        sys.stdout.write(msgspec.json.format(msgspec.json.encode(results), indent=2).decode() + "\n")
    else:
        for r in results:
            if r.status != "unusable":
                _print(render(r), sys.stdout)
        for line in rank_lines(results):
            _print(line, sys.stdout)
        for line in process_lines(args.paths):
            _print(line, sys.stdout)
    return exit_code(results, strict=args.strict)


def process_lines(paths: list[str]) -> list[str]:
    """For a ``run`` folder: one line per tracked process (graphs, call sites linked, its
    verdict) and each compile it never finished (``launch.run_summary``): an artifact
    can be valid in a run that stopped in the middle of a compile. Per-op compiles fold into
    one line per op kind, as on ``run``'s screen."""
    from spyre_provenance.launch import run_summary

    lines: list[str] = []
    for name in paths:
        folder = Path(name)
        if folder.is_dir() and Layout(folder).processes():
            lines += run_summary.render(run_summary.summarize_run(folder), folder)[1:]
    return lines


def rank_lines(results: list[Result]) -> list[str]:
    """One line per rank of a multi-rank run (``compile --ranks N``): its verdict."""
    lines = []
    for rank, mine in by_rank(results).items():
        invalid = sum(r.status == "invalid" for r in mine)
        unusable = sum(r.status == "unusable" for r in mine)
        warned = sum(r.status == "ok" and bool(r.warnings) for r in mine)
        verdict = ", ".join(
            part
            for part in (
                f"{invalid} INVALID" if invalid else "",
                f"{unusable} unusable" if unusable else "",
                f"{warned} with warnings" if warned else "",
            )
            if part
        )
        lines.append(f"rank {rank}: {len(mine)} artifact(s), {verdict or 'all valid'}")
    return lines


def _print(text: str, stream) -> None:
    """``print``, escaping what the stream cannot encode instead of failing on it."""
    try:
        print(text, file=stream)
    except UnicodeEncodeError:
        encoding = getattr(stream, "encoding", None) or "utf-8"
        print(text.encode(encoding, "backslashreplace").decode(encoding), file=stream)


def exit_code(results: list[Result], *, strict: bool = False) -> int:
    unusable = [r.path for r in results if r.status == "unusable"]
    wanting = [r.path for r in results if r.status == "invalid" or (strict and r.warnings)]
    return Verdict.judge(wanting=wanting, unusable=unusable).exit_code


def render(r: Result) -> str:
    """``OK      v2.0  <artifact>  <where>`` (``WARN`` for a valid one with warnings), the
    problems and the warnings indented below."""
    version = f"v{r.version}" if r.version else "-"
    head = "WARN" if r.status == "ok" and r.warnings else "NOTE" if r.notes and not r.problems else r.status.upper()
    lines = [f"{head:<7} {version:<5} {r.artifact}  {r.where()}" + "".join(_copy(r, c) for c in r.copies)]
    lines += [f"  {p}" for p in r.problems]
    if r.omitted:
        lines.append(f"  ... and {r.omitted} more problems")
    lines += [f"  warning: {w}" for w in r.warnings]
    lines += [f"  note: {n}" for n in r.notes]
    return "\n".join(lines)


def _copy(r: Result, copy: str) -> str:
    """A file holding the same valid artifact as ``r`` (``fold_copies``), named from the
    folder of ``r``'s log's ``trace/``."""
    try:
        shown = os.path.relpath(copy, os.path.dirname(os.path.dirname(r.path)))
    except ValueError:  # another drive
        shown = copy
    return f", and {shown}"


def _size(text: str) -> int:
    try:
        return jsonio.parse_size(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (examples: 1000000, 500M, 2G)") from None
