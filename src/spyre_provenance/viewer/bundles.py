"""The SuperDSC bundles of a page: each graph's, from the bundle folder its OpSpec artifact
records (``bundles[<call site>].folder``), under ``sdsc/<model>/`` or a ``--bundles`` folder
by one rule (``model.layout.kernel_bundle_folder``), each once, as the page shows them
(compact JSON, cut to a page-wide budget).

Pure: no torch.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import msgspec

from spyre_provenance.base.errors import UnusableInput
from spyre_provenance.model import folders, jsonio
from spyre_provenance.model.layout import bundle_files, kernel_bundle_folder
from spyre_provenance.model.superdsc import handle_of
from spyre_provenance.viewer.inputs import GraphFolder
from spyre_provenance.viewer.logged import LoggedGraphInput

#: A bundle's JSON is shown up to this many characters, and all of a page's bundles up to
#: about BUNDLE_BUDGET: real bundles run to tens of kB, and a page of 10k kernels has 30k.
BUNDLE_TEXT_LIMIT = 8_000
BUNDLE_TEXT_FLOOR = 1_000
BUNDLE_BUDGET = 16_000_000


class Bundles:
    """A graph's bundles, each once: one file per bundle folder and OpSpec index. A kernel
    called from several call sites has one set of bundles, made at its first, which each
    call site's OpSpec points at; its folder is the one the OpSpec artifact records."""

    def __init__(self, g: GraphFolder | LoggedGraphInput, served: dict[str, dict[str, Any]]) -> None:
        self.g, self.served = g, served
        self.found: list[dict[str, Any]] = []
        self._at: dict[str, int] = {}

    def place(self, folder: str, i: int, hid: Any, spec: int) -> int | None:
        """The index of OpSpec ``spec``'s bundle (the ``i``-th of ``folder``), or None."""
        path = f"{folder}/{folders.BUNDLE_FILE.format(i)}"
        if path not in self._at and (bundle := _bundle(self.g, folder, i)) is not None:
            self._add(path, bundle)
        elif path not in self._at and path in self.served:  # the recorded folder under --bundles
            self._add(path, {**self.served[path], "opspecs": []})  # a copy: its own list of OpSpecs
        elif path not in self._at and isinstance(hid, str) and hid in self.served:
            # no folder recorded (an OpSpec artifact of version 1): found by the handle the
            # bundle carries
            path = self.served[hid]["path"]
            if path not in self._at:
                self._add(path, {**self.served[hid], "opspecs": []})
        b = self._at.get(path)
        if b is not None:
            self.found[b]["opspecs"].append(spec)
        return b

    def _add(self, path: str, bundle: dict[str, Any]) -> None:
        self._at[path] = len(self.found)
        self.found.append(bundle)


def _bundle(g: GraphFolder | LoggedGraphInput, folder: str, index: int) -> dict[str, Any] | None:
    """The bundle ``sdsc_<index>.json`` of the bundle folder ``folder`` of the graph's model
    (``sdsc/<model>/inductor-spyre/<folder>/``); None when absent, or when ``folder`` can
    name no folder there (``folders.is_one_name``)."""
    if g.bundle_root is None or not folders.is_one_name(folder):
        return None
    path = kernel_bundle_folder(g.bundle_root, folder) / folders.BUNDLE_FILE.format(index)
    return _bundle_file(path, f"{folder}/{path.name}") if path.is_file() else None


def _bundle_file(path: Path, shown: str) -> dict[str, Any]:
    data = jsonio.read_file(path)
    try:
        doc = msgspec.json.decode(data)
        served = handle_of(doc, strict=False)
    except msgspec.DecodeError as exc:
        raise UnusableInput(str(path), f"not valid JSON: {exc}") from None
    except ValueError as exc:
        raise UnusableInput(str(path), f"$: {exc}") from None
    return {
        "path": shown,
        "id": str(served["id"]) if served and "id" in served else None,
        "doc": doc,  # made text by _bundle_text once its OpSpecs are known
        "opspecs": [],  # the OpSpecs it is the bundle of
    }


def bundle_text(bundle: dict[str, Any], specs: list[dict[str, Any]], limit: int) -> None:
    """The bundle as the page shows it: compact JSON, cut at ``limit`` characters. Where
    its ``debug_handle_`` is the handle of every OpSpec it serves (the same id), the page shows
    that handle from the OpSpec artifact, so the bundle keeps only its id (``handle_id_only``: true)."""
    doc = bundle.pop("doc")
    bundle["handle_id_only"] = bundle["id"] is not None and all(
        specs[s]["bundle_is_its_own"] for s in bundle["opspecs"]
    )
    if bundle["handle_id_only"]:
        ((key, body),) = doc.items()
        doc = {key: {**body, "debug_handle_": {"id": bundle["id"]}}}
    text = msgspec.json.encode(doc).decode("utf-8")
    bundle["text"] = text[:limit]
    bundle["cut"] = len(text) > limit


def served_bundles(roots: list[Path]) -> dict[str, dict[str, Any]]:
    """Bundles in folders as torch-spyre writes them (``inductor-spyre/<uuid8>_<kernel>_<8>/``,
    under a cache folder or named directly), by their path ``<folder>/sdsc_<i>.json`` (a call
    site's recorded folder finds them, as in ``sdsc/<model>/``), and by the id of the
    ``debug_handle_`` each carries (for OpSpec artifacts that record no folder)."""
    found: dict[str, dict[str, Any]] = {}
    for root in roots:
        if not root.is_dir():
            raise UnusableInput(str(root), "no such folder (--bundles names a folder of SuperDSC bundle folders)")
        first = folders.BUNDLE_FILE.format(0)
        # os.walk, not rglob: passes over a bundle folder a running compile removes meanwhile
        for folder in sorted(Path(r) for r, _, files in os.walk(root) if first in files):
            for path in bundle_files(folder):
                bundle = _bundle_file(path, f"{folder.name}/{path.name}")
                found.setdefault(bundle["path"], bundle)
                if bundle["id"] is not None:
                    found.setdefault(str(bundle["id"]), bundle)
    return found
