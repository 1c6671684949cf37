"""Normalization: what varies between machines rewritten, nothing else; and the serializer.

Absolute paths in stack traces and handle sources become relative to the project root, or
``<site-packages>/...``, ``<stdlib>/...``, ``<tmp>/...`` (the path rules are ``redact``'s,
with the golden files' conventions: ``Roots.redactor``); memory addresses become
``0xADDR``; debug-handle ids (content hashes, so they hash the absolute paths) are
recomputed from the normalized content, and every reference to them (``debug_handle``,
``fused_from``) is remapped. Kernel names, handle numbers, node names and every order stay
as compiled. Normalizing twice changes nothing.

Pure: no torch import.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import json
import os
import re
import sysconfig
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from spyre_provenance.golden.cases import source_checkout
from spyre_provenance.links.redact import Redactor, path_variants
from spyre_provenance.model import folders, handles
from spyre_provenance.model.detect import split_key
from spyre_provenance.model.names import (
    AUDIT,
    KERNEL_INFORMATION,
    KERNEL_STACK_TRACES,
    OPSPEC_DEBUG_HANDLES,
)

ADDRESS = re.compile(r"(?<![0-9A-Za-z])0x[0-9a-fA-F]{8,16}(?![0-9A-Za-z])")
ADDRESS_TEXT = "0xADDR"
_FRAME_FILE = re.compile(r'(File ")([^"\n]+)(")')
#: Not a provenance artifact but normalized like one: the golden file of the SuperDSC
#: bundles' ``debug_handle_`` values (``{"format": 1, "bundles": {path: handle}}``).
BUNDLE_HANDLES = "superdsc_bundle_handles"


@dataclasses.dataclass(frozen=True)
class Roots:
    """Folders whose absolute paths are rewritten: ``project`` ones to relative paths,
    ``tmp`` ones to ``<tmp>/...``. Any ``site-packages`` folder becomes ``<site-packages>``."""

    project: tuple[str, ...] = ()
    tmp: tuple[str, ...] = ()
    stdlib: tuple[str, ...] = ()

    @classmethod
    def default(cls, *project: str | os.PathLike[str] | None) -> Roots:
        """The given project roots (None skipped), else this source checkout, else the
        current folder; the temp dir; the standard library."""
        roots = [Path(p) for p in project if p is not None]
        if not roots:
            roots = [source_checkout() or Path.cwd()]
        tmp = {tempfile.gettempdir(), "/tmp"}
        stdlib = {sysconfig.get_paths()["stdlib"]}
        return cls(project=_variants(roots), tmp=_variants(tmp), stdlib=_variants(stdlib))

    def rules(self) -> list[tuple[str, str]]:
        """(prefix, replacement), longest prefix first: a project inside /tmp stays relative."""
        pairs = [(r, "") for r in self.project] + [(r, "<tmp>/") for r in self.tmp]
        pairs += [(r, "<stdlib>/") for r in self.stdlib]
        return sorted(pairs, key=lambda p: -len(p[0]))

    @functools.cached_property
    def redactor(self) -> Redactor:
        """These rules as a ``redact.Redactor``, the one path rewriter: any site-packages
        folder first, then the longest root; no home or user rule (the roots cover them)."""
        return Redactor(tuple(self.rules()), user=None)


def _variants(paths: Iterable[str | os.PathLike[str]]) -> tuple[str, ...]:
    """Each path as given and resolved, with a trailing separator (redact's rule)."""
    return tuple(path_variants(paths))


def normalize_path(path: str, roots: Roots) -> str:
    """An absolute path as the machine-independent text a golden file holds."""
    path = ADDRESS.sub(ADDRESS_TEXT, path)
    if not (path.startswith("/") or re.match(r"^[A-Za-z]:[/\\]", path)):
        return path  # already relative or a placeholder: normalizing is idempotent
    return roots.redactor.redact_path(path)


def normalize_text(text: str, roots: Roots) -> str:
    """A stack trace: the path of every ``File "..."`` frame, and memory addresses."""
    text = _FRAME_FILE.sub(lambda m: m[1] + normalize_path(m[2], roots) + m[3], text)
    return ADDRESS.sub(ADDRESS_TEXT, text)


def normalize(artifact: str | None, doc: Any, roots: Roots | None = None) -> Any:
    """The one normalize function: a machine-independent copy of one artifact document
    (``artifact`` None: a file no artifact pattern names, copied as it is).

    Node mappings hold only names, so they come back as they are. Stack traces and handle
    sources lose their machine's paths and addresses; handle ids are recomputed from the
    normalized content (children first) and remapped wherever they are referenced.
    """
    roots = roots if roots is not None else Roots.default()
    doc = copy.deepcopy(doc)
    if artifact == KERNEL_STACK_TRACES and isinstance(doc, dict):
        return {k: _normalize_traces(v, roots) for k, v in doc.items()}
    if artifact == KERNEL_INFORMATION and isinstance(doc, dict):
        for entry in doc.values():
            if isinstance(entry, dict) and "stack_traces" in entry:
                entry["stack_traces"] = _normalize_traces(entry["stack_traces"], roots)
        return doc
    if artifact == OPSPEC_DEBUG_HANDLES and isinstance(doc, dict):
        return _normalize_opspecs(doc, roots)
    if artifact == BUNDLE_HANDLES and isinstance(doc, dict) and isinstance(doc.get("bundles"), dict):
        return {**doc, "bundles": normalize_bundle_handles(doc["bundles"], roots)}
    if artifact == AUDIT:
        return normalize_audit(doc, roots)
    return doc


#: What a golden provenance audit holds for its ``generated`` time (the one field that
#: differs between two runs of the same model on the same toolchain).
GENERATED_TEXT = "<generated>"
#: What a golden audit holds for each part of its toolchain: a golden case's manifest says
#: which torch made it, and a torch change is a hint there, never a change of the case.
TOOLCHAIN_TEXT = "<in manifest.json>"


def normalize_audit(doc: Any, roots: Roots | None = None) -> Any:
    """A provenance audit with its generated time and toolchain fixed (the manifest holds
    the toolchain) and the model's path (a ``PATH.py:FACTORY`` model) normalized; counts,
    node and kernel names stay."""
    roots = roots if roots is not None else Roots.default()
    if not isinstance(doc, dict):
        return doc
    doc = dict(doc)
    if "generated" in doc:
        doc["generated"] = GENERATED_TEXT
    if isinstance(doc.get("toolchain"), dict):
        doc["toolchain"] = dict.fromkeys(doc["toolchain"], TOOLCHAIN_TEXT)
    if isinstance(doc.get("model"), str) and ":" in doc["model"]:
        path, _, factory = doc["model"].rpartition(":")
        doc["model"] = f"{normalize_path(path, roots)}:{factory}"
    return doc


def _normalize_traces(traces: Any, roots: Roots) -> Any:
    if not isinstance(traces, list):
        return traces
    return [normalize_text(t, roots) if isinstance(t, str) else t for t in traces]


def _normalize_opspecs(doc: dict[str, Any], roots: Roots) -> dict[str, Any]:
    handles = doc.get("handles")
    if not isinstance(handles, dict):
        return doc
    for entry in handles.values():
        if isinstance(entry, dict):
            _normalize_handle_fields(entry, roots)

    new_ids: dict[str, str] = {}

    def new_id(old: str, visiting: frozenset[str]) -> str:
        if old in new_ids:
            return new_ids[old]
        entry = handles.get(old)
        if not isinstance(entry, dict) or old in visiting:  # dangling or cyclic: leave it
            return old
        children = entry.get("fused_from") or []
        remapped = [new_id(c, visiting | {old}) if isinstance(c, str) else c for c in children]
        entry["fused_from"] = remapped
        new_ids[old] = handle_id(entry)
        return new_ids[old]

    for old in list(handles):
        new_id(old, frozenset())
    doc["handles"] = {}
    for old, entry in handles.items():  # table order kept; equal content merges
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


def bundle_folder_kernel(folder: str, kernel: str | None) -> str:
    """A bundle folder's name as a golden holds it: ``<uuid8>_<kernel>_<suffix>``
    (``folders.kernel_of_bundle_folder``: torch-spyre's, random; the reference backend's,
    from the bundles' bytes, which hold absolute paths) becomes ``<kernel>`` (its whole name,
    also when the folder holds it cut to fit a file name); any other name stays as it is."""
    named = folders.kernel_of_bundle_folder(folder)
    return kernel if kernel and named is not None and named == folders.kernel_in_folder_name(kernel) else folder


def _normalize_handle_fields(entry: dict[str, Any], roots: Roots) -> None:
    """One handle's own machine-dependent text, in place: its source path, and addresses in
    its transform history. Shared by the OpSpec table and the bundles' nested handles, so
    the same handle normalizes alike wherever it is copied."""
    source = entry.get("source")
    if isinstance(source, dict) and isinstance(source.get("file"), str):
        source["file"] = normalize_path(source["file"], roots)
    for step in entry.get("transform_history") or ():
        if isinstance(step, dict):
            for key in ("pass_name", "reason"):
                if isinstance(step.get(key), str):
                    step[key] = ADDRESS.sub(ADDRESS_TEXT, step[key])


def normalize_bundle_handles(bundles: Mapping[str, Any], roots: Roots | None = None) -> dict[str, Any]:
    """SuperDSC bundles' ``debug_handle_`` values (bundle path -> handle dict or None), each
    normalized as the OpSpec table's handles are: paths, addresses, and every ``id`` in the
    tree recomputed from the normalized content, so a bundle handle and the OpSpec handle
    it copies get the same id."""
    roots = roots if roots is not None else Roots.default()
    out = copy.deepcopy(dict(bundles))
    for handle in out.values():
        if isinstance(handle, dict):
            _normalize_handle_tree(handle, roots, 0)
    return out


_MAX_DEPTH = 200  # a fused_from chain deeper than this is hostile input: left as it is


def _normalize_handle_tree(handle: dict[str, Any], roots: Roots, depth: int) -> str | None:
    """Normalize one nested handle (``DebugHandle.to_dict()``: children as dicts) in place,
    children first; its new id, as the flattened table form (children by id) hashes."""
    if depth > _MAX_DEPTH:
        return None
    _normalize_handle_fields(handle, roots)
    children = handle.get("fused_from")
    child_ids = []
    for child in children if isinstance(children, list) else ():
        child_id = _normalize_handle_tree(child, roots, depth + 1) if isinstance(child, dict) else None
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


# --- the serializer -------------------------------------------------------------------------------


def dumps(doc: Any) -> bytes:
    """The one serializer for golden files: key order as built, 2-space indent, UTF-8, final
    newline. Readable in a code review; ``golden update``, ``pytest --force-regen`` and the
    pytest plugin all write through it."""
    return (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
