"""Kernel information (``kernel_information``): torch's per-kernel record in AOTInductor
packages (stack traces, post-grad nodes, and from torch 2.14 shapes and dtypes), a bare map
``{"<kernel>:<N>": {...}}``.

Its record and every part of it: no version key (torch 2.14's ``extern_semantic_key`` on an
entry makes it version 2), told by its shape as a bare map of objects, the rules (kernel
keys, no list naming one thing twice, a dtype per input shape; version 2's shapes and dtype
pairs), its stack traces normalized and redacted.

Pure: no torch, no jsonschema.
"""

from __future__ import annotations

import copy
import types
from collections.abc import Mapping
from typing import Any

import msgspec

from spyre_provenance.links import portable
from spyre_provenance.links.redact import Redactor
from spyre_provenance.model import wire
from spyre_provenance.model.detect import Detected, Problem, bare_map, key_path, quote, raw_type
from spyre_provenance.model.names import KERNEL_INFORMATION
from spyre_provenance.model.names import KINDS as FILINGS
from spyre_provenance.model.wire import KERNEL_INFO_FIELDS, KERNEL_INFO_V2_MARK, KernelInfoEntryV2
from spyre_provenance.validate.decoding import MISSING, Decoded, Decoding, tally
from spyre_provenance.validate.kind import Kind
from spyre_provenance.validate.rules import (
    DTYPE_RE,
    KERNEL_INFO_PAIRS,
    MSG_DTYPE,
    NO_DUPLICATE,
    bad_dim,
    check_kernel_keys,
    first_duplicate,
    missing_partner,
)

# --- which version, which shape ---------------------------------------------------------------


def read_version(artifact: str, doc: Mapping[str, Any]) -> Detected:
    # the file has no version: torch 2.14 added extern_semantic_key to every entry
    return Detected(artifact, "2", 2) if _has_v2_entries(doc) else Detected(artifact, "1", 1)


def _has_v2_entries(doc: Mapping[str, Any]) -> bool:
    """Whether some kernel_information entry (decoded or ``msgspec.Raw``) has the field only
    version 2 has. An entry that is not an object says nothing; validation reports it."""
    for value in doc.values():
        if isinstance(value, msgspec.Raw):
            if raw_type(value) != "object":
                continue
            try:
                value = msgspec.json.decode(value, type=dict[str, msgspec.Raw])
            except msgspec.MsgspecError:
                continue
        if isinstance(value, Mapping) and KERNEL_INFO_V2_MARK in value:
            return True
    return False


SHAPE = bare_map("object")


# --- the two decoders ------------------------------------------------------------------------


def fast(run: Decoding) -> Decoded:
    """Its version is in its entries' shape (``read_version``): the entries are decoded once
    as raw values to tell, then as the entry type of that version."""
    det = read_version(KERNEL_INFORMATION, run.top())
    assert det.schema is not None
    doc = run.decode_map(run.data, wire.KERNEL_INFO_ENTRIES[det.schema], "$", top=True)
    if doc is MISSING:
        return det, None, None
    if det.schema == 2:
        run.problems.extend(check_types(doc))
        if run.problems:
            return det, None, None
    return det, doc, tally(doc)


def full(schema: int, doc: Mapping[str, Any]) -> Any:
    return msgspec.convert(dict(doc), types.GenericAlias(dict, (str, wire.KERNEL_INFO_ENTRIES[schema])))


# --- the rules -------------------------------------------------------------------------------


def check_types(doc: dict[str, KernelInfoEntryV2]) -> list[Problem]:
    """What the kernel_information v2 schema says about shapes, dtypes and the field pairs
    that the wire type leaves open."""
    problems: list[Problem] = []
    for key, info in doc.items():
        base = key_path("$", key)
        for name, partner in KERNEL_INFO_PAIRS.items():
            if getattr(info, name) is not msgspec.UNSET and getattr(info, partner) is msgspec.UNSET:
                problems.append(Problem(base, missing_partner(name, [partner])))
        shapes = (
            {}
            if info.input_shapes is msgspec.UNSET
            else {f"{base}.input_shapes[{i}]": s for i, s in enumerate(info.input_shapes)}
        )
        if info.output_shape is not msgspec.UNSET:
            shapes[f"{base}.output_shape"] = info.output_shape
        for path, shape in shapes.items():
            for j, dim in enumerate(shape):
                if dim == "" or (
                    not isinstance(dim, str) and (dim < 0 or (isinstance(dim, float) and not dim.is_integer()))
                ):
                    problems.append(Problem(f"{path}[{j}]", bad_dim(dim)))
        dtypes = (
            {}
            if info.input_dtypes is msgspec.UNSET
            else {f"{base}.input_dtypes[{i}]": d for i, d in enumerate(info.input_dtypes)}
        )
        if info.output_dtype is not msgspec.UNSET:
            dtypes[f"{base}.output_dtype"] = info.output_dtype
        problems.extend(Problem(path, MSG_DTYPE) for path, dtype in dtypes.items() if not DTYPE_RE.search(dtype))
    return problems


def check(schema: int, doc: dict[str, Any]) -> list[Problem]:
    """Kernel keys, no list naming one thing twice, a dtype per input shape."""
    problems: list[Problem] = []
    check_kernel_keys(doc, "$", True, problems)
    for key, info in doc.items():
        for name in KERNEL_INFO_FIELDS:
            dup = first_duplicate(getattr(info, name))
            if dup is not NO_DUPLICATE:
                problems.append(Problem(f"{key_path('$', key)}.{name}", f"duplicate entry {quote(dup)}"))
        shapes, dtypes = getattr(info, "input_shapes", msgspec.UNSET), getattr(info, "input_dtypes", msgspec.UNSET)
        if shapes is not msgspec.UNSET and dtypes is not msgspec.UNSET and len(shapes) != len(dtypes):
            message = f"{len(dtypes)} dtypes for {len(shapes)} input shapes (one per input tensor)"
            problems.append(Problem(f"{key_path('$', key)}.input_dtypes", message))
    return problems


# --- golden files and --redact-paths: its machine-dependent text -------------------------------


def normalize(doc: Any, redactor: Redactor) -> Any:
    if not isinstance(doc, dict):
        return doc
    for entry in doc.values():
        if isinstance(entry, dict) and "stack_traces" in entry:
            entry["stack_traces"] = portable.normalize_traces(entry["stack_traces"], redactor)
    return doc


def redact(doc: dict[str, Any] | None, redactor: Redactor) -> dict[str, Any] | None:
    if doc is None:
        return None
    doc = copy.deepcopy(doc)
    for entry in doc.values():
        entry["stack_traces"] = [redactor.redact_text(t) for t in entry.get("stack_traces", [])]
    return doc


KIND = Kind(
    FILINGS[KERNEL_INFORMATION],
    version=read_version,
    current="1",
    fast=fast,
    full=full,
    rules=check,
    normalize=normalize,
    redact=redact,
    shape=SHAPE,
)
