"""The viewer reads torch-spyre's own provenance (PR #3449's ``spyre_provenance`` sidecar, built
by ``helpers.pr3449`` as the branch's writer builds it) as more evidence: each call site it
holds shows torch-spyre's key and handles, a disagreement with the hook's handles is the
compile summary's line, and the sidecar's handle lines join the call site's. Where no sidecar
holds the folder's graphs, the page is the same bytes.

The page in a browser: tests/browser/test_viewer_sidecar.py."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from helpers import pr3449
from spyre_provenance.validate import spyre_sidecar
from spyre_provenance.viewer import data, page

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "mlp" / "graph_00_0-0_inference"
SITE = "sdsc_fused_linear_relu_0:1"
RELU = "5112113642011698378"  # the relu OpSpec's handle, at line 38 of the example


@pytest.fixture
def out(tmp_path: Path) -> Path:
    folder = tmp_path / "mlp"
    shutil.copytree(GOLDEN, folder / GOLDEN.name)
    return folder


def _write(out: Path, doc: dict) -> Path:
    path = out / "torchinductor" / "spyre_provenance.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(pr3449.text(doc))
    return path


def _call(doc: dict) -> dict:
    (graph,) = doc["graphs"]
    return next(c for c in graph["calls"] if c["key"] == SITE)


def _position(doc: dict, line: int) -> int:
    return next(i for i, (_, n) in enumerate(doc["lines"]) if n == line)


def test_a_call_site_shows_torch_spyres_key_and_handles(out: Path) -> None:
    sidecar = pr3449.of_graph_folder(GOLDEN)
    _write(out, sidecar)
    call = _call(data.build(out))
    (occurrence,) = sidecar["kernelOccurrences"].values()
    assert call["spyre_key"] == occurrence["identityKey"]
    assert call["spyre_handles"] == sidecar["kernelIdentities"][call["spyre_key"]]["directHandleIds"]
    hooks = json.loads((GOLDEN / "spyre_opspec_debug_handles.json").read_text())["kernels"][SITE]
    assert call["spyre_handles"] == [s["debug_handle"] for s in hooks]  # the same handles: they agree
    assert call["spyre_disagreements"] == []


def test_a_disagreement_is_the_compile_summarys_line_and_its_line_joins_the_call_site(out: Path) -> None:
    plain = data.build(out)
    sidecar = pr3449.of_graph_folder(GOLDEN, moved={RELU: 40})
    _write(out, sidecar)
    doc = data.build(out)
    call = _call(doc)
    hook = json.loads((GOLDEN / "spyre_opspec_debug_handles.json").read_text())
    assert call["spyre_disagreements"] == spyre_sidecar.cross_check(hook, sidecar) != []
    assert call["spyre_disagreements"] == [
        f"{SITE}: handle {RELU} at src/spyre_provenance/compile/examples.py:38 here,"
        " at src/spyre_provenance/compile/examples.py:40 in torch-spyre's spyre_provenance"
    ]
    # torch-spyre's line for the handle is evidence too: the call site lights it, as its
    # stack traces' lines; the hook's OpSpecs keep their own lines
    assert _position(doc, 40) in call["lines"] and all(
        _position(doc, 40) not in s["lines"] for s in doc["graphs"][0]["opspecs"]
    )
    assert call["lines"][: len(_call(plain)["lines"])] == _call(plain)["lines"]
    rel = doc["graphs"][0]["lights"]  # compact entries: the lit lines first, call sites fourth
    assert rel["call"][0][0] == sorted(call["lines"])
    assert rel["line"][str(_position(doc, 40))][3] == [0]  # torch-spyre's line lights its call site


def test_where_no_sidecar_holds_the_graphs_the_page_is_the_same_bytes(out: Path, tmp_path: Path) -> None:
    before = page.render(data.build(out))
    assert not {"sk", "sh", "sd"} & set(_call(data.build(out)))  # no field added
    elsewhere = pr3449.of_graph_folder(GOLDEN)
    for occurrence in elsewhere["kernelOccurrences"].values():  # a compile of other kernels
        occurrence["compilerKernelName"] = "sdsc_fused_gelu_7"
    path = _write(out, elsewhere)
    assert page.render(data.build(out)) == before
    path.write_text('{"schemaVersion": 1}')  # not a valid sidecar: passed over, as lookup does
    assert page.render(data.build(out)) == before


WRAPPER = f"""# AOT ID: ['0_inference']
def call(args):
    # [Provenance debug handles] {SITE}
    sdsc_fused_linear_relu_0.run(arg0_1, buf0)
"""


def test_a_run_without_the_hook_gets_its_lines_from_the_sidecar_its_compile_logged(tmp_path: Path) -> None:
    """``TORCH_TRACE`` and ``INDUCTOR_PROVENANCE=1`` alone on torch-spyre's branch: Inductor's
    mapping and wrapper, and torch-spyre's record; no OpSpecs, so the call site's lines are
    torch-spyre's handles' lines, and nothing disagrees (there is nothing of the hook's)."""
    sidecar = pr3449.of_graph_folder(GOLDEN)
    mapping = (GOLDEN / "inductor_provenance_tracking_node_mappings.json").read_text()
    records = {"inductor_output_code": WRAPPER, "inductor_provenance_tracking_node_mappings": mapping}
    bare = data.build(pr3449.log_records(tmp_path / "bare", records))
    assert not {"spyre_key", "spyre_handles", "spyre_disagreements"} & set(_call(bare)) and _call(bare)["lines"] == []
    records["spyre_provenance"] = pr3449.text(sidecar)
    doc = data.build(pr3449.log_records(tmp_path / "logged", records))
    call = _call(doc)
    (occurrence,) = sidecar["kernelOccurrences"].values()
    assert (call["spyre_key"], call["spyre_disagreements"]) == (occurrence["identityKey"], [])
    assert sorted(doc["lines"][i][1] for i in call["lines"]) == [38, 39]  # the example's two Linear lines
