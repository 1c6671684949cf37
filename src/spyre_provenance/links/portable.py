"""A document's machine-dependent text rewritten, nothing else: each artifact kind's normalizer.

Absolute paths (in stack traces, handle sources, an audit's model) go through a
``redact.Redactor`` (golden files use the project-relative rules of ``golden.Roots``);
memory addresses become ``0xADDR``; debug-handle ids (content hashes, so they hash the
absolute paths) are recomputed from the normalized content, and every reference to them
(``debug_handle``, ``fused_from``) is remapped. Kernel names, handle numbers, node names and
every order stay as compiled. Normalizing twice changes nothing.

Each ``normalize_*`` here takes a document (a copy the caller may change) and a Redactor,
and returns the normalized document: the ``normalize`` part of an artifact kind's record
(``validate.kinds``). Pure data transforms: no torch, no file access.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from spyre_provenance.links.redact import Redactor
from spyre_provenance.model import folders, handles
from spyre_provenance.model.detect import split_key

ADDRESS = re.compile(r"(?<![0-9A-Za-z])0x[0-9a-fA-F]{8,16}(?![0-9A-Za-z])")
ADDRESS_TEXT = "0xADDR"
_FRAME_FILE = re.compile(r'(File ")([^"\n]+)(")')
#: What a golden provenance audit holds for its ``generated`` time (the one field that
#: differs between two runs of the same model on the same toolchain).
GENERATED_TEXT = "<generated>"
#: What a golden audit holds for each part of its toolchain: a golden case's manifest says
#: which torch made it, and a torch change is a hint there, never a change of the case.
TOOLCHAIN_TEXT = "<in manifest.json>"


def normalize_path(path: str, redactor: Redactor) -> str:
    """An absolute path as machine-independent text."""
    path = ADDRESS.sub(ADDRESS_TEXT, path)
    if not (path.startswith("/") or re.match(r"^[A-Za-z]:[/\\]", path)):
        return path  # already relative or a placeholder: normalizing is idempotent
    return redactor.redact_path(path)


def normalize_text(text: str, redactor: Redactor) -> str:
    """A stack trace: the path of every ``File "..."`` frame, and memory addresses."""
    text = _FRAME_FILE.sub(lambda m: m[1] + normalize_path(m[2], redactor) + m[3], text)
    return ADDRESS.sub(ADDRESS_TEXT, text)


def as_is(doc: Any, redactor: Redactor) -> Any:
    """The normalizer of a kind with no machine-dependent text (node mappings hold only names)."""
    return doc


def normalize_stack_traces(doc: Any, redactor: Redactor) -> Any:
    if not isinstance(doc, dict):
        return doc
    return {k: _normalize_traces(v, redactor) for k, v in doc.items()}


def normalize_kernel_information(doc: Any, redactor: Redactor) -> Any:
    if not isinstance(doc, dict):
        return doc
    for entry in doc.values():
        if isinstance(entry, dict) and "stack_traces" in entry:
            entry["stack_traces"] = _normalize_traces(entry["stack_traces"], redactor)
    return doc


def normalize_audit(doc: Any, redactor: Redactor) -> Any:
    """A provenance audit with its generated time and toolchain fixed (the manifest holds
    the toolchain) and the model's path (a ``PATH.py:FACTORY`` model) normalized; counts,
    node and kernel names stay."""
    if not isinstance(doc, dict):
        return doc
    doc = dict(doc)
    if "generated" in doc:
        doc["generated"] = GENERATED_TEXT
    if isinstance(doc.get("toolchain"), dict):
        doc["toolchain"] = dict.fromkeys(doc["toolchain"], TOOLCHAIN_TEXT)
    if isinstance(doc.get("model"), str) and ":" in doc["model"]:
        path, _, factory = doc["model"].rpartition(":")
        doc["model"] = f"{normalize_path(path, redactor)}:{factory}"
    return doc


def _normalize_traces(traces: Any, redactor: Redactor) -> Any:
    if not isinstance(traces, list):
        return traces
    return [normalize_text(t, redactor) if isinstance(t, str) else t for t in traces]


def normalize_opspecs(doc: Any, redactor: Redactor) -> Any:
    """The OpSpec table: handle paths and addresses, then every handle id recomputed
    (children first) and remapped wherever it is referenced."""
    if not isinstance(doc, dict):
        return doc
    table = doc.get("handles")
    if not isinstance(table, dict):
        return doc
    for entry in table.values():
        if isinstance(entry, dict):
            _normalize_handle_fields(entry, redactor)
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
                bundle["folder"] = bundle_folder_kernel(bundle["folder"], split_key(key)[0])
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
        new_ids[old] = handle_id(entry)
        return new_ids[old]

    for old in list(table):
        new_id(old, frozenset())
    return new_ids


def bundle_folder_kernel(folder: str, kernel: str | None) -> str:
    """A bundle folder's name as a golden holds it: ``<uuid8>_<kernel>_<suffix>``
    (``folders.kernel_of_bundle_folder``: torch-spyre's, random; the reference backend's,
    from the bundles' bytes, which hold absolute paths) becomes ``<kernel>`` (its whole name,
    also when the folder holds it cut to fit a file name); any other name stays as it is."""
    named = folders.kernel_of_bundle_folder(folder)
    return kernel if kernel and named is not None and named == folders.kernel_in_folder_name(kernel) else folder


def _normalize_handle_fields(entry: dict[str, Any], redactor: Redactor) -> None:
    """One handle's own machine-dependent text, in place: its source path, and addresses in
    its transform history. Shared by the OpSpec table and the bundles' nested handles, so
    the same handle normalizes alike wherever it is copied."""
    source = entry.get("source")
    if isinstance(source, dict) and isinstance(source.get("file"), str):
        source["file"] = normalize_path(source["file"], redactor)
    for step in entry.get("transform_history") or ():
        if isinstance(step, dict):
            for key in ("pass_name", "reason"):
                if isinstance(step.get(key), str):
                    step[key] = ADDRESS.sub(ADDRESS_TEXT, step[key])


def normalize_bundle_handles(bundles: dict[str, Any], redactor: Redactor) -> dict[str, Any]:
    """SuperDSC bundles' ``debug_handle_`` values (bundle path -> handle dict or None; a copy
    the caller may change), each normalized as the OpSpec table's handles are: paths,
    addresses, and every ``id`` in the tree recomputed from the normalized content, so a
    bundle handle and the OpSpec handle it copies get the same id."""
    for handle in bundles.values():
        if isinstance(handle, dict):
            _normalize_handle_tree(handle, redactor, 0)
    return bundles


_MAX_DEPTH = 200  # a fused_from chain deeper than this is hostile input: left as it is


def _normalize_handle_tree(handle: dict[str, Any], redactor: Redactor, depth: int) -> str | None:
    """Normalize one nested handle (``DebugHandle.to_dict()``: children as dicts) in place,
    children first; its new id, as the flattened table form (children by id) hashes."""
    if depth > _MAX_DEPTH:
        return None
    _normalize_handle_fields(handle, redactor)
    children = handle.get("fused_from")
    child_ids = []
    for child in children if isinstance(children, list) else ():
        child_id = _normalize_handle_tree(child, redactor, depth + 1) if isinstance(child, dict) else None
        child_ids.append(child_id if child_id is not None else child)
    if "id" in handle:
        handle["id"] = handle_id({**handle, "fused_from": child_ids})
    return handle.get("id")


def handle_id(entry: Mapping[str, Any]) -> str:
    """A handle's id from its flattened (table) form, children by id, as text: the one
    rule (``model.handles.handle_id``) the reference backend makes its ids with, so a
    handle whose paths are already normalized keeps its id."""
    return str(
        handles.handle_id(
            entry.get("source"),
            entry.get("aten_op"),
            entry.get("ir_chain") or [],
            entry.get("fused_from") or [],
        )
    )
