"""What ``spyre-provenance validate PATH...`` checks: files, TORCH_TRACE logs, folders.

A PATH is a JSON artifact (told by file name, else by shape), a TORCH_TRACE log (every
provenance artifact in it, one result per record, plus one for damage to the log itself),
or a folder searched recursively for both, saying each artifact once (``fold_copies``). Pure: no printing, no torch; the command
(``cli/validate_command.py``) prints the results and ``validate_paths`` returns them as
schemas.Report values.

Two verdicts per result: ``status`` says whether the artifact is valid (its schema and
invariants; damage to its log record), ``warnings`` whether tlparse will file and render it
as expected (a log record without a whole compile id). A valid artifact with warnings is
still "ok".
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import msgspec

from spyre_provenance.base.errors import UnusableInput
from spyre_provenance.base.files import TMP_PREFIX
from spyre_provenance.logs import tracelog
from spyre_provenance.model import folders, jsonio
from spyre_provenance.model.detect import Problem
from spyre_provenance.model.layout import NO_LOG_FOLDERS, Layout
from spyre_provenance.model.names import LOGGED_ARTIFACTS
from spyre_provenance.validate import read_once, schemas

DEFAULT_MAX_BYTES = jsonio.DEFAULT_MAX_BYTES
AUTO_FULL_BYTES = schemas.AUTO_FULL_BYTES  # --engine auto: jsonschema up to this, then fast
SNIFF_MAX_BYTES = 64 * 2**20  # folder scan: unnamed *.json files larger than this are skipped
LOG_ARTIFACT = "TORCH_TRACE"  # the "artifact" of a result about a log itself


class Result(msgspec.Struct):
    """One line of output: an artifact's verdict, damage to a log, or an unusable PATH."""

    path: str
    status: str  # "ok" | "invalid" | "unusable"
    artifact: str | None = None
    version: str | None = None
    compile_id: str | None = None
    line: int | None = None  # the envelope line of an artifact inside a log
    problems: list[Problem] = []
    omitted: int = 0  # problems not listed
    error: str | None = None  # what makes the PATH unusable
    warnings: list[Problem] = []  # valid or not: what tlparse will make of it
    #: the rank of a multi-rank run: a log record's own (torch stamps it), else the
    #: ``rank<r>`` folder the file is in (``compile --ranks N``); None: no rank
    rank: int | None = None
    #: files holding the same artifact, checked and found as valid (a log record's graph
    #: folder file, ``fold_copies``): said on this result's line, not on lines of their own
    copies: list[str] = []
    #: not verdicts: what was passed over and why (a log's empty provenance records)
    notes: list[str] = []

    def where(self) -> str:
        """``path``, or ``path:[0/0] (line 1168)`` for an artifact inside a log."""
        if self.compile_id is None and self.line is None:
            return self.path
        return f"{self.path}:{self.compile_id or '[-/-]'}" + (f" (line {self.line})" if self.line is not None else "")

    def as_report(self) -> schemas.Report:
        problems = tuple(self.problems) or ((Problem("$", self.error),) if self.error else ())
        return schemas.Report(self.artifact, self.version, problems, self.where(), self.omitted, tuple(self.warnings))


class Options(msgspec.Struct, frozen=True):
    artifact: str | None = None
    max_bytes: int = DEFAULT_MAX_BYTES
    engine: str = "auto"  # auto | fast | full


DEFAULT_OPTIONS = Options()


def check_paths(paths: list[str], options: Options = DEFAULT_OPTIONS) -> list[Result]:
    results: list[Result] = []
    for name in paths:
        try:
            results.extend(_with_rank(r) for r in _check_path(Path(name), options))
        except UnusableInput as exc:
            results.append(Result(path=name, status="unusable", error=exc.what))
        except OSError as exc:
            results.append(Result(path=name, status="unusable", error=exc.strerror or str(exc)))
    return results


def _with_rank(result: Result) -> Result:
    """A result without a rank of its own takes its ``rank<r>`` folder's."""
    if result.rank is not None:
        return result
    rank = folders.rank_of_path(Path(os.path.abspath(result.path)).parent.parts)
    return result if rank is None else msgspec.structs.replace(result, rank=rank)


def by_rank(results: list[Result]) -> dict[int, list[Result]]:
    """The results of each rank, for a multi-rank run's per-rank report ({} without ranks)."""
    ranks: dict[int, list[Result]] = {}
    for r in results:
        if r.rank is not None and not r.notes:  # a note is no artifact of the rank's
            ranks.setdefault(r.rank, []).append(r)
    return dict(sorted(ranks.items()))


def validate_paths(
    paths: Iterable[str | Path], *, artifact: str | None = None, max_bytes: int = 2**30, engine: str = "auto"
) -> list[schemas.Report]:
    """What ``spyre-provenance validate PATH...`` checks, as Reports (no printing).

    Files, TORCH_TRACE logs (one report per artifact, location ``log:[0/0] (line N)``, and
    one for damage to the log itself) and folders. An unusable path gives a report with
    ``artifact=None`` and its one problem at ``$``.
    """
    options = Options(artifact=artifact, max_bytes=max_bytes, engine=engine)
    results = check_paths([str(p) for p in paths], options)
    return [r.as_report() for r in results if not r.notes]  # a note is no artifact's verdict


def _check_path(path: Path, options: Options) -> list[Result]:
    if not path.exists():
        raise UnusableInput(str(path), "no such file or folder")
    if path.is_dir():
        return _check_folder(path, options)
    _check_size(path, options)
    if tracelog.looks_like_trace_log(path):
        return _check_log(path, options, explicit=True)
    if tracelog.has_log_name(path):
        raise UnusableInput(str(path), "not a TORCH_TRACE log: the first line has no glog prefix")
    return [_check_json(path, options.artifact, options)]


def _check_json(path: Path, artifact: str | None, options: Options) -> Result:
    before = read_once.stamp(path)
    data = _read(path, options)
    artifact = artifact or schemas.artifact_for_filename(path.name)
    report = schemas.validate_bytes(data, artifact, location=str(path), full=_full(options, len(data)))
    if report.ok and artifact is not None:
        read_once.keep_valid(before, artifact, data)
    return _result(str(path), report)


def _check_log(path: Path, options: Options, *, explicit: bool) -> list[Result]:
    _check_size(path, options)
    names = {options.artifact} if options.artifact else LOGGED_ARTIFACTS
    results: list[Result] = []
    damage: list[Problem] = []
    empty = 0
    for item in tracelog.read_trace(path, names=names):
        if isinstance(item, Problem):
            damage.append(item)
            continue
        if isinstance(item, tracelog.EmptyRecord):  # torch's "no provenance kept": not an artifact
            empty += 1
            continue
        location = f"{path}:{item.compile_id or '[-/-]'}"
        try:
            report = schemas.validate_bytes(
                item.payload, item.name, location=location, full=_full(options, len(item.payload))
            )
        except UnusableInput as exc:  # inside a log, an unreadable payload is a broken artifact
            report = schemas.Report(item.name, None, (Problem("$", exc.what),), location)
        result = _result(str(path), report, extra=item.problems)
        results.append(
            msgspec.structs.replace(
                result,
                compile_id=item.compile_id or "[-/-]",
                line=item.line,
                warnings=list(item.warnings),
                rank=item.rank,
            )
        )
    if damage:
        shown = damage[: schemas.MAX_PROBLEMS]
        results.append(Result(str(path), "invalid", LOG_ARTIFACT, problems=shown, omitted=len(damage) - len(shown)))
    if not results:
        # a compile that failed before any artifact was logged: say so, and where its error is
        failures = tracelog.compile_failures(path)
        if failures:
            raise UnusableInput(str(path), "; ".join(map(str, failures)))
    note = tracelog.empty_records_note(empty) if empty else None
    if not results and explicit:
        which = options.artifact or "provenance artifacts"
        raise UnusableInput(
            str(path), f"no {which} in this TORCH_TRACE log ({note or 'was INDUCTOR_PROVENANCE=1 set?'})"
        )
    if note is not None:  # no verdict: a line saying what was passed over, and why
        results.append(Result(str(path), "ok", LOG_ARTIFACT, notes=[note]))
    return results


def _check_folder(folder: Path, options: Options) -> list[Result]:
    results: list[Result] = []
    logs = 0
    for path in _walk(folder):
        try:
            if path.suffix == ".json":
                artifact = _sniff_artifact(path)
                if artifact is not None and options.artifact in (None, artifact):
                    results.append(_check_json(path, artifact, options))
            elif tracelog.is_trace_log(path):
                logs += 1
                results.extend(_check_log(path, options, explicit=False))
        except UnusableInput as exc:
            results.append(Result(path=str(path), status="unusable", error=exc.what))
        except OSError as exc:
            results.append(Result(path=str(path), status="unusable", error=exc.strerror or str(exc)))
    notes = [f"{r.path}: {n}" for r in results if r.artifact == LOG_ARTIFACT for n in r.notes]
    if len(notes) == len(results):  # nothing checked, at most logs' notes of what was passed over
        # truthful about the logs: found and read, they held no provenance artifact
        nothing = "in this folder's files or TORCH_TRACE logs" if logs else "or TORCH_TRACE logs in this folder"
        raise UnusableInput(str(folder), "; ".join([f"no provenance artifacts {nothing}", *notes]))
    return fold_copies(results)


def _walk(folder: Path) -> list[Path]:
    """Files under ``folder`` in a stable order, skipping hidden folders and temporaries, and
    the folders of an ``OUT`` that hold no log of its own (``NO_LOG_FOLDERS``: tlparse's
    pages, with its copy of each log and artifact, validated when named itself; the bundles)."""
    found = []
    for root, dirs, files in os.walk(folder):
        copies = NO_LOG_FOLDERS if Layout(Path(root)).holds_runs() else frozenset()
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in copies)
        found += [Path(root, f) for f in sorted(files) if not f.startswith(TMP_PREFIX)]
    return found


#: one artifact of one compile in one ``OUT``: (the OUT, the model label, compile id, artifact)
_Key = tuple[str, str, str, str]


def fold_copies(results: list[Result]) -> list[Result]:
    """Each artifact once. A compile's folder holds every logged artifact twice: the record
    in ``trace/<label>.log`` and the file in ``graph_<label>_NN_<compile id>_<kind>/``. Where
    both are valid, the file is named on the record's result instead of a result of its own.
    Records and files of one compile id pair in order (log line, compile order), and only
    where their counts agree; anything invalid, or unpaired, keeps its own result."""
    records: dict[_Key, list[Result]] = {}
    files: dict[_Key, list[Result]] = {}
    for r in results:
        key = _record_key(r) if r.line is not None else _file_key(r)
        if key is not None and r.status == "ok" and r.artifact != LOG_ARTIFACT:
            (records if r.line is not None else files).setdefault(key, []).append(r)
    folded: set[int] = set()
    for key, found in files.items():
        logged = records.get(key, [])
        if len(logged) != len(found):
            continue
        for record, file in zip(logged, sorted(found, key=lambda f: f.path), strict=True):
            record.copies.append(file.path)
            folded.add(id(file))
    return [r for r in results if id(r) not in folded]


def _record_key(r: Result) -> _Key | None:
    layout = Layout.of_log(Path(r.path))
    if layout is None or r.artifact is None or r.compile_id in (None, "[-/-]"):
        return None
    return str(layout.out), folders.model_label(Path(r.path).stem), (r.compile_id or "").strip("[]"), r.artifact


def _file_key(r: Result) -> _Key | None:
    folder = Path(r.path).parent
    found = folders.label_and_compile_id(folder.name)
    if found is None or found[0] is None or r.artifact is None:
        return None
    return str(folder.parent), found[0], found[1], r.artifact


def _sniff_artifact(path: Path) -> str | None:
    """A JSON file's artifact if its name or its shape leaves no doubt; else None (skipped)."""
    named = schemas.artifact_for_filename(path.name)
    if named is not None:
        return named
    if path.stat().st_size > SNIFF_MAX_BYTES:
        return None
    try:
        top = msgspec.json.decode(path.read_bytes(), type=dict[str, msgspec.Raw])
    except (msgspec.DecodeError, OSError):
        return None
    return schemas.guess_artifact(top, strict=True)


def _read(path: Path, options: Options) -> bytes:
    _check_size(path, options)
    return path.read_bytes()


def _full(options: Options, size: int) -> bool:
    """jsonschema (exact schema semantics) where it is cheap, the fast path where it is not."""
    return options.engine == "full" or (options.engine == "auto" and size <= AUTO_FULL_BYTES)


def _check_size(path: Path, options: Options) -> None:
    size = path.stat().st_size
    if size > options.max_bytes:
        raise UnusableInput(
            str(path),
            f"{jsonio.human_size(size)} is over the --max-bytes limit of {jsonio.human_size(options.max_bytes)}",
        )
    if size == 0:
        raise UnusableInput(str(path), "empty file")


def _result(path: str, report: schemas.Report, extra: tuple[Problem, ...] = ()) -> Result:
    problems = list(extra) + list(report.problems)
    return Result(
        path=path,
        status="invalid" if problems else "ok",
        artifact=report.artifact,
        version=report.version,
        problems=problems,
        omitted=report.omitted,
    )
