"""Reading a kernel's SuperDSC bundle folder as torch-spyre serves it: the ``debug_handle_``
of each ``sdsc_<i>.json``, in index order (one per OpSpec, depth first).

A bundle is ``{"<i>_<opfunc>": {"debug_handle_": {...} | null, ...}}``. Shared by the
reference backend (which writes such folders) and the torch-spyre adapter (which reads the
folders torch-spyre's runners point at). Pure: no torch.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from spyre_provenance.model.folders import BUNDLE_FILE


def handle_of(document: Any) -> dict[str, Any] | None:
    """The ``debug_handle_`` of one bundle document; None when it carries none.

    Raises ValueError for a document that is not one ``{"<i>_<op>": {...}}`` object."""
    if not (isinstance(document, dict) and len(document) == 1):
        raise ValueError("not a SuperDSC bundle (one top-level key expected)")
    (body,) = document.values()
    if not isinstance(body, dict):
        raise ValueError("not a SuperDSC bundle (its one value is not an object)")
    handle = body.get("debug_handle_")
    return handle if isinstance(handle, dict) else None


def served_handles(folder: Path) -> list[dict[str, Any] | None] | None:
    """The handles of ``folder``'s bundles, ``sdsc_0.json`` on until the first index that is
    absent; None when the folder holds no bundle at all (a KTIR kernel, say).

    Raises OSError or ValueError (naming the file) for a bundle that cannot be read."""
    handles: list[dict[str, Any] | None] = []
    while (path := folder / BUNDLE_FILE.format(len(handles))).is_file():
        try:
            handles.append(handle_of(json.loads(path.read_text(encoding="utf-8"))))
        except ValueError as exc:
            raise ValueError(f"{path}: {exc}") from None
    return handles or None
