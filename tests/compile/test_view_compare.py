"""``view A --compare B`` (issue 47 point 3, issue 46 point 4) on real compiles, those
``tests/compile/test_compare.py`` compares (``helpers.compare_cases``: compiled once per
session): the page embeds the very comparison ``compare --format json`` prints for the same
sides (one rule), both sides' graphs tagged with their side, and is the same bytes twice.
What the page does with it in a browser: ``tests/browser/test_viewer_compare.py``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from helpers.compare_cases import edited_args, model_files, phases_args  # tests/ is on sys.path

pytestmark = pytest.mark.compile
_DATA = re.compile(r'<script type="application/json" id="data">(.*?)</script>', re.DOTALL)


@pytest.fixture(scope="session")
def sides(compile_case, tmp_path_factory) -> dict[str, tuple[str, str]]:
    """Each case's two sides as both commands take them: the edited model's two folders, and
    prefill against decode (two compile ids of one folder, profiled: times per line)."""
    models = model_files(tmp_path_factory)
    before, after = (compile_case(*args) for args in edited_args(models))
    phases = compile_case(*phases_args(models))
    for case in (before, after, phases):
        assert case.returncode == 0, case.stderr[-2000:]
    return {
        "edited": (str(before.out), str(after.out)),
        "phases": (f"{phases.out}:0/0", f"{phases.out}:0/1"),
    }


def embedded(html: Path) -> dict:
    """The page's one JSON document, read from the HTML as a browser reads it."""
    (text,) = _DATA.findall(html.read_text(encoding="utf-8"))
    return json.loads(text.replace("<\\/", "</"))


def graph_folders(side: str) -> list[str]:
    """The graph folders a side names, read here: every one, or those of its compile id."""
    path, _, compile_id = side.partition(":")
    found = sorted(p.name for p in Path(path).glob("graph_*"))
    return [f for f in found if not compile_id or f.endswith("_" + compile_id.replace("/", "-") + "_inference")]


@pytest.mark.parametrize("case", ["edited", "phases"])
def test_the_page_embeds_compares_own_document(case, sides, run_cli, tmp_path):
    a, b = sides[case]
    code, out, err = run_cli("compare", a, b, "--format", "json")
    assert code == 1 and err == "", err  # the cases differ
    html = tmp_path / "page.html"
    assert run_cli("view", a, "--compare", b, "-o", html)[0] == 0
    doc = embedded(html)
    assert doc["compare"] == json.loads(out)
    if case == "phases":  # the profiled case: times per line, from the trace beside the log
        assert all(u["time_us"] is not None for p in doc["compare"]["lines"] for u in (p["a"], p["b"]) if u)
    # both sides' graphs, each tagged with its side, A's first
    for side, name in (("a", a), ("b", b)):
        assert [g["folder"].rsplit("/", 1)[-1] for g in doc["graphs"] if g["side"] == side] == graph_folders(name)
    assert [g["side"] for g in doc["graphs"]] == sorted(g["side"] for g in doc["graphs"])
    # deterministic: the same page twice
    again = tmp_path / "again.html"
    assert run_cli("view", a, "--compare", b, "-o", again)[0] == 0
    assert again.read_bytes() == html.read_bytes()


def test_the_default_page_goes_beside_as_and_a_missing_compile_is_unusable(sides, run_cli):
    a, b = sides["edited"]
    code, printed, err = run_cli("view", a, "--compare", b)
    assert code == 0 and (Path(a) / "compare.view.html").is_file(), err
    phases = sides["phases"][0].rpartition(":")[0]
    code, printed, err = run_cli("view", f"{phases}:0/7", "--compare", b)
    assert code == 2 and printed == "" and "no compile 0/7 there (it holds 0/0, 0/1)" in err
    assert not (Path(phases) / "compare.view.html").exists()
