"""The viewer's document has a contract: ``model.viewer_records`` and
``schemas/spyre_viewer_document/v1.schema.json`` state one shape (a field of one is a field
of the other), every document ``view`` builds is that shape, and ``viewer.js`` reads the
records' names (a field renamed on one side only fails here, not in a browser)."""

from __future__ import annotations

import re
import shutil
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import msgspec
import pytest

from bench import viewer as bench_viewer
from helpers.where import golden_graphs  # tests/ is on sys.path
from spyre_provenance.model import viewer_records as records
from spyre_provenance.model.names import COMPARE, VIEWER_DOCUMENT
from spyre_provenance.validate import schemas
from spyre_provenance.viewer import compared, data, relation

RECORDS = [
    records.ViewerDocument,
    records.ViewerGraph,
    records.SourceFile,
    records.TraceSummary,
    records.CallSite,
    records.OpSpecRow,
    records.BundleRow,
    records.ModuleRow,
    records.LoggedCode,
    records.GraphCode,
    records.Lights,
]


def _schema() -> dict[str, Any]:
    return schemas.load_schema(VIEWER_DOCUMENT, records.VIEWER_DOCUMENT_VERSION)


def _required(record: type[msgspec.Struct]) -> set[str]:
    info = msgspec.structs.fields(record)
    return {f.name for f in info if f.required}


@pytest.mark.parametrize("record", RECORDS, ids=lambda r: r.__name__)
def test_the_schema_and_the_records_name_the_same_fields(record):
    schema = _schema()
    held = schema if record is records.ViewerDocument else schema["$defs"][record.__name__]
    assert held["additionalProperties"] is False
    assert set(held["properties"]) == set(record.__struct_fields__)
    assert set(held.get("required", ())) == _required(record)


def test_a_lit_entry_lists_every_kind_the_relation_names():
    assert set(records.Lights.__struct_fields__) == set(relation.KINDS)


def _check(doc: dict[str, Any]) -> records.ViewerDocument:
    jsonschema.Draft202012Validator(_schema()).validate(doc)
    return msgspec.convert(doc, records.ViewerDocument)


@pytest.fixture
def out(tmp_path: Path) -> Path:
    return golden_graphs("mlp_train", tmp_path / "out")


def test_a_folders_document_is_the_contracts(out):
    built = _check(data.build(out))
    assert [g.label for g in built.graphs] == ["out 0/0 forward", "out 0/0 backward"]
    assert all(g.side is msgspec.UNSET for g in built.graphs)


def test_a_document_with_bundles_is_the_contracts(tmp_path):
    bench_viewer.write_out(tmp_path / "out", 12)
    (graph,) = _check(data.build(tmp_path / "out")).graphs
    assert graph.bundles and all(b.handle_id_only for b in graph.bundles)


def test_a_comparisons_document_is_the_contracts(out, tmp_path):
    other = tmp_path / "other"
    shutil.copytree(out, other)
    doc = compared.build(str(out), str(other))
    built = _check(doc)
    assert [g.side for g in built.graphs] == ["a", "a", "b", "b"]
    jsonschema.Draft202012Validator(schemas.load_schema(COMPARE, 1)).validate(doc["compare"])


def test_viewer_js_reads_the_records_names():
    """Every name the page reads off a call site (``c.``), an OpSpec (``x.``), a bundle
    (``b.``) and a module (``m.``) is a field of its record."""
    js = resources.files("spyre_provenance.viewer").joinpath("assets", "viewer.js").read_text(encoding="utf-8")
    read = {
        records.CallSite: re.findall(r"\bc\.(\w+)", js),
        records.OpSpecRow: re.findall(r"\bx\.(\w+)", js),
        records.ModuleRow: re.findall(r"\bm\.(\w+)", js),
    }
    read[records.BundleRow] = re.findall(r"\bb\.(\w+)", js)
    # and off a graph's lists by position, the graph itself, the document and its trace
    for record, name in ((records.CallSite, "calls"), (records.OpSpecRow, "opspecs"), (records.BundleRow, "bundles")):
        read[record] += re.findall(rf"\b[gG]\.{name}\[[^\[\]]+\]\.(\w+)", js)
    read[records.ModuleRow] += re.findall(r"\bg\.modules\[[^\[\]]+\]\.(\w+)", js)
    read[records.ViewerGraph] = re.findall(r"\b(?:g|G|og)\.(\w+)", js)
    read[records.ViewerDocument] = re.findall(r"\bD\.(\w+)", js)
    read[records.TraceSummary] = re.findall(r"\bD\.trace\.(\w+)", js)
    # the same letters in the page's own code: ``c`` a chunk of rows, ``x`` a pair of the
    # comparison, ``b`` a row's element or a side of it, ``og`` an optgroup; a graph's
    # ``_lines``, the page's cache
    own = {"el", "pieces", "done", "length", "status", "changes", "a", "b", "time_change_us", "offsetTop", "name"}
    own |= {"className", "_lines"}
    for record, names in read.items():
        assert names and set(names) - own <= set(record.__struct_fields__), record.__name__
