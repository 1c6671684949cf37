"""Read TORCH_TRACE structured logs, the files tlparse reads, and pull artifacts out of them.

Each record is one envelope line, then (when the envelope has ``has_payload``) the payload,
one TAB-prefixed line per payload line::

    V1202 10:33:41.253000 3455 torch/_inductor/codecache.py:2016] {"artifact": {"name":
        "inductor_provenance_tracking_node_mappings", "encoding": "json"}, "frame_id": 0,
        "frame_compile_id": 0, "attempt": 0, "has_payload": "a85dd891e58c86bc2245f8b8281802d5"}
    <TAB>{"preToPost": ..., "version": 2.0}

``has_payload`` is the MD5 of the payload: its lines, TABs removed, joined by "\\n". Blank
lines are skipped anywhere, as tlparse skips them. The reader streams: it holds one payload
at a time, and only the payloads asked for (``names``); the rest are hashed line by line.

Damage (a line without the glog prefix, an envelope that is not JSON, a payload that does
not hash to its ``has_payload``) is reported as a ``Problem`` whose path is ``line N``,
never raised. How tlparse will file a provenance record that is not damaged (an envelope
with no compile id, or only part of one) is a warning on the entry (``TraceEntry.warnings``),
worded after what tlparse 0.4 does with it (``compile_id_warning``). A provenance record
with no payload at all is neither: it is torch saying no provenance was kept for the graph
(``logs_nothing``), read as not logged (``EmptyRecord``). Pure module: no torch import.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Container, Generator, Iterable, Iterator
from typing import BinaryIO

import msgspec

from spyre_provenance.model.detect import Problem
from spyre_provenance.model.names import (
    LOGGED_ARTIFACTS,
    OUTPUT_CODE,
    POST_GRAD_GRAPHS,
)

# torch's TorchLogsFormatter prefix: optional "[rankN]:", glog level + MMDD hh:mm:ss.uuuuuu,
# the writing process's id (``record.process``), path:line, "] ". tlparse's regex is the same,
# unanchored. The one reading of it: the rank parent (``cli.ranks``) finds a rank's torn log by its pid.
GLOG_PREFIX = re.compile(rb"(?:\[rank\d+\]:)?[VIWEC]\d{4} \d{2}:\d{2}:\d{2}\.\d{6} (?P<pid>\d+) [^:]+:\d+\] ")

# Envelope keys that are not the record's kind.
_METADATA_KEYS = {"rank", "frame_id", "frame_compile_id", "attempt", "compiled_autograd_id", "has_payload"}
_COMPILE_ID_KEYS = ("frame_id", "frame_compile_id", "attempt")
# tlparse's CompileId: four optional u32 fields, read from the envelope's top level
_TLPARSE_ID_KEYS = ("compiled_autograd_id", *_COMPILE_ID_KEYS)
_U32_LIMIT = 2**32
_MD5_HEX = re.compile(r"[0-9a-f]{32}")  # tlparse decodes lowercase hex only


class TraceEntry(msgspec.Struct, frozen=True):
    """One record of the log, with its payload."""

    line: int  # 1-based line of the envelope
    name: str  # the artifact name for "artifact" records, else the record kind
    compile_id: str | None  # as tlparse shows it: "[0/0]", "[1/0_1]", "[!0/2/0]"; None: no ids
    payload: bytes  # TABs removed, lines joined by "\n": exactly what has_payload hashes
    encoding: str | None = None  # "json", "string" (artifact records only)
    problems: tuple[Problem, ...] = ()  # damage to this record: MD5 mismatch
    # not damage: how tlparse will file a record without a (whole) compile id
    warnings: tuple[Problem, ...] = ()
    rank: int | None = None  # the envelope's "rank": torch stamps it once a process group exists

    @property
    def text(self) -> str:
        return self.payload.decode("utf-8", errors="replace")


class EmptyRecord(msgspec.Struct, frozen=True):
    """A provenance record logged without a payload: torch saying it kept no provenance for
    the graph, not an artifact (``logs_nothing``). Readers take it as not logged."""

    line: int
    name: str
    compile_id: str | None


def logs_nothing(envelope: dict) -> bool:
    """Whether a record is a provenance artifact logged with no payload (no ``has_payload``).

    Inductor writes these on every FX-graph-cache hit of a graph compiled without provenance
    tracking (``codecache.py``: its ``payload_fn`` returns the entry's mapping, None): the
    record says only that no provenance was kept for the graph.
    """
    return "has_payload" not in envelope and record_name(envelope) in LOGGED_ARTIFACTS


def empty_records_note(count: int) -> str:
    """Why ``count`` empty records (``EmptyRecord``) are passed over: one line for every reader."""
    records = "1 provenance record on the log is" if count == 1 else f"{count} provenance records on the log are"
    return (
        f"{records} empty: Inductor logs them so on a cache hit of a graph compiled without"
        " provenance tracking (TORCHINDUCTOR_FX_GRAPH_CACHE); they hold no provenance"
    )


def count_empty_records(paths: Iterable[str | os.PathLike[str]]) -> int:
    """How many ``EmptyRecord`` the logs among ``paths`` hold (other files are passed over)."""
    logs = [p for p in paths if os.path.isfile(p) and looks_like_trace_log(p)]
    return sum(isinstance(item, EmptyRecord) for log in logs for item in read_trace(log))


def empty_records_aside(paths: Iterable[str | os.PathLike[str]]) -> str:
    """For a reader that found no provenance in the logs among ``paths``: `` (why)`` when they
    hold empty records (a warm-cache log of an untracked compile), else nothing."""
    empty = count_empty_records(paths)
    return f" ({empty_records_note(empty)})" if empty else ""


def has_log_name(path: str | os.PathLike[str]) -> bool:
    """Whether the name is one torch gives TORCH_TRACE logs (``*.log``, ``dedicated_log_torch_trace*``)."""
    name = os.path.basename(path)
    return name.endswith(".log") or name.startswith("dedicated_log_torch_trace")


def looks_like_trace_log(path: str | os.PathLike[str]) -> bool:
    """Whether the first non-blank line starts with the glog prefix (reads at most 64 KiB);
    False for a file that cannot be read."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(65536)
    except OSError:
        return False
    for line in head.splitlines():
        if line.strip():
            return GLOG_PREFIX.match(line) is not None
    return False


def is_trace_log(path: str | os.PathLike[str]) -> bool:
    """A file found in a folder is taken for a log when both its name and its content say so."""
    return has_log_name(path) and looks_like_trace_log(path)


def read_trace(
    source: str | os.PathLike[str] | BinaryIO,
    *,
    names: Container[str] | None = LOGGED_ARTIFACTS,
) -> Iterator[TraceEntry | EmptyRecord | Problem]:
    """Stream the records named in ``names`` (None: every record) and every problem found.

    A provenance record logged without a payload comes as an ``EmptyRecord``, never as a
    ``TraceEntry``: it holds no artifact to read. Problems inside a yielded record are on ``entry.problems``; problems elsewhere (lines that
    are no record, records of other names that are damaged) are yielded as they are found,
    consecutive alike ones merged into one (``lines 10-20``).
    """
    if isinstance(source, (str, os.PathLike)):
        with open(source, "rb") as fh:
            yield from _Reader(names).read(fh)
    else:
        yield from _Reader(names).read(source)


def artifact_payloads(
    source: str | os.PathLike[str] | BinaryIO, names: Container[str] | None = None
) -> Iterator[tuple[str, str, str]]:
    """``(compile id, name, payload text)`` of each record (of ``names``; None: all), in log
    order. Damage is skipped here; ``read_trace`` reports it. Compile id "" when absent."""
    for item in read_trace(source, names=names):
        if isinstance(item, TraceEntry):
            yield item.compile_id or "", item.name, item.text


def _rank(envelope: dict) -> int | None:
    rank = envelope.get("rank")
    return rank if isinstance(rank, int) and not isinstance(rank, bool) and rank >= 0 else None


class GraphSplitter:
    """The one rule that splits a compile id's records into graphs (a training compile logs
    its forward and its backward under one id), for every reader of logs.

    Fed the records in log order, ``place`` says which graph of its compile id a record
    belongs to (0-based) and whether it starts that graph: the id's first record starts its
    first graph; a post-grad graph or output code starts the next one once the current
    graph has its code. Records after a graph's code (mapping, stack traces, metrics) stay
    with it.
    """

    def __init__(self) -> None:
        self._current: dict[str, tuple[int, bool]] = {}  # compile id -> (position, has code)

    def place(self, compile_id: str, name: str | None) -> tuple[int, bool]:
        current = self._current.get(compile_id)
        starts = current is None or (current[1] and (name in POST_GRAD_GRAPHS or name == OUTPUT_CODE))
        position = 0 if current is None else current[0] + starts
        has_code = (not starts and current is not None and current[1]) or name == OUTPUT_CODE
        self._current[compile_id] = (position, has_code)
        return position, starts


def compile_id(envelope: dict) -> str | None:
    """tlparse's name for the compile an envelope belongs to ("-" for a missing part)."""
    frame, frame_compile = envelope.get("frame_id"), envelope.get("frame_compile_id")
    autograd, attempt = envelope.get("compiled_autograd_id"), envelope.get("attempt")
    if frame is None and frame_compile is None and autograd is None:
        return None
    text = "[" + (f"!{autograd}/" if autograd is not None else "")
    text += f"{'-' if frame is None else frame}/{'-' if frame_compile is None else frame_compile}"
    return text + (f"_{attempt}]" if attempt else "]")


def compile_id_warning(envelope: dict, line: int) -> str | None:
    """What tlparse (0.4) does with a record whose envelope has no whole compile id, or None
    when it files the record with its compile.

    tlparse reads ``compiled_autograd_id``, ``frame_id``, ``frame_compile_id`` and
    ``attempt`` as optional unsigned 32-bit integers (null = absent) and writes a record's
    files to the folder ``<autograd>_<frame>_<frame compile>_<attempt>``, ``-`` for an
    absent part. It renders one provenance page per folder, from that folder's files, except
    that a folder key with ``frame_compile_id`` but no ``attempt`` is taken as attempt 0:
    such records land in ``-_0_0_-`` while the page is built from ``-_0_0_0``. A value of
    another type drops the whole id: the files go to ``unknown_<line>`` and only a page
    ``(unknown)`` is built, from a folder of that name, which holds nothing.
    """
    ids: dict[str, int | None] = {}
    for key in _TLPARSE_ID_KEYS:
        value = envelope.get(key)
        if value is not None and not (type(value) is int and 0 <= value < _U32_LIMIT):
            return (
                f"{key} {_shown(value)} is not a compile id number (an integer 0 to {_U32_LIMIT - 1}):"
                f" tlparse files the record under unknown_{line}, and no provenance page shows it"
            )
        ids[key] = value
    present = [k for k in _COMPILE_ID_KEYS if ids[k] is not None]
    if len(present) == len(_COMPILE_ID_KEYS):
        return None
    folder = "_".join("-" if ids[k] is None else str(ids[k]) for k in _TLPARSE_ID_KEYS)
    if not present and ids["compiled_autograd_id"] is None:
        # torch's own records outside any compile context: AOTInductor compiles log every
        # record so, and tlparse renders their page from that shared folder
        return (
            "no compile id in the envelope (frame_id, frame_compile_id, attempt), as torch logs"
            f" AOTInductor compiles: tlparse files it under {folder} with every record that has"
            f" none, and builds provenance_tracking_{folder}.html from that folder"
        )
    if ids["compiled_autograd_id"] is not None and ids["frame_id"] is None and ids["frame_compile_id"] is None:
        return None  # a compiled-autograd graph: torch logs no frame ids for it, tlparse pages it as is
    missing = [k for k in _COMPILE_ID_KEYS if ids[k] is None]
    which = f"partial compile id ({', '.join(present)}; no {', '.join(missing)})"
    if ids["frame_compile_id"] is not None and ids["attempt"] is None:
        page = folder[: folder.rindex("_")] + "_0"  # the attempt tlparse assumes for the page
        return (
            f"{which}: tlparse files it under {folder} but builds the page"
            f" provenance_tracking_{page}.html from {page}: the page will be empty"
        )
    return (
        f"{which}: tlparse files it under {folder}, apart from the records that carry all three:"
        f" provenance_tracking_{folder}.html will be empty"
    )


def _shown(value: object) -> str:
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."


class _Record:
    """The record being read: its envelope, a running MD5, and (if wanted) its payload lines."""

    def __init__(self, line: int, envelope: dict, keep: bool) -> None:
        self.line = line
        self.envelope = envelope
        self.md5 = hashlib.md5(usedforsecurity=False)
        self.lines: list[bytes] | None = [] if keep else None
        self.count = 0

    def add(self, payload_line: bytes) -> None:
        self.md5.update(b"\n" + payload_line if self.count else payload_line)
        self.count += 1
        if self.lines is not None:
            self.lines.append(payload_line)


class _Reader:
    def __init__(self, names: Container[str] | None) -> None:
        self.names = names
        self.run: tuple[str, int, int] | None = None  # (message, first line, last line)

    def read(self, fh: BinaryIO) -> Iterator[TraceEntry | EmptyRecord | Problem]:
        record: _Record | None = None
        for number, raw in enumerate(fh, 1):
            line = raw.rstrip(b"\n").rstrip(b"\r")
            if not line:
                continue
            if line.startswith(b"\t"):
                if record is not None and "has_payload" in record.envelope:
                    record.add(line[1:])
                else:
                    yield from self.damaged(number, "payload line without an envelope before it")
                continue
            if record is not None:
                yield from self.finish(record)
                record = None
            record = yield from self.start(number, line)
        if record is not None:
            yield from self.finish(record)
        yield from self.flush()

    def start(self, number: int, line: bytes) -> Generator[Problem, None, _Record | None]:
        """Parse one envelope line into a record (returned via StopIteration), or report it."""
        prefix = GLOG_PREFIX.match(line)
        if prefix is None:
            yield from self.damaged(number, "no glog prefix: not a TORCH_TRACE record")
            return None
        try:
            envelope = json.loads(line[prefix.end() :])
        except (ValueError, UnicodeDecodeError):
            yield from self.damaged(number, "envelope is not valid JSON")
            return None
        if not isinstance(envelope, dict):
            yield from self.damaged(number, "envelope is not a JSON object")
            return None
        yield from self.flush()
        wanted = self.names is None or record_name(envelope) in self.names
        return _Record(number, envelope, keep=wanted)

    def finish(self, record: _Record) -> Iterator[TraceEntry | EmptyRecord | Problem]:
        envelope = record.envelope
        if record.lines is not None and logs_nothing(envelope):
            yield EmptyRecord(record.line, record_name(envelope) or "unknown", compile_id(envelope))
            return
        problems = []
        expected = envelope.get("has_payload")
        if expected is not None:
            actual = record.md5.hexdigest()
            if not isinstance(expected, str) or not _MD5_HEX.fullmatch(expected):
                problems.append(f"has_payload {json.dumps(expected)} is not an MD5 hex digest")
            elif expected != actual:
                problems.append(f"payload MD5 {actual} does not match has_payload {expected}: the payload is damaged")
        if record.lines is None:  # not asked for: report damage, drop the record
            for message in problems:
                yield Problem(f"line {record.line}", f"{record_name(envelope) or 'unknown'} record: {message}")
            return
        artifact = envelope.get("artifact")
        encoding = artifact.get("encoding") if isinstance(artifact, dict) else None
        warnings = []
        if record_name(envelope) in LOGGED_ARTIFACTS:  # torch_version and such belong to no compile
            warning = compile_id_warning(envelope, record.line)
            if warning is not None:
                warnings.append(Problem(f"line {record.line}", warning))
        yield TraceEntry(
            line=record.line,
            name=record_name(envelope) or "unknown",
            compile_id=compile_id(envelope),
            payload=b"\n".join(record.lines),
            encoding=encoding if isinstance(encoding, str) else None,
            problems=tuple(Problem(f"line {record.line}", m) for m in problems),
            warnings=tuple(warnings),
            rank=_rank(envelope),
        )

    def damaged(self, number: int, message: str) -> Iterator[Problem]:
        """Merge runs of alike damage (a pasted binary would otherwise be a million lines)."""
        if self.run is not None and self.run[0] == message:
            self.run = (message, self.run[1], number)
            return
        yield from self.flush()
        self.run = (message, number, number)

    def flush(self) -> Iterator[Problem]:
        if self.run is not None:
            message, first, last = self.run
            self.run = None
            yield Problem(f"line {first}" if first == last else f"lines {first}-{last}", message)


def record_name(envelope: dict) -> str | None:
    """What a record is: its artifact's name, else its envelope's first non-metadata key
    (``inductor_output_code``, ``dynamo_start``); None for an envelope of metadata only."""
    artifact = envelope.get("artifact")
    if isinstance(artifact, dict) and isinstance(artifact.get("name"), str):
        return artifact["name"]
    return next((k for k in envelope if k not in _METADATA_KEYS), None)


# --- a compile that failed ----------------------------------------------------------------

#: The record torch writes (``convert_frame._compile``) with the traceback of a failed compile.
DYNAMO_ERROR = "dynamo_error"
COMPILATION_METRICS = "compilation_metrics"


class CompileFailure(msgspec.Struct, frozen=True):
    """A compile the log records as failed: torch's ``compilation_metrics`` with a
    ``fail_type``, and where the traceback is (its ``dynamo_error`` record)."""

    compile_id: str | None  # as tlparse shows it: "[0/0]"
    error: str  # "<fail_type>: <what fail_reason says>", one line
    line: int  # the ``dynamo_error`` record's line, else the metrics record's

    def __str__(self) -> str:
        where = f"its traceback is at line {self.line} of this log"
        return f"the compile {self.compile_id or '[-/-]'} failed ({self.error}); {where}"


def compile_failures(source: str | os.PathLike[str]) -> list[CompileFailure]:
    """The failed compiles of a log, in log order (damage is ``read_trace``'s to report).

    Only envelopes are read: a metrics record carries its data in the envelope itself.
    """
    tracebacks: dict[str | None, int] = {}
    failures: list[CompileFailure] = []
    for number, envelope in _envelopes(source, (DYNAMO_ERROR.encode(), COMPILATION_METRICS.encode())):
        name = record_name(envelope)
        if name == DYNAMO_ERROR:
            tracebacks[compile_id(envelope)] = number
        elif name == COMPILATION_METRICS:
            failure = _failure(envelope.get(COMPILATION_METRICS), number, tracebacks)
            if failure is not None:
                failures.append(failure)
    return failures


def _envelopes(source: str | os.PathLike[str], markers: tuple[bytes, ...]) -> Iterator[tuple[int, dict]]:
    """The envelopes of a log's records whose line holds one of ``markers`` (a cheap byte
    test before any JSON is parsed), with their line numbers; payload lines and envelopes
    that do not parse are passed over (damage is ``read_trace``'s to report)."""
    with open(source, "rb") as fh:
        for number, raw in enumerate(fh, 1):
            if raw.startswith(b"\t") or not any(marker in raw for marker in markers):
                continue
            prefix = GLOG_PREFIX.match(raw)
            try:
                envelope = json.loads(raw[prefix.end() :]) if prefix else None
            except (ValueError, UnicodeDecodeError):
                continue
            if isinstance(envelope, dict):
                yield number, envelope


def _failure(metrics: object, line: int, tracebacks: dict[str | None, int]) -> CompileFailure | None:
    if not isinstance(metrics, dict) or not metrics.get("fail_type"):
        return None
    raw_id = metrics.get("compile_id")
    cid = f"[{raw_id}]" if isinstance(raw_id, str) and raw_id else None
    reason = [part.strip() for part in str(metrics.get("fail_reason") or "").splitlines() if part.strip()]
    # "backend='x' raised:" says who; the next line says what
    what = " ".join(reason[:2]) if reason and reason[0].endswith(":") else (reason[0] if reason else "")
    error = f"{metrics['fail_type']}: {what}" if what else str(metrics["fail_type"])
    return CompileFailure(cid, error, tracebacks.get(cid, line))


# --- a compile that never finished ----------------------------------------------------------

DYNAMO_START = "dynamo_start"


def unfinished_compiles(source: str | os.PathLike[str]) -> list[str]:
    """The compiles a log saw start (``dynamo_start``) but never end (no
    ``compilation_metrics``, which torch writes when a frame's compile ends, failed or not):
    the process stopped in the middle of them (killed, interrupted). In log order, as
    tlparse names them; the attempt is left out (a restarted analysis logs its metrics
    under the next attempt)."""
    started: dict[tuple[object, object, object], str] = {}
    ended: set[tuple[object, object, object]] = set()
    for _, envelope in _envelopes(source, (b'"' + DYNAMO_START.encode(), COMPILATION_METRICS.encode())):
        key = (envelope.get("compiled_autograd_id"), envelope.get("frame_id"), envelope.get("frame_compile_id"))
        name = record_name(envelope)
        if name == DYNAMO_START:
            started.setdefault(key, compile_id({**envelope, "attempt": 0}) or "[-/-]")
        elif name == COMPILATION_METRICS:
            ended.add(key)
    return [cid for key, cid in started.items() if key not in ended]
