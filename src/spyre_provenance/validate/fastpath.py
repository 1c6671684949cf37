"""The fast validation path: msgspec typed decode + the invariants, for 100 MB+ artifacts.

No jsonschema and no generic object walk: msgspec decodes straight into the typed values
the invariants take (``dict[str, list[str]]`` for the node maps); a 2.0 mapping is checked
one map at a time, so peak memory is the text plus its largest decoded map (about 2.7x the
text for a 100 MB mapping, the text included). The types mirror the schema files; where a
type cannot say a rule (integral numbers, enums, key patterns, uniqueness) ``rules`` checks
it, so this path and the jsonschema path agree on every document
(tests/unit/test_validator_agreement.py).

Use it through ``spyre_provenance.validate.schemas.validate_bytes``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from itertools import chain, islice
from typing import Any

import msgspec

from spyre_provenance.base.errors import UnusableInput
from spyre_provenance.base.process import gc_paused
from spyre_provenance.model import wire
from spyre_provenance.model.detect import (
    Detected,
    Problem,
    detect,
    guess_artifact,
    key_path,
    quote,
)
from spyre_provenance.model.jsonio import not_utf8
from spyre_provenance.model.names import (
    ARTIFACTS,
    AUDIT,
    COMPANION_DOCUMENTS,
    DIAGNOSTICS,
    KERNEL_INFORMATION,
    KERNEL_STACK_TRACES,
    MAP_FIELDS,
    NODE_MAPPINGS,
    OPSPEC_DEBUG_HANDLES,
)
from spyre_provenance.model.records import NodeMap
from spyre_provenance.validate import rules

_MISSING: Any = object()


class FullOnly(Exception):
    """The document is one the fast engine does not read (a companion document, told by its
    shape): check it on the full path."""

    def __init__(self, artifact: str) -> None:
        super().__init__(artifact)
        self.artifact = artifact


class FastResult(msgspec.Struct):
    detected: Detected
    problems: list[Problem]
    maybe_duplicate_keys: bool  # the text may repeat an object key: parse it to find where


def check(data: bytes | str, artifact: str | None, location: str) -> FastResult:
    """Check JSON text. Raises UnusableInput when it is not a JSON object of a known artifact."""
    if not data or data.isspace():
        raise UnusableInput(location or "<input>", "empty (no JSON value)")
    if isinstance(data, bytes) and not data.isascii():
        # msgspec checks UTF-8 only in the strings it decodes: a bad byte inside a value it
        # rejects first would make the document "invalid" here and "unusable" on the full path
        _check_utf8(data, location or "<input>")
    with gc_paused():  # millions of fresh containers: the cyclic GC would rescan them all
        run = _Run(data, location)
        detected, tally = run.check(artifact)
        problems = run.problems
    maybe_dup = tally is not None and _count_disagrees(data, tally)
    return FastResult(detected, problems, maybe_dup)


class _Run:
    """One check: decode field by field so every problem gets an exact path.

    ``check`` returns the detection and a *tally* (object keys, colons inside strings) of
    what was decoded, or None when the document did not decode cleanly.
    """

    def __init__(self, data: bytes | str, location: str) -> None:
        self.data = data
        self.location = location
        self.problems: list[Problem] = []

    def check(self, artifact: str | None) -> tuple[Detected, tuple[int, int] | None]:
        top: dict[str, msgspec.Raw] = {}  # decoded for the artifacts read key by key
        if artifact in (None, NODE_MAPPINGS, OPSPEC_DEBUG_HANDLES, DIAGNOSTICS, AUDIT):
            top = self.decode(self.data, dict[str, msgspec.Raw], "$", top=True)
            artifact = artifact or guess_artifact(top)
        if artifact in COMPANION_DOCUMENTS:  # told by shape: no fast engine reads it
            raise FullOnly(artifact)
        if artifact == NODE_MAPPINGS:
            return self.node_mappings(top)
        if artifact == OPSPEC_DEBUG_HANDLES:
            return self.opspec(top)
        if artifact == DIAGNOSTICS:
            return self.diagnostics(top)
        if artifact == AUDIT:
            return self.audit(top)
        if artifact == KERNEL_STACK_TRACES:
            return self.kernel_map(artifact, list[str])
        if artifact == KERNEL_INFORMATION:
            return self.kernel_information()
        if artifact is None:
            raise unrecognized(self.location)
        raise ValueError(f"unknown artifact {artifact!r}; known: {', '.join(ARTIFACTS)}")

    def node_mappings(self, top: dict[str, msgspec.Raw]) -> tuple[Detected, Any]:
        det = _explicit_v2(top)
        if det is not None:
            return self.node_mappings_by_map(top, det)
        fields: dict[str, NodeMap] = {}
        for name in MAP_FIELDS:
            if name in top:
                value = self.decode_map(top[name], list[str], f"$.{name}")
                if value is not _MISSING:
                    fields[name] = value
        shape: dict[str, Any] = dict(fields)
        if "version" in top:
            shape["version"] = self.decode(top["version"], Any, "$.version")
        det = detect(NODE_MAPPINGS, shape)
        if det.problem is not None:
            self.problems[:] = [det.problem]
            return det, None
        if det.schema == 2 and "version" not in top:
            self.problems.append(Problem("$", 'missing required key "version"'))
        assert det.schema is not None
        self.problems.extend(rules.missing_maps(det.schema, top))
        if self.problems:
            return det, None
        # keys this validator does not know are allowed; decoded only to be counted
        extra = [self.decode(raw, Any, "$") for key, raw in top.items() if key not in shape]
        tally = _add(_tally_keys(top), *map(_tally_map, fields.values()), _tally(extra))
        self.problems.extend(rules.check(NODE_MAPPINGS, det.schema, fields))
        return det, tally

    def node_mappings_by_map(self, top: dict[str, msgspec.Raw], det: Detected) -> tuple[Detected, Any]:
        """``node_mappings`` for a document that says ``"version": 2.0``, one map at a time.

        Same problems, same order, same tally; but each map is decoded, checked, tallied
        and let go before the next is decoded, so a 100 MB mapping needs its text plus its
        largest map in memory, not all four (about 2.7x the text instead of 5.8x). Only a
        failed inverse check decodes its two maps again, to name the pairs that differ.
        """
        facts: dict[str, rules.NodeMapFacts] = {}
        tallies: list[tuple[int, int]] = []
        self.problems.extend(rules.missing_maps(2, top))
        for name in MAP_FIELDS:
            if name not in top:
                continue
            value = self.decode_map(top[name], list[str], f"$.{name}")
            if value is _MISSING or self.problems:  # the rules will not run: only decode
                continue
            facts[name] = rules.node_map_facts(name, value, True)
            tallies.append(_tally_map(value))
            del value
        if self.problems:
            return det, None
        extra = [self.decode(raw, Any, "$") for key, raw in top.items() if key not in MAP_FIELDS and key != "version"]
        tally = _add(_tally_keys(top), *tallies, _tally(extra))
        reload = lambda name: msgspec.json.decode(top[name], type=NodeMap)  # noqa: E731
        self.problems.extend(rules.check_node_map_facts(facts, reload))
        return det, tally

    def kernel_map(self, artifact: str, value_type: Any) -> tuple[Detected, Any]:
        doc = self.decode_map(self.data, value_type, "$", top=True)
        if doc is _MISSING:
            return detect(artifact, {}), None
        det = detect(artifact, doc)
        assert det.schema is not None  # a kernel map's version is in its shape: never unknown
        tally = _tally_map(doc) if value_type is list[str] else _tally(doc)
        self.problems.extend(rules.check(artifact, det.schema, doc))
        return det, tally

    def kernel_information(self) -> tuple[Detected, Any]:
        """Its version is in its entries' shape (``detect``): the entries are decoded once
        as raw values to tell, then as the entry type of that version."""
        top = self.decode(self.data, dict[str, msgspec.Raw], "$", top=True)
        det = detect(KERNEL_INFORMATION, top)
        assert det.schema is not None
        doc = self.decode_map(self.data, wire.KERNEL_INFO_ENTRIES[det.schema], "$", top=True)
        if doc is _MISSING:
            return det, None
        if det.schema == 2:
            self.problems.extend(rules.check_kernel_info_types(doc))
            if self.problems:
                return det, None
        self.problems.extend(rules.check(KERNEL_INFORMATION, det.schema, doc))
        return det, _tally(doc)

    def versioned(self, artifact: str, top: dict[str, msgspec.Raw]) -> tuple[Detected, Any]:
        """The schema version of a versioned artifact and its ``version`` value; with no
        schema, the detection problem is the document's only one."""
        version = self.decode(top["version"], Any, "$.version") if "version" in top else _MISSING
        det = detect(artifact, {} if version is _MISSING else {"version": version})
        if det.problem is not None:
            self.problems[:] = [det.problem]
        return det, version

    def opspec(self, top: dict[str, msgspec.Raw]) -> tuple[Detected, Any]:
        det, version = self.versioned(OPSPEC_DEBUG_HANDLES, top)
        if det.schema is None:
            return det, None
        fields = wire.opspec_fields(det.schema)
        for key in fields:
            if key not in top:
                self.problems.append(Problem("$", f"missing required key {quote(key)}"))
        self.problems.extend(Problem("$", f"unexpected key {quote(k)}") for k in top if k not in fields)
        kernels = self.decode_map(top["kernels"], list[wire.OpSpecEntry], "$.kernels") if "kernels" in top else None
        handles = self.decode_map(top["handles"], wire.HandleEntry, "$.handles") if "handles" in top else None
        bundles = self.decode_map(top["bundles"], wire.BundleEntry, "$.bundles") if "bundles" in top else None
        if self.problems:
            return det, None
        assert kernels is not None and handles is not None  # a missing key is a problem above
        doc: wire.OpSpecDebugHandles | wire.OpSpecDebugHandlesV2 = (
            wire.OpSpecDebugHandles(version, kernels, handles)
            if bundles is None  # a version 2 document without it has a problem above
            else wire.OpSpecDebugHandlesV2(version, kernels, handles, bundles)
        )
        self.problems.extend(rules.check_types(doc))
        if self.problems:
            return det, None
        self.problems.extend(rules.check(OPSPEC_DEBUG_HANDLES, det.schema, doc))
        return det, _add(_tally_keys(top), _tally(kernels), _tally(handles), _tally(bundles or {}))

    def diagnostics(self, top: dict[str, msgspec.Raw]) -> tuple[Detected, Any]:
        det, version = self.versioned(DIAGNOSTICS, top)
        if det.schema is None:
            return det, None
        fields = wire.diagnostics_fields(det.schema)
        self.problems.extend(Problem("$", f"missing required key {quote(k)}") for k in fields if k not in top)
        self.problems.extend(Problem("$", f"unexpected key {quote(k)}") for k in top if k not in fields)
        values = {}
        for name, type_ in wire.diagnostics_field_types(det.schema).items():
            if name in top and name != "version":
                values[name] = self.decode(top[name], type_, f"$.{name}")
        if self.problems:
            return det, None
        doc = wire.DIAGNOSTICS_DOCS[det.schema](version=version, **values)
        self.problems.extend(rules.check_diagnostics_types(doc))
        if self.problems:
            return det, None
        self.problems.extend(rules.check(DIAGNOSTICS, det.schema, doc))
        return det, _add(_tally_keys(top), _tally(list(values.values())))

    def audit(self, top: dict[str, msgspec.Raw]) -> tuple[Detected, Any]:
        """A provenance audit: top-level keys one by one (exact paths), then the rules."""
        det, version = self.versioned(AUDIT, top)
        if det.schema is None:
            return det, None
        doc_type = wire.AUDIT_DOCS[det.schema]
        fields = doc_type.__struct_fields__
        self.problems.extend(Problem("$", f"missing required key {quote(k)}") for k in fields if k not in top)
        self.problems.extend(Problem("$", f"unexpected key {quote(k)}") for k in top if k not in fields)
        values = {}
        for name, type_ in wire.field_types(doc_type).items():
            if name in top and name != "version":
                values[name] = self.decode(top[name], type_, f"$.{name}")
        if self.problems:
            return det, None
        doc = doc_type(version=version, **values)
        self.problems.extend(rules.check_audit_types(doc))
        if self.problems:
            return det, None
        self.problems.extend(rules.check(AUDIT, det.schema, doc))
        return det, _add(_tally_keys(top), _tally(list(values.values())))

    # -- decoding with exact problem paths --

    def decode(self, raw: Any, type_: Any, path: str, *, top: bool = False) -> Any:
        try:
            return msgspec.json.decode(raw, type=type_)
        except msgspec.ValidationError as exc:
            if top:  # valid JSON, but not an object: nothing here to check
                raise self.unusable(exc) from None
            self.problems.append(self.problem(exc, path))
            return _MISSING
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
        if items is _MISSING:
            return _MISSING
        before = len(self.problems)
        values = {key: self.decode(value, value_type, key_path(path, key)) for key, value in items.items()}
        if len(self.problems) == before:
            # every value decodes: what failed was a value a repeated key overwrites (readers
            # keep the last one); the tally finds and reports the repeated key
            return values
        return _MISSING

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


def _explicit_v2(top: dict[str, msgspec.Raw]) -> Detected | None:
    """The detection of node mappings whose ``version`` is 2.0, else None (a missing,
    unreadable or other version takes the general route, which reports it)."""
    if "version" not in top:
        return None
    try:
        version = msgspec.json.decode(top["version"])
    except msgspec.DecodeError:
        return None
    det = detect(NODE_MAPPINGS, {"version": version})
    return det if det.problem is None and det.schema == 2 else None


def _check_utf8(data: bytes, where: str, chunk: int = 2**20) -> None:
    """Raise the not-UTF-8 error for ``data``, decoding a slice at a time (no full copy)."""
    import codecs

    decoder = codecs.getincrementaldecoder("utf-8")()
    view = memoryview(data)
    for start in range(0, len(data), chunk):
        try:
            decoder.decode(view[start : start + chunk], final=start + chunk >= len(data))
        except UnicodeDecodeError:
            try:  # decode again from here, for the offset of the bad byte in the whole text
                data[max(0, start - 4) :].decode("utf-8")
            except UnicodeDecodeError as bad:
                offset = max(0, start - 4) + bad.start
                raise UnusableInput(where, f"not UTF-8 text (byte 0x{data[offset]:02x} at offset {offset})") from None
            raise


def unrecognized(location: str) -> UnusableInput:
    return UnusableInput(
        location or "<input>",
        "not a recognized provenance artifact (name the file after its artifact or pass --artifact)",
    )


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


# --- duplicate keys, cheaply -----------------------------------------------------------------
# In JSON text every colon outside a string separates one object key from its value, so
#     colons in the text == object keys + colons inside strings.
# Decoding keeps one value per key: a repeated key loses a key (and the strings under it),
# and the decoded side comes up short. A colon escaped as \u003a would spoil the count, so
# its presence also sends the text to the (slow, exact) parser.


def _count_disagrees(data: bytes | str, tally: tuple[int, int]) -> bool:
    if isinstance(data, bytes):
        return b"\\u003a" in data or b"\\u003A" in data or data.count(b":") != sum(tally)
    return "\\u003a" in data or "\\u003A" in data or data.count(":") != sum(tally)


def _tally_keys(obj: dict[str, Any]) -> tuple[int, int]:
    return len(obj), "".join(obj).count(":")


def _tally_map(m: dict[str, list[str]]) -> tuple[int, int]:
    """(keys, colons in strings) of a map of string lists."""
    return len(m), _colons(m) + _colons(chain.from_iterable(m.values()))


def _colons(strings: Iterable[str]) -> int:
    """Colons in the strings: joined a slice at a time (the loop stays in C, and no copy of
    all the text is made next to the decoded map)."""
    found, rest = 0, iter(strings)
    while chunk := list(islice(rest, 65536)):
        found += "".join(chunk).count(":")
    return found


def _tally(value: Any) -> tuple[int, int]:
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


def _add(*tallies: tuple[int, int]) -> tuple[int, int]:
    return sum(t[0] for t in tallies), sum(t[1] for t in tallies)
