"""torch-spyre's own provenance in the viewer, in headless chromium: the golden seed MLP's graph
folder beside the sidecar PR #3449's branch would write for it (``helpers.pr3449``), once as
the hook's handles say, once with one handle on another line. The call site shows torch-spyre's
key and handles, a disagreement is marked on it and said in full when it is clicked, and
torch-spyre's line lights with the call site. The oracle is the sidecar's own document and
``cross_check`` on the folder's files."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_viewer import Page  # tests/browser/test_viewer.py

from helpers import chromium, pr3449  # tests/helpers/chromium.py, pr3449.py
from spyre_provenance.validate import spyre_sidecar

pytestmark = [pytest.mark.browser]
browser = chromium.browser  # the module's chromium: one fixture for every viewer test file

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "mlp" / "graph_00_0-0_inference"
SITE = "sdsc_fused_linear_relu_0:1"
RELU = "5112113642011698378"  # the relu OpSpec's handle, at line 38 of the example
EXAMPLE = "src/spyre_provenance/compile/examples.py"


def _page(browser, run_cli, tmp_path: Path, sidecar: dict) -> Page:
    out = tmp_path / "mlp"
    shutil.copytree(GOLDEN, out / GOLDEN.name)
    (out / "torchinductor").mkdir()
    (out / "torchinductor" / "spyre_provenance.json").write_text(pr3449.text(sidecar))
    html = tmp_path / "view.html"
    code, _, err = run_cli("view", out, "-o", html)
    assert (code, err) == (0, "")
    return Page(browser, html)


def _text(page: Page, selector: str) -> list[str]:
    return page.page.eval_on_selector_all(selector, "es => es.map(e => e.textContent)")


@pytest.mark.parametrize("moved", [False, True], ids=["agree", "disagree"])
def test_the_call_site_shows_torch_spyres_key_and_handles_and_a_disagreement(browser, run_cli, tmp_path, moved):
    sidecar = pr3449.of_graph_folder(GOLDEN, moved={RELU: 40} if moved else None)
    (occurrence,) = sidecar["kernelOccurrences"].values()
    key = occurrence["identityKey"]
    handles = sidecar["kernelIdentities"][key]["directHandleIds"]
    hook = json.loads((GOLDEN / "spyre_opspec_debug_handles.json").read_text())
    expected = spyre_sidecar.cross_check(hook, sidecar)
    assert bool(expected) is moved
    page = _page(browser, run_cli, tmp_path, sidecar)
    try:
        (row,) = _text(page, f'#p-call .row[data-key="{SITE}"]')
        assert f"torch-spyre {key}" in row
        assert ("\u2260 hook" in row) is moved  # the mark of a disagreement, on the row itself
        page.click("call", SITE)
        assert _text(page, "#detail .sk") == [key]
        assert _text(page, "#detail .sh") == [", ".join(handles)]
        assert _text(page, "#detail .sd") == expected
        assert ("the hook's handles agree" in page.page.inner_text("#detail")) is not moved
        lit = page.lit()
        assert ("line", f"{EXAMPLE}:38") in lit
        assert (("line", f"{EXAMPLE}:40") in lit) is moved  # torch-spyre's line for the handle
        if moved:  # and that line, clicked, lights the call site that holds it
            page.click("line", f"{EXAMPLE}:40")
            assert ("call", SITE) in page.lit()
        # search finds the call site by torch-spyre's key, as a device event names the kernel
        page.page.fill("#search", key)
        assert page.visible("call") == [SITE]
        page.page.fill("#search", "z" * 16)
        assert page.visible("call") == []
        assert page.errors == [] and all(r.startswith("file:") for r in page.requests)
    finally:
        page.close()
