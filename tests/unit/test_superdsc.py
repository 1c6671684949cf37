"""The one rule for a kernel's SuperDSC bundles (``model.superdsc``): which files they are,
and the ``debug_handle_`` each carries, strict (golden) or lenient (a compile's check)."""

from __future__ import annotations

import ast
import json

import pytest

from helpers.where import PACKAGE  # tests/ is on sys.path
from spyre_provenance.model.layout import bundle_files
from spyre_provenance.model.superdsc import handle_of, served_handles


def _bundle(folder, index, handle):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"sdsc_{index}.json").write_text(json.dumps({f"{index}_add": {"debug_handle_": handle}}))


def test_strict_and_lenient_agree_on_a_well_formed_bundle():
    for handle in ({"id": 7}, None):
        doc = {"0_add": {"debug_handle_": handle, "numCoresUsed_": 1}}
        assert handle_of(doc, strict=True) == handle_of(doc, strict=False) == handle


def test_strict_refuses_what_lenient_reads_as_no_handle():
    no_key = {"0_add": {"numCoresUsed_": 1}}
    not_object = {"0_add": {"debug_handle_": [1]}}
    assert handle_of(no_key, strict=False) is None and handle_of(not_object, strict=False) is None
    with pytest.raises(ValueError, match="not a SuperDSC bundle"):
        handle_of(no_key, strict=True)
    with pytest.raises(ValueError, match="debug_handle_ is a JSON array"):
        handle_of(not_object, strict=True)


@pytest.mark.parametrize("doc", [[], {}, {"0_add": {}, "1_mul": {}}, {"0_add": 3}])
def test_both_refuse_what_is_no_bundle(doc):
    for strict in (True, False):
        with pytest.raises(ValueError, match="not a SuperDSC bundle"):
            handle_of(doc, strict=strict)


def test_served_handles_are_the_bundles_in_index_order(tmp_path):
    for i in (10, 0, 2, 1, *range(3, 10)):
        _bundle(tmp_path, i, {"id": i} if i != 4 else None)
    assert served_handles(tmp_path) == [{"id": i} if i != 4 else None for i in range(11)]
    assert served_handles(tmp_path / "absent") is None


def test_a_gap_is_refused_where_position_is_the_opspec_and_listed_where_the_name_is(tmp_path):
    """torch-spyre writes sdsc_0 .. sdsc_<n-1> with no gap: with one index absent, the check
    by position refuses the folder rather than shift or drop the bundles after the gap, while
    the readers by name (lookup, golden, viewer) list every bundle under its own index."""
    for i in (0, 2):
        _bundle(tmp_path, i, {"id": i})
    with pytest.raises(ValueError, match=r"sdsc_1\.json: absent, but sdsc_2\.json is there"):
        served_handles(tmp_path)
    assert [p.name for p in bundle_files(tmp_path)] == ["sdsc_0.json", "sdsc_2.json"]


def test_the_viewer_reads_bundles_without_the_product_adapter():
    for path in (PACKAGE / "viewer").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                assert not node.module.startswith("spyre_provenance.backends"), f"{path.name}: {node.module}"
