"""Per-op (eager) compiles in the viewer (issue 46 point 1, issue 47 point 4), on the eager
program of ``tests/compile/test_eager_runtime.py`` (``helpers.eager_case``: run once per
session): torch-spyre's pattern, each ATen op compiled on its own and reused from several
functions, beside one whole-graph compile.

The graph selector groups them under one entry per op kind, marked as per-op, instead of one
entry per one-op graph; a second selector lists the op's compiles, and each shows as any graph.
The oracle is the graph folders' own files, read here: a per-op graph has one pre-grad node,
named as Dynamo names a call of the ATen overload its OpSpec handles record."""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_viewer import Page, Relation, lit_mismatches  # tests/browser/test_viewer.py

from helpers import chromium  # tests/helpers/chromium.py
from helpers.eager_case import eager_run

pytestmark = [pytest.mark.browser, pytest.mark.compile]
browser = chromium.browser  # the module's chromium: one fixture for every viewer test file


def _per_op(folder: Path) -> str | None:
    """The op of a per-op graph folder, read from its files; None for a whole graph."""
    pre = json.loads((folder / "inductor_provenance_tracking_node_mappings.json").read_text())["preToPost"]
    handles = json.loads((folder / "spyre_opspec_debug_handles.json").read_text())["handles"]
    ops = {h["aten_op"] for h in handles.values() if h.get("aten_op")}
    if len(pre) != 1 or len(ops) != 1:
        return None
    (node,), (op,) = pre, ops
    _, name, overload = op.split(".")
    return op if node.split("_")[0] == name and node.removeprefix(name + "_").startswith(overload.lower()) else None


def test_per_op_compiles_are_one_entry_per_op_kind(browser, tmp_path_factory, run_cli, tmp_path):
    run = eager_run(tmp_path_factory)
    folders = sorted(run.out.glob("graph_*"))
    kinds: dict[str | None, list[Path]] = defaultdict(list)
    for folder in folders:
        kinds[_per_op(folder)].append(folder)
    assert len(kinds) > 2 and kinds[None], kinds  # several op kinds, and one whole graph
    assert any(len(of_kind) > 1 for op, of_kind in kinds.items() if op)  # an op kind compiled more than once
    html = tmp_path / "eager.html"
    assert run_cli("view", run.out, "-o", html)[0] == 0
    page = Page(browser, html)
    try:
        groups = page.page.eval_on_selector_all(
            "#graph optgroup",
            "gs => gs.map(g => [g.label, g.className, Array.from(g.children).map(o => o.textContent)])",
        )
        (per_op,) = [g for g in groups if g[1] == "per-op"]
        assert per_op[0].startswith("per-op compiles (eager mode)")
        # one entry per op kind, in the order its first compile came, with how many compiles
        want = [f"per-op {op} ({len(fs)} compile{'s' if len(fs) > 1 else ''})" for op, fs in kinds.items() if op]
        assert per_op[2] == want
        # the whole graph stays an entry of its own
        whole = [r.label for r in (Relation(f) for f in kinds[None])]
        assert [o.split(" (")[0] for g in groups if g[1] != "per-op" for o in g[2]] == whole
        for op, of_kind in kinds.items():
            if op is None:
                continue
            (value,) = page.page.eval_on_selector_all(
                "#graph option", f"os => os.filter(o => o.dataset.perOp === {json.dumps(op)}).map(o => o.value)"
            )
            page.page.select_option("#graph", value)
            assert page.page.eval_on_selector("#perop-pick", "e => e.hidden") is False
            listed = page.page.eval_on_selector_all("#perop option", "os => os.map(o => [o.value, o.textContent])")
            relations = [Relation(f) for f in of_kind]
            assert [text.split(" (")[0] for _, text in listed] == [r.label for r in relations]
            for (graph, _), relation in zip(listed, relations, strict=True):
                page.page.select_option("#perop", graph)
                assert page.page.eval_on_selector("#graph", "s => s.value") == value  # still the op's entry
                # each compile of the op shows, and lights, as any graph does
                problems = lit_mismatches(page, relation)  # Page.show finds a per-op compile too
                assert not problems, "\n".join(problems[:10])
        page.page.select_option("#graph", label=[o for g in groups if g[1] != "per-op" for o in g[2]][0])
        assert page.page.eval_on_selector("#perop-pick", "e => e.hidden") is True
        assert page.errors == []
    finally:
        page.close()
