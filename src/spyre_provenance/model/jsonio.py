"""JSON text in, strictly: every reader of an artifact, a manifest or a log payload parses here.

Stricter than ``json.loads``: duplicate keys are found (and refused by ``load_json``), NaN,
Infinity, out-of-range numbers and lone UTF-16 surrogates are refused, as msgspec refuses
them, so the fast path and the full path read the same documents. Files are read under a size
limit checked before a byte is read. Every failure is one ``UnusableInput`` naming the place.

Pure: no torch, no jsonschema.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from spyre_provenance.base.errors import UnusableInput
from spyre_provenance.base.process import gc_paused
from spyre_provenance.model.detect import key_path

DEFAULT_MAX_BYTES = 2**30  # files larger than this are refused unless the limit is raised
MAX_BYTES_ENV = "SPYRE_PROVENANCE_MAX_BYTES"  # the limit for every command (validate: --max-bytes)


def parse_json(data: bytes | str, *, location: str = "") -> tuple[Any, list[tuple[Any, ...]]]:
    """Parse JSON text, noting every duplicated object key (``json.loads`` drops them).

    Returns the document (the last value wins, as in every JSON reader) and the raw path
    (keys and indices) of each duplicated key. Stricter than ``json.loads``: NaN, Infinity
    and numbers beyond float range are refused, as msgspec refuses them. Raises UnusableInput.
    """
    where = location or "<input>"
    if isinstance(data, (bytes, bytearray)):
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError as bad:
            raise not_utf8(where, bytes(data), bad) from None
    else:
        text = data
    if not text or text.isspace():
        raise UnusableInput(where, "empty (no JSON value)")
    repeated: list[tuple[dict, list[str]]] = []

    def pairs_hook(pairs: list[tuple[str, Any]]) -> dict:
        obj = dict(pairs)
        if len(obj) != len(pairs):
            counts: dict[str, int] = {}
            for key, _ in pairs:
                counts[key] = counts.get(key, 0) + 1
            repeated.append((obj, [k for k, n in counts.items() if n > 1]))
        return obj

    try:
        with gc_paused():
            doc = json.loads(text, object_pairs_hook=pairs_hook, parse_constant=_refuse, parse_float=_finite)
    except json.JSONDecodeError as exc:
        raise UnusableInput(where, f"not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})") from None
    except ValueError as exc:  # from _refuse/_finite, or an integer with too many digits
        raise UnusableInput(where, f"not valid JSON: {exc}") from None
    except RecursionError:
        raise UnusableInput(where, "nested too deeply to check") from None
    if _SURROGATE.search(text) and _has_lone_surrogate(doc):
        # valid JSON grammar, but no Unicode text: msgspec (the fast path) refuses it too, and
        # printing it fails
        raise UnusableInput(where, "not valid JSON: a string holds a lone UTF-16 surrogate (\\ud800-\\udfff)")
    return doc, _locate(doc, repeated)


def load_json(data: bytes | str, *, location: str = "") -> Any:
    """``parse_json`` for readers that do not report duplicate keys themselves: a repeated
    key is refused (UnusableInput naming its path) instead of silently keeping one value."""
    doc, dup_paths = parse_json(data, location=location)
    if dup_paths:
        where = location or "<input>"
        shown = ", ".join(format_raw_path(p) for p in dup_paths[:3])
        more = f" and {len(dup_paths) - 3} more" if len(dup_paths) > 3 else ""
        raise UnusableInput(where, f"duplicate key at {shown}{more} (JSON readers keep only one of the values)")
    return doc


def read_file(path: str | Path, *, max_bytes: int | None = None) -> bytes:
    """A file's bytes, refused (UnusableInput) when it is larger than ``max_bytes`` (default:
    ``default_max_bytes()``), before anything is read."""
    path = Path(path)
    limit = default_max_bytes() if max_bytes is None else max_bytes
    try:
        size = path.stat().st_size
        if size > limit:
            raise UnusableInput(str(path), f"{human_size(size)} is over the size limit of {human_size(limit)}")
        return path.read_bytes()
    except OSError as exc:
        raise UnusableInput(str(path), exc.strerror or str(exc)) from None


def default_max_bytes() -> int:
    """The size limit: ``SPYRE_PROVENANCE_MAX_BYTES`` (``500M``, ``2G``, bytes), else 1 GiB."""
    text = os.environ.get(MAX_BYTES_ENV)
    if not text:
        return DEFAULT_MAX_BYTES
    try:
        return parse_size(text)
    except ValueError:
        raise UnusableInput(MAX_BYTES_ENV, f"not a size: {text!r} (examples: 1000000, 500M, 2G)") from None


def parse_size(text: str) -> int:
    """``"1000000"``, ``"500M"``, ``"2G"``, ``"64KiB"`` -> bytes; ValueError otherwise."""
    m = re.fullmatch(r"\s*([0-9]+)\s*([KMG]?)(?:i?B)?\s*", text, re.IGNORECASE)
    if not m:
        raise ValueError(f"not a size: {text!r}")
    return int(m.group(1)) * 1024 ** "_KMG".index(m.group(2).upper() or "_")


def human_size(n: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} bytes"


_SURROGATE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}|[\ud800-\udfff]")
_SURROGATE_CHAR = re.compile("[\ud800-\udfff]")


def _has_lone_surrogate(doc: Any) -> bool:
    stack = [doc]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            if _SURROGATE_CHAR.search(value):
                return True
        elif isinstance(value, dict):
            stack.extend(value)
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return False


def not_utf8(location: str, data: bytes, bad: UnicodeDecodeError) -> UnusableInput:
    return UnusableInput(location, f"not UTF-8 text (byte 0x{data[bad.start]:02x} at offset {bad.start})")


def format_raw_path(parts: tuple[Any, ...]) -> str:
    """``$`` + raw parts (keys and indices) in the validator's path syntax."""
    out = "$"
    for part in parts:
        out = f"{out}[{part}]" if isinstance(part, int) else key_path(out, part)
    return out


def _locate(doc: Any, repeated: list[tuple[dict, list[str]]]) -> list[tuple[Any, ...]]:
    """Raw paths (object path + key) of the repeated keys, found by object identity."""
    if not repeated:
        return []
    wanted = {id(obj): keys for obj, keys in repeated}
    found: list[tuple[Any, ...]] = []
    stack: list[tuple[Any, tuple[Any, ...]]] = [(doc, ())]
    while stack:
        value, parts = stack.pop()
        items = value.items() if isinstance(value, dict) else enumerate(value)
        if isinstance(value, dict):
            found.extend(parts + (k,) for k in wanted.get(id(value), ()))
        stack.extend((v, parts + (k,)) for k, v in items if isinstance(v, (dict, list)))
    return sorted(found, key=lambda p: [str(x) for x in p])


def _refuse(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"number {text} is out of range")
    return value
