"""The OpSpec table (``spyre_opspec_debug_handles``): the hook's artifact of each kernel's
OpSpecs, the debug handles they carry and (version 2) the SuperDSC bundles' keys and folders.

Its record and every part of it: a ``version`` key (1 or 2), told by its keys ``kernels``
and ``handles``, the integers and enums the wire types leave open, the rules (referenced
handle ids exist, ids below 2**63, fused_from without cycles, bundles of known call sites);
for golden files its handles' paths and addresses normalized and every handle id recomputed
from the normalized content, for ``--redact-paths`` its paths rewritten (ids left alone:
they are the compiler's own, and the SuperDSC bundles refer to a handle by them).

Pure: no torch, no jsonschema.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import msgspec

from spyre_provenance.links import portable
from spyre_provenance.links.redact import Redactor
from spyre_provenance.model import wire
from spyre_provenance.model.detect import Problem, key_path, keyed, quote, split_key, versions
from spyre_provenance.model.handles import HANDLE_ID_LIMIT
from spyre_provenance.model.kernel_keys import KEY_RE
from spyre_provenance.model.names import KINDS as FILINGS
from spyre_provenance.model.names import OPSPEC_DEBUG_HANDLES, TRANSFORM_KINDS
from spyre_provenance.model.wire import HandleEntry, OpSpecDebugHandles, OpSpecDebugHandlesV2
from spyre_provenance.validate.decoding import Decoded, Decoding, add, tally, tally_keys
from spyre_provenance.validate.kind import Kind
from spyre_provenance.validate.rules import (
    HANDLE_ID_RE,
    MSG_HANDLE_ID,
    NO_DUPLICATE,
    check_kernel_keys,
    first_duplicate,
)

read_version = versions(1, 2)
SHAPE = keyed("kernels", "handles")


# --- the two decoders ------------------------------------------------------------------------


def fast(run: Decoding) -> Decoded:
    det, version = run.versioned(OPSPEC_DEBUG_HANDLES, read_version)
    if det.schema is None:
        return det, None, None
    top = run.top()
    run.keys_of(wire.opspec_fields(det.schema))
    kernels = run.decode_map(top["kernels"], list[wire.OpSpecEntry], "$.kernels") if "kernels" in top else None
    handles = run.decode_map(top["handles"], wire.HandleEntry, "$.handles") if "handles" in top else None
    bundles = run.decode_map(top["bundles"], wire.BundleEntry, "$.bundles") if "bundles" in top else None
    if run.problems:
        return det, None, None
    assert kernels is not None and handles is not None  # a missing key is a problem above
    doc: wire.OpSpecDebugHandles | wire.OpSpecDebugHandlesV2 = (
        wire.OpSpecDebugHandles(version, kernels, handles)
        if bundles is None  # a version 2 document without it has a problem above
        else wire.OpSpecDebugHandlesV2(version, kernels, handles, bundles)
    )
    run.problems.extend(check_types(doc))
    if run.problems:
        return det, None, None
    return det, doc, add(tally_keys(top), tally(kernels), tally(handles), tally(bundles or {}))


def full(schema: int, doc: Mapping[str, Any]) -> Any:
    return msgspec.convert(dict(doc), wire.OPSPEC_DOCS[schema])


# --- the rules -------------------------------------------------------------------------------


def check_types(doc: OpSpecDebugHandles | OpSpecDebugHandlesV2) -> list[Problem]:
    """What the opspec schema says about integers and enums that the wire types leave open."""
    problems: list[Problem] = []
    for key, specs in doc.kernels.items():
        for i, spec in enumerate(specs):
            for j, dim in enumerate(spec.iteration_space):
                if isinstance(dim, float) and not dim.is_integer():
                    path = f"{key_path('$.kernels', key)}[{i}].iteration_space[{j}]"
                    problems.append(Problem(path, "expected integer or string, got number"))
    for hid, handle in doc.handles.items():
        base = key_path("$.handles", hid)
        for name in ("start_line", "start_col", "end_line", "end_col"):
            value = None if handle.source is None else getattr(handle.source, name)
            if value is None:
                continue
            if isinstance(value, float) and not value.is_integer():
                kind = "integer or null" if name.startswith("end") else "integer"
                problems.append(Problem(f"{base}.source.{name}", f"expected {kind}, got number"))
            elif value < 0:
                problems.append(Problem(f"{base}.source.{name}", f"must be >= 0, got {quote(value)}"))
        for i, step in enumerate(handle.transform_history):
            if step.kind not in TRANSFORM_KINDS:
                options = ", ".join(map(quote, TRANSFORM_KINDS))
                path = f"{base}.transform_history[{i}].kind"
                problems.append(Problem(path, f"expected one of {options}, got {quote(step.kind)}"))
    return problems


def check(schema: int, doc: OpSpecDebugHandles | OpSpecDebugHandlesV2) -> list[Problem]:
    problems: list[Problem] = []
    _check_opspec(doc, problems)
    return problems


MSG_PROVENANCE_KEY = "expected 16 characters of lowercase base32 (a-z, 2-7)"


def _check_opspec(doc: OpSpecDebugHandles | OpSpecDebugHandlesV2, problems: list[Problem]) -> None:
    handles = doc.handles
    check_kernel_keys(doc.kernels, "$.kernels", True, problems)
    for hid in handles:
        bad = _id_problem(hid)
        if bad:
            problems.append(Problem(key_path("$.handles", hid), bad))

    def check_ref(ref: str, path: str) -> None:
        bad = _id_problem(ref)
        if bad is None and ref not in handles:
            bad = f"unknown handle id {quote(ref)} (not in $.handles)"
        if bad:
            problems.append(Problem(path, bad))

    for key, specs in doc.kernels.items():
        for i, spec in enumerate(specs):
            if spec.debug_handle is not None:
                check_ref(spec.debug_handle, f"{key_path('$.kernels', key)}[{i}].debug_handle")
    for hid, handle in handles.items():
        base = f"{key_path('$.handles', hid)}.fused_from"
        dup = first_duplicate(handle.fused_from)
        if dup is not NO_DUPLICATE:
            problems.append(Problem(base, f"duplicate entry {quote(dup)}"))
        for j, ref in enumerate(handle.fused_from):
            check_ref(ref, f"{base}[{j}]")
    problems.extend(_fused_from_cycles(handles))
    for key, bundle in getattr(doc, "bundles", {}).items():  # version 2
        path = key_path("$.bundles", key)
        if key not in doc.kernels:
            problems.append(Problem(path, f"call site {quote(key)} is not in $.kernels"))
        if bundle.provenance_key is not None and not KEY_RE.fullmatch(bundle.provenance_key):
            problems.append(
                Problem(f"{path}.provenance_key", f"{MSG_PROVENANCE_KEY}, got {quote(bundle.provenance_key)}")
            )
        if bundle.folder == "":
            problems.append(Problem(f"{path}.folder", "should be non-empty"))


def _id_problem(hid: str) -> str | None:
    if not HANDLE_ID_RE.search(hid):
        return MSG_HANDLE_ID
    if int(hid) >= HANDLE_ID_LIMIT:
        return f"handle id {hid} is not below 2**63"
    return None


def _fused_from_cycles(handles: dict[str, HandleEntry]) -> list[Problem]:
    """Depth-first search over fused_from (iterative: chains may be long); each edge back
    into the current trail closes one reported cycle."""
    problems: list[Problem] = []
    done: set[str] = set()
    for root in handles:
        if root in done:
            continue
        trail, on_trail = [root], {root}
        stack = [iter(handles[root].fused_from)]
        while stack:
            for child in stack[-1]:
                if child not in handles or child in done:
                    continue
                if child in on_trail:
                    cycle = " -> ".join(trail[trail.index(child) :] + [child])
                    path = f"{key_path('$.handles', trail[-1])}.fused_from"
                    problems.append(Problem(path, f"cycle: {cycle}"))
                    continue
                trail.append(child)
                on_trail.add(child)
                stack.append(iter(handles[child].fused_from))
                break
            else:
                stack.pop()
                on_trail.discard(trail[-1])
                done.add(trail.pop())
    return problems


# --- golden files and --redact-paths: its machine-dependent text -------------------------------


def normalize(doc: Any, redactor: Redactor) -> Any:
    """The OpSpec table: handle paths and addresses, then every handle id recomputed
    (children first) and remapped wherever it is referenced."""
    if not isinstance(doc, dict):
        return doc
    table = doc.get("handles")
    if not isinstance(table, dict):
        return doc
    for entry in table.values():
        if isinstance(entry, dict):
            portable.normalize_handle_fields(entry, redactor)
    new_ids = _new_handle_ids(table)
    doc["handles"] = {}
    for old, entry in table.items():  # table order kept; equal content merges
        doc["handles"].setdefault(new_ids.get(old, old), entry)
    for specs in (doc.get("kernels") or {}).values():
        for spec in specs if isinstance(specs, list) else ():
            if isinstance(spec, dict) and isinstance(spec.get("debug_handle"), str):
                spec["debug_handle"] = new_ids.get(spec["debug_handle"], spec["debug_handle"])
    for key, bundle in (doc.get("bundles") or {}).items():  # version 2
        if isinstance(bundle, dict):
            # the key hashes the handle ids, which hash absolute paths: no golden can hold
            # it; a bundle folder's <uuid8>_ and _<mkdtemp 8> differ run to run
            bundle["provenance_key"] = None
            if isinstance(bundle.get("folder"), str):
                bundle["folder"] = portable.bundle_folder_kernel(bundle["folder"], split_key(key)[0])
    return doc


def _new_handle_ids(table: dict[str, Any]) -> dict[str, str]:
    """Old id -> id of the normalized content, children first (their new ids written into
    each ``fused_from``); a dangling or cyclic reference keeps its id."""
    new_ids: dict[str, str] = {}

    def new_id(old: str, visiting: frozenset[str]) -> str:
        if old in new_ids:
            return new_ids[old]
        entry = table.get(old)
        if not isinstance(entry, dict) or old in visiting:  # dangling or cyclic: leave it
            return old
        children = entry.get("fused_from") or []
        remapped = [new_id(c, visiting | {old}) if isinstance(c, str) else c for c in children]
        entry["fused_from"] = remapped
        new_ids[old] = portable.handle_id(entry)
        return new_ids[old]

    for old in list(table):
        new_id(old, frozenset())
    return new_ids


def redact(doc: dict[str, Any] | None, redactor: Redactor) -> dict[str, Any] | None:
    if doc is None:
        return None
    doc = copy.deepcopy(doc)
    for handle in doc.get("handles", {}).values():
        source = handle.get("source")
        if isinstance(source, dict) and isinstance(source.get("file"), str):
            source["file"] = redactor.redact_path(source["file"])
        for step in handle.get("transform_history", []):
            for key in ("pass_name", "reason"):
                if isinstance(step.get(key), str):
                    step[key] = redactor.redact_text(step[key])
    return doc


KIND = Kind(
    FILINGS[OPSPEC_DEBUG_HANDLES],
    version=read_version,
    current="2",
    fast=fast,
    full=full,
    rules=check,
    normalize=normalize,
    redact=redact,
    shape=SHAPE,
)
