"""What a document is: which artifact, which version, and how to say where it is wrong.

``artifact_for_filename`` names the artifact by file name, ``guess_by_shape`` by shape
from each kind's ``Shape`` (``*_shape``: the ``shape`` part of its record in
``validate.kinds``, whose ``guess_artifact`` gives them), each kind's version reader
(``*_version``: its record's ``version``, which ``validate.kinds.detect`` applies) its
version; a ``Problem`` is one thing
wrong at a JSON path: fields dotted (``$.preToPost``), map keys bracketed and quoted
(``["relu"]``), list indices bracketed (``[0]``); ``quote`` cuts a hostile value to a
readable size. Used by the validators, the log reader and golden.

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

from spyre_provenance.model.names import FILENAME_PATTERNS, MAP_FIELDS, NOT_ARTIFACT_PATTERNS
from spyre_provenance.model.wire import KERNEL_INFO_V2_MARK

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
    """How a kind is told by its shape: the ``shape`` part of its record (``validate.kinds``).

    ``tier`` says how telling its test is, so a looser test never takes a document a tighter
    one would: ``KEYED``, two keys of its own; ``FIELD``, one of its fields; ``BARE``, a bare
    map of kernel keys told only by its first value (a keyed document is a map too)."""

    test: ShapeTest
    tier: int


def keyed(*keys: str) -> Shape:
    """A kind told by top-level keys only it has."""
    return Shape(lambda doc, strict: all(key in doc for key in keys), KEYED)


def _mapping_fields(doc: Mapping[str, Any], strict: bool) -> bool:
    return any(f in doc for f in MAP_FIELDS) or list(doc.keys()) == ["version"]


def bare_map(first_value: str) -> Shape:
    """A map of kernel keys whose first value is of the JSON type ``first_value``."""

    def test(doc: Mapping[str, Any], strict: bool) -> bool:
        if not doc or (strict and not all(KERNEL_KEY_RE.search(k) for k in doc)):
            return False
        return _kind(next(iter(doc.values()))) == first_value

    return Shape(test, BARE)


sidecar_shape = keyed("schemaVersion", "kernelIdentities")
opspec_shape = keyed("kernels", "handles")
diagnostics_shape = keyed("faults", "partial")
audit_shape = keyed("graphs", "toolchain")
mapping_shape = Shape(_mapping_fields, FIELD)
stack_traces_shape = bare_map("array")
kernel_information_shape = bare_map("object")


def guess_by_shape(doc: Mapping[str, Any], shapes: Iterable[tuple[str, Shape]], *, strict: bool = False) -> str | None:
    """The first of ``shapes`` (artifact, shape) whose test ``doc`` passes, tier by tier (in
    the order given within a tier), or None. ``validate.kinds.guess_artifact`` gives the
    registry's shapes."""
    ordered = sorted(shapes, key=lambda named: named[1].tier)  # stable: the registry's order within a tier
    return next((artifact for artifact, shape in ordered if shape.test(doc, strict)), None)


#: How a kind tells its version from a document (``detect``): the ``version`` part of its
#: record (``validate.kinds``). Takes the artifact's name and the top-level object (values
#: decoded or ``msgspec.Raw``); an unknown version is a Detected with a problem.
VersionReader = Callable[[str, Mapping[str, Any]], Detected]


def mapping_version(artifact: str, doc: Mapping[str, Any]) -> Detected:
    """Node mappings without ``version`` are version 1, unless their kernel keys carry
    ``:<N>`` handles: then they are 2.0 with the key missing (which validation reports)."""
    if "version" in doc:
        return _explicit_version(artifact, doc["version"], {2.0: ("2.0", 2)})
    return Detected(artifact, "2.0", 2) if _has_handle_keys(doc) else Detected(artifact, "1", 1)


def stack_traces_version(artifact: str, doc: Mapping[str, Any]) -> Detected:
    """Stack traces never have a version key: ``:<N>`` keys (or no keys) make them version 2."""
    v2 = not doc or any(KERNEL_KEY_RE.search(k) for k in doc)
    return Detected(artifact, "2", 2) if v2 else Detected(artifact, "1", 1)


def kernel_information_version(artifact: str, doc: Mapping[str, Any]) -> Detected:
    # the file has no version: torch 2.14 added extern_semantic_key to every entry
    return Detected(artifact, "2", 2) if _has_v2_entries(doc) else Detected(artifact, "1", 1)


def versions(*known: int) -> VersionReader:
    """A kind whose ``version`` key holds one of ``known``; without it, version 1 (validation
    reports the missing key)."""
    table: dict[float, tuple[str, int]] = {n: (str(n), n) for n in known}

    def read(artifact: str, doc: Mapping[str, Any]) -> Detected:
        if "version" in doc:
            return _explicit_version(artifact, doc["version"], table)
        return Detected(artifact, "1", 1)

    return read


opspec_version = versions(1, 2)
diagnostics_version = versions(1, 2, 3, 4, 5, 6)
audit_version = versions(1)
source_lines_version = versions(1)


def sidecar_version(artifact: str, doc: Mapping[str, Any]) -> Detected:
    """torch-spyre's sidecar names its version ``schemaVersion``."""
    if "schemaVersion" in doc:
        found = _explicit_version(artifact, doc["schemaVersion"], {1: ("1", 1)})
        if found.problem is not None:
            return Detected(artifact, None, None, Problem("$.schemaVersion", found.problem.message))
        return found
    return Detected(artifact, "1", 1)  # validation reports the missing key


def _explicit_version(artifact: str, value: Any, known: dict[float, tuple[str, int]]) -> Detected:
    if json_type(value) in ("integer", "number") and value in known:
        shown, schema = known[value]
        return Detected(artifact, shown, schema)
    names = ", ".join(shown for shown, _ in known.values())
    message = f"unsupported version {quote(value)} (this validator knows {names})"
    return Detected(artifact, None, None, Problem("$.version", message))


def _has_handle_keys(doc: Mapping[str, Any]) -> bool:
    kernels = doc.get("cppCodeToPost")
    if isinstance(kernels, dict) and any(KERNEL_KEY_RE.search(k) for k in kernels):
        return True
    posts = doc.get("postToCppCode")
    return isinstance(posts, dict) and any(
        isinstance(n, str) and KERNEL_KEY_RE.search(n)
        for names in posts.values()
        if isinstance(names, list)
        for n in names
    )


def _has_v2_entries(doc: Mapping[str, Any]) -> bool:
    """Whether some kernel_information entry (decoded or ``msgspec.Raw``) has the field only
    version 2 has. An entry that is not an object says nothing; validation reports it."""
    for value in doc.values():
        if isinstance(value, msgspec.Raw):
            if _kind(value) != "object":
                continue
            try:
                value = msgspec.json.decode(value, type=dict[str, msgspec.Raw])
            except msgspec.MsgspecError:
                continue
        if isinstance(value, Mapping) and KERNEL_INFO_V2_MARK in value:
            return True
    return False


def _kind(value: Any) -> str:
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
