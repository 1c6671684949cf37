"""Readers of a folder a running compile writes into: ``lookup`` and ``annotate`` index
it, and the viewer reads its bundles, while a compile replaces its own model's output
(removing its graph and bundle folders first). A folder gone between its parent's
listing and its own is passed over, never an internal error; what is left is read.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers.vanishing import remove_after_listing  # tests/ is on sys.path
from spyre_provenance.model import folders
from spyre_provenance.model.names import NODE_MAPPINGS, artifact_file
from spyre_provenance.runtime import index
from spyre_provenance.viewer import bundles


def test_index_passes_over_a_graph_folder_removed_meanwhile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kept, going = (tmp_path / folders.graph_folder(i, f"{i}/0", "inference", "mlp") for i in range(2))
    for n, folder in enumerate((kept, going)):
        folder.mkdir()
        mapping = {"cppCodeToPost": {f"kernel_{n}:1": ["relu"]}, "version": "2.0"}
        (folder / artifact_file(NODE_MAPPINGS)).write_text(json.dumps(mapping))
    remove_after_listing(monkeypatch, tmp_path, going)
    built = index.build([tmp_path])
    assert [g.origin for g in built.graphs] == [str(kept)]
    assert list(built.by_name) == ["kernel_0"]


def test_viewer_bundles_pass_over_a_bundle_folder_removed_meanwhile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spyre = tmp_path / "inductor-spyre"
    kept, going = spyre / "aaaaaaaa_sdsc_fused_0_00000000", spyre / "bbbbbbbb_sdsc_fused_1_00000000"
    for folder in (kept, going):
        folder.mkdir(parents=True)
        bundle = {"dsc": {"debug_handle_": {"id": 7}}}
        (folder / folders.BUNDLE_FILE.format(0)).write_text(json.dumps(bundle))
    remove_after_listing(monkeypatch, spyre, going)
    # by its path, and by its handle's id
    assert list(bundles.served_bundles([tmp_path])) == [f"{kept.name}/{folders.BUNDLE_FILE.format(0)}", "7"]
