"""A kernel's SuperDSC bundles as torch-spyre writes them, read by one rule everywhere.

torch-spyre main writes one ``sdsc_<i>.json`` per OpSpec, ``i`` counting the OpSpecs depth
first from 0 with no gap (``_inductor/codegen/bundle.py``, ``_compile_specs``: the counter
moves only when a file is written), and ``bundle.mlir`` names each OpSpec's bundle by that
index. So a bundle's index *is* its OpSpec's position: every reader lists every
``sdsc_<i>.json`` by its index (``layout.bundle_files``), and a reader that pairs bundles
with OpSpecs by position (``served_handles``) refuses a folder with an index missing rather
than shift or drop the bundles after it (a gap is a folder torch-spyre did not write whole).

A bundle is ``{"<i>_<opfunc>": {"debug_handle_": {...} | null, ...}}``; ``handle_of`` reads
its ``debug_handle_``, strict or lenient by the caller's choice. Pure: no torch.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from spyre_provenance.model import folders
from spyre_provenance.model.detect import json_type
from spyre_provenance.model.layout import bundle_files


def handle_of(document: Any, *, strict: bool) -> dict[str, Any] | None:
    """The ``debug_handle_`` of one bundle document; None when it carries none.

    Raises ValueError for a document that is not one ``{"<i>_<op>": {...}}`` object. ``strict``
    (a golden file, whose handles are the record): the body must hold ``debug_handle_`` and
    it must be an object or null, else ValueError. Lenient (a compile's check of the bundles
    served, which counts a bundle without a usable handle as missing): anything but an
    object is None."""
    if not (isinstance(document, dict) and len(document) == 1):
        raise ValueError('not a SuperDSC bundle: expected {"<idx>_<op>": {"debug_handle_": ...}}')
    (body,) = document.values()
    if not isinstance(body, dict) or (strict and "debug_handle_" not in body):
        raise ValueError('not a SuperDSC bundle: expected {"<idx>_<op>": {"debug_handle_": ...}}')
    handle = body.get("debug_handle_")
    if strict:
        return checked_handle(handle)
    return handle if isinstance(handle, dict) else None


def checked_handle(handle: Any) -> dict[str, Any] | None:
    """``handle`` when it is an object or null (a bundle's ``debug_handle_``); else ValueError."""
    if handle is not None and not isinstance(handle, dict):
        raise ValueError(f"debug_handle_ is a JSON {json_type(handle)}, expected an object or null")
    return handle


def served_handles(folder: Path) -> list[dict[str, Any] | None] | None:
    """The handles of ``folder``'s bundles, one per OpSpec in index order (lenient
    ``handle_of``); None when the folder holds no bundle at all (a KTIR kernel, say).

    Raises OSError or ValueError (naming the file) for a bundle that cannot be read, and
    ValueError for an absent index below the highest (position would no longer be index)."""
    files = bundle_files(folder)
    for i, path in enumerate(files):
        if path.name != folders.BUNDLE_FILE.format(i):
            raise ValueError(f"{folder / folders.BUNDLE_FILE.format(i)}: absent, but {path.name} is there")
    handles: list[dict[str, Any] | None] = []
    for path in files:
        try:
            handles.append(handle_of(json.loads(path.read_text(encoding="utf-8")), strict=False))
        except ValueError as exc:
            raise ValueError(f"{path}: {exc}") from None
    return handles or None
