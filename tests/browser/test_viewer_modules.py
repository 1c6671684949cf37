"""Kernels no user frame made, named by module on the page (issue 56 points 7 and 8): an
``nn.TransformerEncoder`` of torch's own modules, compiled and profiled, viewed with its trace.
The oracle is the page's own document and ``annotate --summary``'s rows, read here."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_viewer import Page  # tests/browser/test_viewer.py

from helpers import chromium  # tests/helpers/chromium.py
from helpers.where import ZOO

pytestmark = [pytest.mark.browser, pytest.mark.compile]
browser = chromium.browser  # the module's chromium: one fixture for every viewer test file


def test_modules_are_listed_apart_from_source_lines(browser, compile_case, run_cli, tmp_path):
    done = compile_case(f"{ZOO / 'torch_modules.py'}:transformer_encoder", "--no-tlparse", "--profile")
    assert done.returncode == 0, done.stderr[-2000:]
    (trace,) = (done.out / "profile").glob("*.trace.json")
    html = tmp_path / "modules.html"
    assert run_cli("view", done.out, "--trace", trace, "-o", html)[0] == 0
    page = Page(browser, html)
    try:
        mods = page.page.eval_on_selector_all("#p-line .mod", "es => es.map(e => e.textContent)")
        names = [re.match(r"module(.*?) (ran|encloses)", m)[1] for m in mods]
        assert "layers.0.self_attn: MultiheadAttention" in names and "layers.1.linear2: Linear" in names
        assert all("% of kernel time" in m for m in mods)  # each with the summary's time
        assert page.keys("line") == []  # no module is a source line: none of the encoder's frames is one
        header = page.page.inner_text("#p-line h2")
        assert "0 lines that made kernels" in header and "5 kernels named by module" in header, header
        marks = page.page.eval_on_selector_all("#p-call .row .mod-of", "es => es.map(e => e.textContent)")
        assert len(marks) == 5 and all(m.startswith("module ") for m in marks)
        assert page.errors == []
    finally:
        page.close()


def test_a_compared_module_reads_as_one_and_a_click_lights_the_kernel_it_ran(browser, compile_case, run_cli, tmp_path):
    """``view A --compare B`` of an ``nn.Sequential`` edited in module ``1`` (GELU -> ReLU,
    the compiles ``tests/compile/test_compare_modules.py`` compares): the pair reads as
    compare's text does (``model.modules.module_text``), never ``(module):0``, and a click on
    it lights, in each side's graph, a kernel that module ran."""
    from spyre_provenance.model.modules import module_text

    sides = [
        compile_case(
            f"{ZOO / 'torch_modules.py'}:{f}", "--backend", "inductor", "--no-tlparse", "--no-viewer", "--profile"
        )
        for f in ("sequential_gelu", "sequential_relu")
    ]
    assert all(s.returncode == 0 for s in sides), [s.stderr[-2000:] for s in sides]
    html = tmp_path / "compare.html"
    assert run_cli("view", sides[0].out, "--compare", sides[1].out, "-o", html)[0] == 0
    page = Page(browser, html)
    try:
        changed = page.page.eval_on_selector_all(
            '#compare .pair[data-status="changed"] .use .code', "es => es.map(e => e.textContent)"
        )
        assert changed == [module_text("1: GELU"), module_text("1: ReLU")]
        assert not page.page.eval_on_selector_all(
            "#compare .use .code", "es => es.filter(e => e.textContent.includes('(module)'))"
        )
        page.page.click('#compare .pair[data-status="changed"]')
        for side, name in (("a", "1: GELU"), ("b", "1: ReLU")):
            page.page.click(f'#detail a[data-pair][data-g]:text-matches("^{side.upper()}:")')
            selected = page.page.eval_on_selector("#p-call .row.sel", "e => e.dataset.key")
            mod = page.page.eval_on_selector("#p-call .row.sel .mod-of", "e => e.textContent")
            assert selected and name in mod, (side, selected, mod)
        assert page.errors == []
    finally:
        page.close()
