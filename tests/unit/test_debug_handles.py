"""``args.debug_handles`` as writers spell it (issue 46, point 6): torch-spyre's C++ writes a
JSON array of ids; a string holding that array reads as the array, anything else is reported
as malformed, never as "from another build" (which printed the same ids on both sides).

The compile is the golden training case's (its OpSpec artifact); a copy is given a kernel
provenance key where a test needs the key's path (OpSpec artifact v2 records one per call site)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers.where import golden_graphs  # tests/ is on sys.path
from spyre_provenance.model.kernel_keys import MalformedHandles, event_handle_ids
from spyre_provenance.runtime import index as kernel_index
from spyre_provenance.runtime.annotate import PREFIX, annotate

BACKWARD = "graph_01_0-0_backward"
KEY = "abcdefghijklmnop"


@pytest.fixture
def out(tmp_path: Path) -> Path:
    return golden_graphs("mlp_train", tmp_path / "out")


def _site(out: Path) -> tuple[str, list[str]]:
    """A backward call site with several OpSpecs, and its handle ids in torch-spyre's order."""
    opspecs = json.loads((out / BACKWARD / "spyre_opspec_debug_handles.json").read_text())
    key, specs = next((k, s) for k, s in opspecs["kernels"].items() if len(s) >= 2)
    return key, list(dict.fromkeys(s["debug_handle"] for s in specs))


def _with_key(out: Path, site: str) -> None:
    path = out / BACKWARD / "spyre_opspec_debug_handles.json"
    doc = json.loads(path.read_text())
    doc["bundles"][site]["provenance_key"] = KEY
    path.write_text(json.dumps(doc))


def _annotate(out: Path, tmp_path: Path, handles: object, name: str = "spyre_kernel_v1_fused_x_zzzzzzzzzzzzzzzz#0"):
    event = {"ph": "X", "cat": "kernel", "name": name, "ts": 1, "dur": 2.0, "pid": 0, "tid": 0}
    event["args"] = {"debug_handles": handles}
    trace = tmp_path / "t.json"
    trace.write_text(json.dumps({"traceEvents": [event]}))
    summary = annotate(trace, kernel_index.build([out]), tmp_path / "o.json")
    (written,) = json.loads((tmp_path / "o.json").read_text())["traceEvents"]
    return summary, written


@pytest.mark.parametrize(
    ("given", "ids"),
    [
        (["12", "34"], ["12", "34"]),
        ('["12", "34"]', ["12", "34"]),  # the array, quoted
        ([12, 34], ["12", "34"]),  # ids as numbers
        ("[]", []),
        (None, None),
    ],
)
def test_the_field_reads_as_its_array(given, ids):
    assert event_handle_ids(given) == ids


@pytest.mark.parametrize("given", ["12,34", '{"a": 1}', '"12"', 12, {"ids": []}, [["12"]], [None], [True], [""]])
def test_anything_else_is_malformed_and_says_what_it_is(given):
    with pytest.raises(MalformedHandles, match="debug_handles"):
        event_handle_ids(given)


def test_quoted_handles_place_the_event_by_its_handles(out, tmp_path):
    site, ids = _site(out)
    summary, written = _annotate(out, tmp_path, json.dumps(ids))
    assert summary.annotated == summary.kernel_events == 1, summary.line()
    assert written["args"][f"{PREFIX}call_site"] == site
    assert written["args"]["debug_handles"] == json.dumps(ids)  # torch-spyre's field, untouched


def test_quoted_handles_agree_with_the_key_they_came_with(out, tmp_path):
    """The path issue 46 met: the key places the event, then its handles were compared as
    written (a string) with the compile's list, and called another build."""
    site, ids = _site(out)
    _with_key(out, site)
    summary, written = _annotate(out, tmp_path, json.dumps(ids), f"spyre_kernel_v1_fused_x_{KEY}#3")
    assert summary.annotated == 1 and not summary.mismatched, summary.line()
    assert written["args"][f"{PREFIX}call_site"] == site


def test_other_handles_are_still_another_build(out, tmp_path):
    site, ids = _site(out)
    _with_key(out, site)
    summary, _ = _annotate(out, tmp_path, json.dumps(ids[::-1]), f"spyre_kernel_v1_fused_x_{KEY}#3")
    assert summary.annotated == 0 and len(summary.mismatched) == 1, summary.line()
    (why,) = summary.mismatched
    assert str(ids[::-1]) in why and str(ids) in why  # two different lists, as lists


def test_malformed_handles_are_reported_as_such(out, tmp_path):
    site, ids = _site(out)
    _with_key(out, site)
    summary, written = _annotate(out, tmp_path, ",".join(ids), f"spyre_kernel_v1_fused_x_{KEY}#3")
    assert summary.annotated == 0 and not summary.mismatched and len(summary.malformed) == 1
    assert "a string holding no JSON array" in summary.line()
    assert "NOT ANNOTATED, their debug_handles are no list of handle ids (1)" in summary.line()
    assert not any(k.startswith(PREFIX) for k in written["args"])  # left as it was
