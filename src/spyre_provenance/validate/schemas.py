"""Versioned JSON Schemas for the provenance artifacts, and the one validator behind them.

``schemas/<artifact>/v<N>.schema.json`` (JSON Schema 2020-12) states each artifact's shape;
``spyre_provenance.validate.rules`` states what a schema cannot (inverse maps, unique debug handles,
existing handle ids, ...). A document is checked one of two ways, with the same verdict:

- fast path, ``validate_bytes(data)``: msgspec decodes straight into typed values, then the
  rules run (``spyre_provenance.validate.fastpath``). For artifacts of 100 MB and more.
- full path, ``validate(doc)`` or ``validate_bytes(data, full=True)``: jsonschema against the
  schema file, then the same rules. The schema's own semantics, slower.

Both report duplicate object keys in the text (``validate(doc)`` cannot: parsing dropped
them). Results are typed: a ``Report`` with the artifact, its version, and ``Problem``s
with JSON paths like ``$.cppCodeToPost["k:1"][0]``. Input that cannot be checked at all (not
UTF-8, not JSON, top level not an object, no known artifact) raises
``spyre_provenance.base.errors.UnusableInput``. An unsupported ``version`` is a problem (the
document is INVALID), not unusable input.

Pure module: no torch import.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import importlib.resources
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import msgspec

from spyre_provenance.base.errors import UnusableInput
from spyre_provenance.model.detect import (  # re-exported: the public API lives here
    HANDLE_ID_PATTERN,
    KERNEL_KEY_PATTERN,
    Detected,
    Problem,
    artifact_for_filename,
    json_type,
    quote,
)
from spyre_provenance.model.jsonio import parse_json
from spyre_provenance.model.names import (
    ARTIFACTS,
    DIAGNOSTICS,
    KERNEL_STACK_TRACES,
    MAP_FIELDS,
    NODE_MAPPINGS,
    OPSPEC_DEBUG_HANDLES,
    SCHEMA_ONLY_DOCUMENTS,
)
from spyre_provenance.validate import fastpath, rules
from spyre_provenance.validate.kinds import KINDS, detect, guess_artifact, kind_of  # re-exported too

__all__ = [
    "ARTIFACTS",
    "Detected",
    "Problem",
    "Report",
    "artifact_for_filename",
    "available_versions",
    "check_built_artifacts",
    "detect",
    "guess_artifact",
    "load_schema",
    "schema_dir",
    "validate",
    "validate_bytes",
]

MAX_PROBLEMS = 100  # listed per report; the rest are only counted (Report.omitted)
AUTO_FULL_BYTES = 4 * 2**20  # "auto": jsonschema up to this size, the fast path above


class Report(msgspec.Struct, frozen=True):
    """The verdict on one document. ``version`` is None when it is not a supported one;
    ``artifact`` is None only in ``validate_paths`` results for input that was unusable.
    ``warnings`` (from ``validate_paths`` on a log) say how tlparse will file a valid or
    invalid artifact; they never make it invalid."""

    artifact: str | None
    version: str | None
    problems: tuple[Problem, ...] = ()
    location: str = ""
    omitted: int = 0
    warnings: tuple[Problem, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.problems


# --- finding and loading schemas -------------------------------------------------------------


def schema_dir() -> Any:
    """The folder (a ``Traversable``) holding ``<artifact>/v<N>.schema.json``.

    A wheel carries it inside the package (pyproject's hatch force-include); an editable
    install reads the repository's top-level ``schemas/``: one source of truth, no copy.
    """
    packaged = importlib.resources.files("spyre_provenance") / "schemas"
    if packaged.is_dir():
        return packaged
    repo = Path(__file__).resolve().parents[3] / "schemas"
    if repo.is_dir():
        return repo
    raise FileNotFoundError("spyre_provenance: schemas folder not found (broken installation)")


def _folder(artifact: str) -> str:
    """The schema folder of an artifact kind (its record's ``schema``) or a printed document."""
    return artifact if artifact in SCHEMA_ONLY_DOCUMENTS else kind_of(artifact).schema


def available_versions(artifact: str) -> list[int]:
    matches = (re.fullmatch(r"v([0-9]+)\.schema\.json", p.name) for p in (schema_dir() / _folder(artifact)).iterdir())
    return sorted(int(m.group(1)) for m in matches if m)


def load_schema(artifact: str, version: int) -> dict[str, Any]:
    """The parsed ``schemas/<artifact>/v<version>.schema.json`` (a copy: change it freely)."""
    return copy.deepcopy(_schema(artifact, version))


@functools.cache
def _schema(artifact: str, version: int) -> dict[str, Any]:
    return json.loads((schema_dir() / _folder(artifact) / f"v{version}.schema.json").read_text(encoding="utf-8"))


@functools.cache
def _validator(artifact: str, version: int) -> Any:
    import jsonschema  # only the full path needs it

    return jsonschema.Draft202012Validator(_schema(artifact, version))


# --- the two ways in --------------------------------------------------------------------------


def validate_bytes(
    data: bytes | bytearray | str,
    artifact: str | None = None,
    *,
    location: str = "",
    full: bool = False,
) -> Report:
    """Validate JSON text: the fast path, or with ``full=True`` jsonschema.

    ``artifact``: one of ARTIFACTS, or None to tell it by shape. ``location`` only labels the
    report and error messages (a file name, ``log:[0/0]``).
    """
    if isinstance(data, bytearray):
        data = bytes(data)
    # a companion document without a fast decoder (torch-spyre's sidecar) is small, and
    # jsonschema with its kind's rules says all there is to say of it
    full = full or (artifact in KINDS and KINDS[artifact].fast is None)
    with _depth_guard(location):
        if full:
            doc, dup_paths = parse_json(data, location=location)
            return _validate_full(doc, artifact, location, dup_paths)
        return _validate_fast(data, artifact, location)


def _validate_fast(data: bytes | str, artifact: str | None, location: str) -> Report:
    try:
        result = fastpath.check(data, artifact, location)
    except fastpath.FullOnly as only:  # told by shape: a document the fast engine does not read
        doc, dup_paths = parse_json(data, location=location)
        return _validate_full(doc, only.artifact, location, dup_paths)
    det, problems = result.detected, result.problems
    if result.maybe_duplicate_keys:  # rare: pay for a full parse to find where
        del result
        _, dup_paths = parse_json(data, location=location)
        assert det.artifact is not None and det.schema is not None
        schema = _schema(det.artifact, det.schema)
        problems[:0] = [Problem(_format_path(p, schema), rules.MSG_DUPLICATE_KEY) for p in dup_paths]
    return _report(det, problems, location)


def validate(doc: Any, artifact: str | None = None, *, location: str = "") -> Report:
    """Full path on an already parsed document (``json.load`` result): jsonschema + rules."""
    with _depth_guard(location):
        return _validate_full(doc, artifact, location, [])


def check_built_artifacts(
    node_mappings: Any, stack_traces: Any = None, opspec_handles: Any = None, diagnostics: Any = None
) -> list[str]:
    """The emitter's gate: validate artifacts built in memory (Structs or plain values).

    Returns one ``"<artifact>: <path>: <message>"`` line per problem; empty means emit.
    None arguments are skipped. Same validator as the CLI, always on the fast engine: the
    two engines give the same verdict on every document (tests/unit/test_validator_agreement.py),
    and on a compile's critical path jsonschema costs: 0.1-0.25 s for a 24-layer
    transformer's 135 kB mapping, 40% of the hook's own time (``make bench``).
    """
    lines: list[str] = []
    built = (  # the hook's four, in its argument order
        (NODE_MAPPINGS, node_mappings),
        (KERNEL_STACK_TRACES, stack_traces),
        (OPSPEC_DEBUG_HANDLES, opspec_handles),
        (DIAGNOSTICS, diagnostics),
    )
    for artifact, doc in built:
        if doc is None:
            continue
        data = msgspec.json.encode(doc)
        try:
            report = validate_bytes(data, artifact)
        except UnusableInput as exc:
            lines.append(f"{artifact}: {exc.what}")
            continue
        lines += [f"{artifact}: {p}" for p in report.problems]
        current = KINDS[artifact].current
        if report.version is not None and report.version != current:
            lines.append(f"{artifact}: built as version {report.version}, expected {current}")
    return lines


# --- the full path ----------------------------------------------------------------------------


def _validate_full(doc: Any, artifact: str | None, location: str, dup_paths: list[tuple[Any, ...]]) -> Report:
    if not isinstance(doc, Mapping):
        raise UnusableInput(location or "<input>", f"top level is a JSON {json_type(doc)}, expected an object")
    det = detect(artifact, doc)
    if det.artifact is None:
        raise fastpath.unrecognized(location)
    if det.problem is not None or det.schema is None:
        return _report(det, [det.problem] if det.problem else [], location)
    schema = _schema(det.artifact, det.schema)
    problems = [Problem(_format_path(p, schema), rules.MSG_DUPLICATE_KEY) for p in dup_paths]
    well_typed = True
    for error in _validator(det.artifact, det.schema).iter_errors(doc):
        problems.extend(_from_jsonschema(error, schema))
        # a failed pattern/uniqueness check leaves the types intact: the rules (which check
        # the same, more precisely) can still run; any other failure and they cannot
        well_typed &= error.validator in ("pattern", "uniqueItems", "not")
    if well_typed:  # the kind's rules, on its full decoder's typed values
        kind = kind_of(det.artifact)
        problems.extend(kind.rules(det.schema, kind.full(det.schema, doc)))
    return _report(det, problems, location)


def _from_jsonschema(error: Any, schema: dict[str, Any]) -> Iterator[Problem]:
    """A jsonschema error as Problems, worded like the fast path's."""
    parts = list(error.absolute_path)
    if "propertyNames" in error.absolute_schema_path:
        parts.append(error.instance)  # jsonschema points at the object; point at the key
    path = _format_path(parts, schema)
    kind, expected, value = error.validator, error.validator_value, error.instance
    if kind == "type":
        names = [expected] if isinstance(expected, str) else expected
        yield Problem(path, f"expected {' or '.join(names)}, got {json_type(value)}")
    elif kind == "required" and list(expected) == list(MAP_FIELDS):  # node mappings version 1
        yield from rules.missing_maps(1, value)
    elif kind == "required":
        yield from (Problem(path, f"missing required key {quote(k)}") for k in expected if k not in value)
    elif kind == "dependentRequired" and set(expected) <= set(MAP_FIELDS):  # node mappings 2.0: all four or none
        yield from rules.missing_maps(2, value)
    elif kind == "dependentRequired":  # kernel_information v2: a shape without its dtype, or the reverse
        for field, partners in expected.items():
            if field in value and any(p not in value for p in partners):
                yield Problem(path, rules.missing_partner(field, [p for p in partners if p not in value]))
    elif kind == "anyOf":  # the only one: a dimension of a kernel_information v2 shape
        yield Problem(path, rules.bad_dim(value))
    elif kind == "additionalProperties":
        known = error.schema.get("properties", {})
        yield from (Problem(path, f"unexpected key {quote(k)}") for k in value if k not in known)
    elif kind == "pattern":
        messages = {
            KERNEL_KEY_PATTERN: rules.MSG_KERNEL_KEY,
            HANDLE_ID_PATTERN: rules.MSG_HANDLE_ID,
            rules.DTYPE_PATTERN: rules.MSG_DTYPE,
        }
        yield Problem(path, messages.get(expected, f"does not match {expected}"))
    elif kind == "not":  # the only "not" in the schemas: version 1's bare kernel names
        yield Problem(path, rules.MSG_BARE_NAME)
    elif kind == "uniqueItems":
        yield Problem(path, f"duplicate entry {quote(rules.first_duplicate(value))}")
    elif kind == "const":
        yield Problem(path, f"expected {quote(expected)}, got {quote(value)}")
    elif kind == "enum":
        yield Problem(path, f"expected one of {', '.join(map(quote, expected))}, got {quote(value)}")
    elif kind == "minimum":
        yield Problem(path, f"must be >= {expected}, got {quote(value)}")
    elif kind == "minLength" and expected == 1:  # diagnostics: backend (v2 on), a gap's why (v4)
        yield Problem(path, rules.MSG_EMPTY)
    elif kind is None:  # a `false` subschema
        yield Problem(path, "not allowed in this version")
    else:
        yield Problem(path, error.message)


def _format_path(parts: Iterable[Any], schema: dict[str, Any]) -> str:
    """``$`` + parts: dotted where the schema names a field, bracketed for map keys/indices."""
    out, node = "$", schema
    for part in parts:
        node = _resolve(node, schema)
        if isinstance(part, int):
            out, node = f"{out}[{part}]", node.get("items", True)
        elif part in node.get("properties", {}) and part.isidentifier():
            out, node = f"{out}.{part}", node["properties"][part]
        else:
            out, node = rules.key_path(out, part), node.get("additionalProperties", True)
    return out


def _resolve(node: Any, root: dict[str, Any]) -> dict[str, Any]:
    while isinstance(node, dict) and "$ref" in node:
        node = root["$defs"][node["$ref"].rsplit("/", 1)[-1]]
    return node if isinstance(node, dict) else {}


# --- small helpers ----------------------------------------------------------------------------


def _report(det: Detected, problems: list[Problem], location: str) -> Report:
    unique = list(dict.fromkeys(problems))  # schema and rules may say the same at one path
    assert det.artifact is not None
    return Report(
        artifact=det.artifact,
        version=det.version,
        problems=tuple(unique[:MAX_PROBLEMS]),
        location=location,
        omitted=max(0, len(unique) - MAX_PROBLEMS),
    )


@contextlib.contextmanager
def _depth_guard(location: str) -> Iterator[None]:
    """Every reader here recurses per nesting level; provenance artifacts nest 6 deep."""
    try:
        yield
    except RecursionError:
        raise UnusableInput(location or "<input>", "nested too deeply to check") from None
