"""``view A --compare B``'s page in headless chromium (issue 47 point 3), on the real compiles
``tests/compile/test_compare.py`` compares (``helpers.compare_cases``, shared through
``compile_case``): a model edited at one line (two folders) and prefill against decode (two
compile ids of one folder).

The oracles: ``compare --format json``'s document for the same sides (the page lists its pairs
of lines, in its order, changed first), and the relation computed from the graph folders' files
(``test_viewer.Relation``): a click on a pair of lines lights, in each graph of each side that
holds the line, what a click on that line lights there."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_viewer import Page, Relation  # tests/browser/test_viewer.py

from helpers import chromium  # tests/helpers/chromium.py
from helpers.compare_cases import edited_args, model_files, phases_args
from spyre_provenance.model.compare_records import STATUSES

pytestmark = [pytest.mark.browser, pytest.mark.compile]
browser = chromium.browser  # the module's chromium: one fixture for every viewer test file


class Compared:
    """One case: its sides, compare's document, the page, and each side's graph folders."""

    def __init__(self, a: str, b: str, run_cli, html: Path) -> None:
        self.a, self.b = a, b
        code, out, err = run_cli("compare", a, b, "--format", "json")
        assert code == 1, err  # the cases differ
        self.doc = json.loads(out)
        code, _, err = run_cli("view", a, "--compare", b, "-o", html)
        assert code == 0, err
        self.html = html
        self.relations = {"a": _relations(a), "b": _relations(b)}


def _relations(side: str) -> list[Relation]:
    path, _, compile_id = side.partition(":")
    found = [Relation(f) for f in sorted(Path(path).glob("graph_*"))]
    return [r for r in found if not compile_id or r.label.split(" ")[-2] == compile_id]


@pytest.fixture(scope="module", params=["edited", "phases"])
def compared(request, compile_case, tmp_path_factory, run_cli_module) -> Compared:
    models = model_files(tmp_path_factory)
    if request.param == "edited":
        before, after = (compile_case(*args) for args in edited_args(models))
        a, b = str(before.out), str(after.out)
    else:
        phases = compile_case(*phases_args(models))
        before = after = phases
        a, b = f"{phases.out}:0/0", f"{phases.out}:0/1"
    for case in (before, after):
        assert case.returncode == 0, case.stderr[-2000:]
    return Compared(a, b, run_cli_module, tmp_path_factory.mktemp("compare-page") / "page.html")


@pytest.fixture(scope="module")
def run_cli_module():
    """``spyre-provenance ARGS`` in-process, its output captured (a module's fixture cannot
    take the per-test ``capsys``)."""
    import contextlib
    import io

    from spyre_provenance import cli

    def run(*args: object) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli.main([str(a) for a in args])
        return code, out.getvalue(), err.getvalue()

    return run


def _key(use: dict | None) -> str:
    return f"{use['file']}:{use['line']}" if use else ""


def test_the_page_lists_compares_lines_in_its_order(browser, compared):
    page = Page(browser, compared.html)
    try:
        shown = page.page.eval_on_selector_all(
            "#compare .pair[data-p]", "es => es.map(e => [e.dataset.status, e.dataset.a, e.dataset.b])"
        )
        want = [[p["status"], _key(p["a"]), _key(p["b"])] for p in compared.doc["lines"]]
        assert shown == want
        # changed lines (and lines of one side) first, then regrouped, then the same
        rank = {"changed": 0, "only_a": 0, "only_b": 0, "regrouped": 1, "same": 2}
        assert [rank[s] for s, _, _ in shown] == sorted(rank[s] for s, _, _ in shown)
        assert {s for s, _, _ in shown} <= set(STATUSES) and any(s != "same" for s, _, _ in shown)
        # each side's graphs, and only they, under their side's name
        options = page.page.eval_on_selector_all("#graph option", "os => os.map(o => o.textContent)")
        want_options = [f"{s.upper()}: {r.label} (" for s in "ab" for r in compared.relations[s]]
        assert [o[: len(w)] for o, w in zip(options, want_options, strict=True)] == want_options
        header = page.page.inner_text("#compare h2")
        assert header.startswith(f"A: {compared.a} vs B: {compared.b}")
        assert page.errors == [] and page.requests == [page.url]
    finally:
        page.close()


def test_a_click_on_a_line_lights_what_it_became_on_each_side(browser, compared):
    page = Page(browser, compared.html)
    problems = []
    try:
        for p, pair in enumerate(compared.doc["lines"]):
            page.page.click(f'#compare .pair[data-p="{p}"]')
            for side in "ab":
                key = _key(pair[side])
                holding = [r for r in compared.relations[side] if key and key in r.elements("line")]
                links = page.page.eval_on_selector_all(
                    f"#detail a[data-pair='{p}']", "as => as.map(a => a.textContent)"
                )
                # the page links exactly the graphs of that side holding the line
                assert [x for x in links if x.startswith(side.upper() + ": ")] == [
                    f"{side.upper()}: {r.label}" for r in holding
                ], (p, side)
                for relation in holding:
                    (link,) = [
                        a
                        for a in page.page.query_selector_all(f"#detail a[data-pair='{p}']")
                        if a.text_content() == f"{side.upper()}: {relation.label}"
                    ]
                    link.click()
                    want, boxes = relation.lit_and_boxed(("line", key))
                    if page.lit() != want or page.boxed() != boxes:
                        problems.append(f"pair {p} {side} {relation.label}: lit {sorted(page.lit() ^ want)} differ")
                    chosen = page.page.eval_on_selector_all("#compare .pair.sel", "es => es.map(e => e.dataset.p)")
                    assert chosen == [str(p)]  # the pair stays chosen across graphs
        assert not problems, "\n".join(problems[:10])
        # the address names the chosen pair and the graph shown: opened, the page shows them again
        last = len(compared.doc["lines"]) - 1
        page.page.click(f'#compare .pair[data-p="{last}"]')
        address, lit = page.page.url, page.lit()
        assert f"pair={last}" in address
        again = Page(browser, compared.html, "#" + address.split("#", 1)[1])
        try:
            assert again.lit() == lit and again.page.eval_on_selector("#compare .pair.sel", "e => e.dataset.p") == str(
                last
            )
        finally:
            again.close()
        page.page.keyboard.press("Escape")
        assert page.page.eval_on_selector_all("#compare .pair.sel", "es => es.length") == 0 and page.lit() == set()
        assert page.errors == [] and page.requests == [page.url]
    finally:
        page.close()
