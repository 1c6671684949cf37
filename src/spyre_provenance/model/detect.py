"""What a document is: which artifact, which version, and how to say where it is wrong.

``artifact_for_filename`` names the artifact by file name, ``guess_by_shape`` by shape
(each kind's ``Shape``, made with ``keyed`` or ``bare_map``: the ``shape`` part of its record,
which ``validate.kinds.guess_artifact`` gives), ``versions`` and ``explicit_version`` make the
version readers of the kinds' records (their ``version``, which ``validate.kinds.detect``
applies); a ``Problem`` is one thing wrong at a JSON path: fields dotted (``$.preToPost``), map
keys bracketed and quoted (``["relu"]``), list indices bracketed (``[0]``); ``quote`` cuts a
hostile value to a readable size. Used by the validators, the log reader and golden. Each
kind's own shape and version reader live in its module (``validate/kinds/``): none is named
here.

Pure: no torch, no jsonschema.
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

import msgspec

from spyre_provenance.model.names import FILENAME_PATTERNS, NOT_ARTIFACT_PATTERNS

# The schema files' pattern strings, applied as jsonschema applies them (re.search), so both
# validation paths accept exactly the same keys.
KERNEL_KEY_PATTERN = r"^.+:[1-9][0-9]*$"
HANDLE_ID_PATTERN = r"^(0|[1-9][0-9]{0,18})$"
KERNEL_KEY_RE = re.compile(KERNEL_KEY_PATTERN)


def split_key(key: str) -> tuple[str, str]:
    """A mapping key ``<kernel>:<N>`` as (kernel name, N as text), split on the last colon:
    kernel names may hold colons (``torch.ops.aten.sort.stable`` does not, a namespaced
    one may). A key without a colon is all name: ``(key, "")``."""
    name, colon, handle = key.rpartition(":")
    return (name, handle) if colon else (key, "")


class Problem(msgspec.Struct, frozen=True):
    """One thing wrong, and where: ``path`` is a JSON path (``$`` = the whole document), or
    ``line N`` for a problem in a TORCH_TRACE log itself."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class Detected(msgspec.Struct, frozen=True):
    """What ``detect`` found: the artifact, its version as users see it ("2.0", "1"), the N
    of the ``v<N>.schema.json`` to check it against, or, for an unknown version, a problem."""

    artifact: str | None
    version: str | None
    schema: int | None
    problem: Problem | None = None


# --- which artifact, which version ---------------------------------------------------------


def artifact_for_filename(name: str) -> str | None:
    """The artifact a file name says it holds (``inductor_provenance_tracking_node_mappings_3.json``)."""
    base = Path(name).name
    if any(fnmatch.fnmatchcase(base, pattern) for pattern in NOT_ARTIFACT_PATTERNS):
        return None
    for artifact, pattern in FILENAME_PATTERNS.items():
        if fnmatch.fnmatchcase(base, pattern):
            return artifact
    return None


#: A shape test: does a top-level object (values decoded or ``msgspec.Raw``) look like the
#: kind? ``strict`` (folder scans) also wants debug-handle keys on a bare map, so
#: ``{"a": ["b"]}`` is not taken for one.
ShapeTest = Callable[[Mapping[str, Any], bool], bool]

KEYED, FIELD, BARE = 0, 1, 2


class Shape(NamedTuple):
    """How a kind is told by its shape: the ``shape`` part of its record (``validate.kind``).

    ``tier`` says how telling its test is, so a looser test never takes a document a tighter
    one would: ``KEYED``, two keys of its own; ``FIELD``, one of its fields; ``BARE``, a bare
    map of kernel keys told only by its first value (a keyed document is a map too)."""

    test: ShapeTest
    tier: int


def keyed(*keys: str) -> Shape:
    """A kind told by top-level keys only it has."""
    return Shape(lambda doc, strict: all(key in doc for key in keys), KEYED)


def bare_map(first_value: str) -> Shape:
    """A map of kernel keys whose first value is of the JSON type ``first_value``."""

    def test(doc: Mapping[str, Any], strict: bool) -> bool:
        if not doc or (strict and not all(KERNEL_KEY_RE.search(k) for k in doc)):
            return False
        return raw_type(next(iter(doc.values()))) == first_value

    return Shape(test, BARE)


def guess_by_shape(doc: Mapping[str, Any], shapes: Iterable[tuple[str, Shape]], *, strict: bool = False) -> str | None:
    """The first of ``shapes`` (artifact, shape) whose test ``doc`` passes, tier by tier (in
    the order given within a tier), or None. ``validate.kinds.guess_artifact`` gives the
    registry's shapes."""
    ordered = sorted(shapes, key=lambda named: named[1].tier)  # stable: the registry's order within a tier
    return next((artifact for artifact, shape in ordered if shape.test(doc, strict)), None)


#: How a kind tells its version from a document (``detect``): the ``version`` part of its
#: record (``validate.kind``). Takes the artifact's name and the top-level object (values
#: decoded or ``msgspec.Raw``); an unknown version is a Detected with a problem.
VersionReader = Callable[[str, Mapping[str, Any]], Detected]


def versions(*known: int) -> VersionReader:
    """A kind whose ``version`` key holds one of ``known``; without it, version 1 (validation
    reports the missing key)."""
    table: dict[float, tuple[str, int]] = {n: (str(n), n) for n in known}

    def read(artifact: str, doc: Mapping[str, Any]) -> Detected:
        if "version" in doc:
            return explicit_version(artifact, doc["version"], table)
        return Detected(artifact, "1", 1)

    return read


def explicit_version(artifact: str, value: Any, known: dict[float, tuple[str, int]]) -> Detected:
    """The version ``value`` names, of ``known`` (its number -> (as users see it, schema N))."""
    if json_type(value) in ("integer", "number") and value in known:
        shown, schema = known[value]
        return Detected(artifact, shown, schema)
    names = ", ".join(shown for shown, _ in known.values())
    message = f"unsupported version {quote(value)} (this validator knows {names})"
    return Detected(artifact, None, None, Problem("$.version", message))


def raw_type(value: Any) -> str:
    """JSON type of a value, decoded or ``msgspec.Raw`` (which starts at its first byte)."""
    if isinstance(value, msgspec.Raw):
        first = bytes(memoryview(value)[:1])
        return {b"{": "object", b"[": "array"}.get(first, "other")
    return json_type(value)


# --- saying where and what -------------------------------------------------------------------


def key_path(path: str, key: str) -> str:
    return f"{path}[{quote(key)}]"


QUOTE_LIMIT = 200  # characters of a value shown in a problem; a hostile 100 MB name is cut


def quote(value: Any) -> str:
    """A value as JSON text for a problem message, cut to about QUOTE_LIMIT characters."""
    if isinstance(value, str) and len(value) > QUOTE_LIMIT:
        return json.dumps(value[: QUOTE_LIMIT // 2], ensure_ascii=False)[:-1] + f'..." ({len(value)} characters)'
    text = json.dumps(value, ensure_ascii=False)
    if len(text) > QUOTE_LIMIT:
        return text[: QUOTE_LIMIT // 2] + f"... ({len(text)} characters of JSON)"
    return text


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__
