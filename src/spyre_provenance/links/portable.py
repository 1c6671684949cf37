"""A document's machine-dependent text rewritten, nothing else: the tools of the kinds' normalizers.

Absolute paths (in stack traces, handle sources, an audit's model) go through a
``redact.Redactor`` (golden files use the project-relative rules of ``golden.Roots``);
memory addresses become ``0xADDR``; debug-handle ids (content hashes, so they hash the
absolute paths) are recomputed from the normalized content (``handle_id``), a bundle folder's
random name becomes its kernel's. Kernel names, handle numbers, node names and every order
stay as compiled. Normalizing twice changes nothing.

Each kind's normalizer (the ``normalize`` part of its record, in its module in
``validate/kinds/``) is made of these; golden's SuperDSC bundle handles
(``normalize_bundle_handles``) too. No kind is named here. Pure data transforms: no torch,
no file access.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from spyre_provenance.links.redact import Redactor
from spyre_provenance.model import folders, handles

ADDRESS = re.compile(r"(?<![0-9A-Za-z])0x[0-9a-fA-F]{8,16}(?![0-9A-Za-z])")
ADDRESS_TEXT = "0xADDR"
_FRAME_FILE = re.compile(r'(File ")([^"\n]+)(")')


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


def normalize_traces(traces: Any, redactor: Redactor) -> Any:
    """A list of stack traces, each as ``normalize_text``; anything else as it is."""
    if not isinstance(traces, list):
        return traces
    return [normalize_text(t, redactor) if isinstance(t, str) else t for t in traces]


def bundle_folder_kernel(folder: str, kernel: str | None) -> str:
    """A bundle folder's name as a golden holds it: ``<uuid8>_<kernel>_<suffix>``
    (``folders.kernel_of_bundle_folder``: torch-spyre's, random; the reference backend's,
    from the bundles' bytes, which hold absolute paths) becomes ``<kernel>`` (its whole name,
    also when the folder holds it cut to fit a file name); any other name stays as it is."""
    named = folders.kernel_of_bundle_folder(folder)
    return kernel if kernel and named is not None and named == folders.kernel_in_folder_name(kernel) else folder


def normalize_handle_fields(entry: dict[str, Any], redactor: Redactor) -> None:
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
    normalize_handle_fields(handle, redactor)
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
