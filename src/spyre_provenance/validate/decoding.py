"""The fast engine's decoding: msgspec into typed values, each problem at its exact path.

A ``Decoding`` is one check of one document's text. Each kind's fast decoder
(``fast`` in its module, ``validate/kinds/``) reads it through ``top`` (the top-level object, key by key),
``decode`` and ``decode_map``, and counts what it decoded (``tally_*``: object keys and
colons inside strings), which ``fastpath`` holds against the text to find repeated keys.

Pure: no torch, no jsonschema.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from itertools import chain, islice
from typing import Any

import msgspec

from spyre_provenance.base.errors import UnusableInput
from spyre_provenance.model.detect import Detected, Problem, VersionReader, key_path, quote
from spyre_provenance.model.jsonio import not_utf8

MISSING: Any = object()  # what a decode that found a problem returns
#: (object keys, colons inside strings) of what was decoded; None: it did not decode cleanly
Tally = tuple[int, int] | None
#: What a kind's fast decoder returns: the detection, the typed document for the rules, the tally.
Decoded = tuple[Detected, Any, Tally]


class Decoding:
    """One check: decode field by field so every problem gets an exact path."""

    def __init__(self, data: bytes | str, location: str) -> None:
        self.data = data
        self.location = location
        self.problems: list[Problem] = []
        self._top: dict[str, msgspec.Raw] | None = None

    def top(self) -> dict[str, msgspec.Raw]:
        """The top-level object, its values still raw (decoded once, on first use)."""
        if self._top is None:
            self._top = self.decode(self.data, dict[str, msgspec.Raw], "$", top=True)
        return self._top

    def versioned(self, artifact: str, read: VersionReader) -> tuple[Detected, Any]:
        """The schema version of a versioned artifact (``read``, its kind's version reader)
        and its ``version`` value; with no schema, the detection problem is the document's
        only one."""
        top = self.top()
        version = self.decode(top["version"], Any, "$.version") if "version" in top else MISSING
        det = read(artifact, {} if version is MISSING else {"version": version})
        if det.problem is not None:
            self.problems[:] = [det.problem]
        return det, version

    def keys_of(self, fields: Iterable[str]) -> None:
        """The top level has exactly ``fields``: a problem per missing and per unexpected key."""
        top, fields = self.top(), tuple(fields)
        self.problems.extend(Problem("$", f"missing required key {quote(k)}") for k in fields if k not in top)
        self.problems.extend(Problem("$", f"unexpected key {quote(k)}") for k in top if k not in fields)

    def decode(self, raw: Any, type_: Any, path: str, *, top: bool = False) -> Any:
        try:
            return msgspec.json.decode(raw, type=type_)
        except msgspec.ValidationError as exc:
            if top:  # valid JSON, but not an object: nothing here to check
                raise self.unusable(exc) from None
            self.problems.append(self.problem(exc, path))
            return MISSING
        except msgspec.DecodeError as exc:
            raise self.unusable(exc) from None

    def decode_map(self, raw: Any, value_type: Any, path: str, *, top: bool = False) -> Any:
        """An object of ``value_type`` values. msgspec writes ``[...]`` for a dict key in its
        error paths; to name the key, a failed map is decoded again value by value."""
        try:
            return msgspec.json.decode(raw, type=dict[str, value_type])
        except msgspec.ValidationError:
            pass
        except msgspec.DecodeError as exc:
            raise self.unusable(exc) from None
        items = self.decode(raw, dict[str, msgspec.Raw], path, top=top)
        if items is MISSING:
            return MISSING
        before = len(self.problems)
        values = {key: self.decode(value, value_type, key_path(path, key)) for key, value in items.items()}
        if len(self.problems) == before:
            # every value decodes: what failed was a value a repeated key overwrites (readers
            # keep the last one); the tally finds and reports the repeated key
            return values
        return MISSING

    def problem(self, exc: msgspec.ValidationError, path: str) -> Problem:
        message, _, where = str(exc).partition(" - at `$")
        if message.startswith(("Number out of range", "Integer value out of range")):  # json.loads refuses these too
            raise self.unusable(exc)
        return Problem(path + where.rstrip("`"), _plain_message(message))

    def unusable(self, exc: Exception) -> UnusableInput:
        where = self.location or "<input>"
        message = str(exc).partition(" - at `")[0]
        if isinstance(self.data, bytes):
            try:
                self.data.decode("utf-8")
            except UnicodeDecodeError as bad:
                return not_utf8(where, self.data, bad)
        if isinstance(exc, msgspec.ValidationError) and message.startswith("Expected `object`"):
            got = message.rpartition("got `")[2].rstrip("`")
            got = _TYPE_NAMES.get(got, got)
            return UnusableInput(where, f"top level is a JSON {got}, expected an object")
        if "truncated" in message:
            return UnusableInput(where, "not valid JSON: the text ends before the document does")
        return UnusableInput(where, f"not valid JSON: {message.removeprefix('JSON is malformed: ')}")


_TYPE_NAMES = {"str": "string", "int": "integer", "float": "number", "bool": "boolean"}


def _plain_message(message: str) -> str:
    """msgspec's wording in the words the jsonschema path uses."""
    m = re.fullmatch(r"Expected `(.+)`, got `(.+)`", message)
    if m:
        names = [_TYPE_NAMES.get(t, t) for t in m.group(1).split(" | ")]
        if "integer" in names and "number" in names:
            names.remove("integer")
        return f"expected {' or '.join(names)}, got {_TYPE_NAMES.get(m.group(2), m.group(2))}"
    m = re.fullmatch(r"Object missing required field `(.+)`", message)
    if m:
        return f"missing required key {quote(m.group(1))}"
    m = re.fullmatch(r"Object contains unknown field `(.+)`", message)
    if m:
        return f"unexpected key {quote(m.group(1))}"
    return message[:1].lower() + message[1:]


# --- the tally: what was decoded, counted as the text counts it ---------------------------


def tally_keys(obj: dict[str, Any]) -> tuple[int, int]:
    return len(obj), "".join(obj).count(":")


def tally_map(m: dict[str, list[str]]) -> tuple[int, int]:
    """(keys, colons in strings) of a map of string lists."""
    return len(m), _colons(m) + _colons(chain.from_iterable(m.values()))


def _colons(strings: Iterable[str]) -> int:
    """Colons in the strings: joined a slice at a time (the loop stays in C, and no copy of
    all the text is made next to the decoded map)."""
    found, rest = 0, iter(strings)
    while chunk := list(islice(rest, 65536)):
        found += "".join(chunk).count(":")
    return found


def tally(value: Any) -> tuple[int, int]:
    """(object keys, colons in strings) of any decoded value; a Struct counts as an object
    with all its fields but the UNSET ones (the text had exactly those keys)."""
    keys = colons = 0
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            colons += v.count(":")
        elif isinstance(v, dict):
            keys += len(v)
            colons += "".join(v).count(":")
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
        elif isinstance(v, msgspec.Struct):
            present = [value for f in v.__struct_fields__ if (value := getattr(v, f)) is not msgspec.UNSET]
            keys += len(present)
            stack.extend(present)
    return keys, colons


def add(*tallies: tuple[int, int]) -> tuple[int, int]:
    return sum(t[0] for t in tallies), sum(t[1] for t in tallies)
