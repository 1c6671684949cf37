"""Chrome trace JSON (Trace Event Format, JSON Object Format) read and written one event at
a time, so a trace of hundreds of MB never sits in memory.

``torch.profiler``'s ``export_chrome_trace`` writes ``{"schemaVersion": ..., "deviceProperties":
[...], "traceEvents": [{...}, ...], ...}``, plain or gzipped. ``read_trace`` yields the
top-level members in file order: ``("member", key, value)`` for everything but the events,
``("event", index, event)`` for each of ``traceEvents``; ``TraceWriter`` writes the same
object back member by member. Each value is decoded by the standard library's C decoder
(``raw_decode``) from a buffer that holds at most one value plus a read chunk; a value
larger than ``MAX_VALUE_BYTES`` (a trace of one 1 GB line) is refused, not buffered.

Damage is ``UnusableInput`` naming the file and where: not JSON, truncated, a top level
that is not an object, ``traceEvents`` not a list, an event that is not an object or has no
``name``/``ph``. Pure: no torch.
"""

from __future__ import annotations

import codecs
import contextlib
import gzip
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from spyre_provenance.base import files
from spyre_provenance.base.errors import UnusableInput

EVENTS = "traceEvents"
CHUNK = 1 << 20
MAX_VALUE_BYTES = 64 << 20  # one event (or other member) larger than this is no profiler's
_GZIP_MAGIC = b"\x1f\x8b"
_WS = " \t\n\r"
_decoder = json.JSONDecoder()


#: a trace file as read: plain, or gunzipped on the fly
Binary = IO[bytes] | gzip.GzipFile


def open_binary(path: Path) -> Binary:
    """The trace's bytes, gunzipped when the file is gzip (by its magic, not its name)."""
    fh = open(path, "rb")  # noqa: SIM115 - returned to the caller, who closes it
    if fh.read(2) == _GZIP_MAGIC:
        fh.close()
        return gzip.GzipFile(path, "rb")
    fh.seek(0)
    return fh


class _Buffer:
    """Text decoded from the file chunk by chunk; ``pos`` is where parsing stands."""

    def __init__(self, fh: Binary, location: str) -> None:
        self.fh = fh
        self.location = location
        self.utf8 = codecs.getincrementaldecoder("utf-8")()
        self.text = ""
        self.pos = 0
        self.eof = False

    def more(self) -> bool:
        if self.eof:
            return False
        try:
            chunk = self.fh.read(CHUNK)
        except (OSError, EOFError, gzip.BadGzipFile) as exc:
            raise UnusableInput(self.location, f"cannot be read: {exc}") from None
        try:
            text = self.utf8.decode(chunk, final=not chunk)
        except UnicodeDecodeError as exc:
            raise UnusableInput(self.location, f"not UTF-8 text ({exc.reason})") from None
        if self.pos > CHUNK:  # drop what was parsed: the buffer stays about one chunk long
            self.text, self.pos = self.text[self.pos :], 0
        self.text += text
        self.eof = not chunk
        return bool(chunk)

    def peek(self) -> str:
        """The next character that is not whitespace ("" at the end of the file)."""
        while True:
            while self.pos < len(self.text) and self.text[self.pos] in _WS:
                self.pos += 1
            if self.pos < len(self.text):
                return self.text[self.pos]
            if not self.more():
                return ""

    def expect(self, char: str, what: str) -> None:
        found = self.peek()
        if found != char:
            shown = "the end of the file (truncated)" if not found else repr(found)
            raise UnusableInput(self.location, f"{what}: expected {char!r}, found {shown}")
        self.pos += 1

    def value(self, what: str) -> Any:
        """One JSON value, decoded whole; refilled until it is complete and followed by
        something (a number cut at the chunk's end would decode short)."""
        self.peek()
        error: str | None
        while True:
            try:
                value, end = _decoder.raw_decode(self.text, self.pos)
            except json.JSONDecodeError as exc:
                if self.eof:
                    raise UnusableInput(self.location, f"{what}: not valid JSON ({exc.msg})") from None
                # the message only: the exception holds the whole buffer (``doc``) and, through
                # its traceback, this frame, a cycle that would keep a buffer alive per retry
                error = exc.msg
            else:
                if end < len(self.text) or self.eof:
                    self.pos = end
                    return value
                error = None
            pending = len(self.text) - self.pos
            if pending > MAX_VALUE_BYTES:
                why = f"not valid JSON ({error})" if error else "too large"
                raise UnusableInput(
                    self.location, f"{what}: {why} within {MAX_VALUE_BYTES >> 20} MiB; no profiler writes such a value"
                )
            # double what is pending before decoding again: a long value costs O(n log n), not O(n^2)
            while len(self.text) - self.pos < 2 * pending and self.more():
                pass


def read_trace(path: str | os.PathLike[str]) -> Iterator[tuple[str, Any, Any]]:
    """``("member", key, value)`` and ``("event", index, event)`` in file order."""
    path = Path(path)
    location = str(path)
    if not path.is_file():
        raise UnusableInput(location, "no such file")
    with open_binary(path) as fh:
        buf = _Buffer(fh, location)
        buf.expect("{", "not a Chrome trace (a JSON object with traceEvents)")
        seen_events = False
        first = True
        while True:
            if buf.peek() == "}":
                buf.pos += 1
                break
            if not first:
                buf.expect(",", "after a top-level member")
            first = False
            key = buf.value("a top-level key")
            if not isinstance(key, str):
                raise UnusableInput(location, "a top-level key is not a string: not JSON")
            buf.expect(":", f"after the key {key!r}")
            if key == EVENTS:
                if buf.peek() != "[":
                    kind = _json_kind(buf.value(f"$.{EVENTS}"))
                    raise UnusableInput(location, f"$.{EVENTS} is a JSON {kind}, expected an array of events")
                buf.pos += 1
                seen_events = True
                yield ("member", key, None)
                yield from _events(buf)
            else:
                yield ("member", key, buf.value(f"$.{key}"))
        if buf.peek() != "":
            raise UnusableInput(location, "text after the trace's JSON object")
        if not seen_events:
            raise UnusableInput(location, f"no {EVENTS} array: not a Chrome trace in JSON Object Format")


def _events(buf: _Buffer) -> Iterator[tuple[str, Any, Any]]:
    index = 0
    if buf.peek() == "]":
        buf.pos += 1
        return
    while True:
        where = f"$.{EVENTS}[{index}]"
        event = buf.value(where)
        if not isinstance(event, dict):
            raise UnusableInput(buf.location, f"{where} is a JSON {_json_kind(event)}, expected an event object")
        for field in ("name", "ph"):
            if not isinstance(event.get(field), str):
                raise UnusableInput(buf.location, f"{where} has no {field!r} string: not a Trace Event Format event")
        yield ("event", index, event)
        index += 1
        if buf.peek() == "]":
            buf.pos += 1
            return
        buf.expect(",", f"after {where}")


def _json_kind(value: Any) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}.get(
        type(value), "number"
    )


class TraceWriter:
    """Writes a trace member by member into a temporary file beside ``path``; ``commit``
    renames it over ``path`` (gzipped when the name ends in ``.gz``), ``discard`` removes it."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        files.remove_stale_temporaries(self.path.parent, recursive=False)
        self.tmp = self.path.parent / f"{files.TMP_PREFIX}{os.getpid()}-{self.path.name}.part"
        raw = open(self.tmp, "wb")  # noqa: SIM115 - closed in commit/discard
        self._raw = raw
        self._fh: Binary = gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) if self.path.suffix == ".gz" else raw
        self._members = 0
        self._events = -1  # -1: not inside traceEvents

    def member(self, key: str, value: Any) -> None:
        self._close_events()
        self._fh.write((b"{" if not self._members else b",\n") + json.dumps(key).encode() + b": ")
        self._members += 1
        if key == EVENTS:
            self._fh.write(b"[")
            self._events = 0
        else:
            self._fh.write(json.dumps(value).encode())

    def event(self, event: dict[str, Any]) -> None:
        self._fh.write((b"\n" if not self._events else b",\n") + json.dumps(event).encode())
        self._events += 1

    def _close_events(self) -> None:
        if self._events >= 0:
            self._fh.write(b"\n]")
            self._events = -1

    def commit(self) -> Path:
        self._close_events()
        self._fh.write(b"}\n" if self._members else b"{}\n")
        if self._fh is not self._raw:
            self._fh.close()
        self._raw.flush()
        os.fsync(self._raw.fileno())
        self._raw.close()
        os.replace(self.tmp, self.path)
        return self.path

    def discard(self) -> None:
        for fh in (self._fh, self._raw):
            with contextlib.suppress(Exception):  # already failing; the file goes anyway
                fh.close()
        self.tmp.unlink(missing_ok=True)
