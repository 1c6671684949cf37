"""The viewer's page of a compile on torch-spyre main's own compiler (its scheduler, its
OpSpecs and handles, the SuperDSC bundles its async_compile writes into Inductor's cache),
in headless chromium: every kind of element lights exactly the relation computed from the
artifact files and torch-spyre's bundle files (tests/browser/test_viewer.py says how)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "browser"))
from test_viewer import Page, Relation, lit_mismatches  # tests/browser/test_viewer.py

from helpers import chromium  # tests/helpers/chromium.py

pytestmark = [pytest.mark.compile, pytest.mark.browser]
browser = chromium.browser  # the module's chromium: one fixture for every viewer test file


#: compiles shared with tests/spyre_main's other modules: inference, and training (on torch-spyre
#: main a Linear model compiles as an inference graph; param_free has a backward it refuses)
CASES = [("mlp",), ("residual",), ("mlp", "--train")]


@pytest.mark.parametrize("args", CASES, ids=["-".join(a).replace("--", "") for a in CASES])
def test_a_torch_spyre_compile_lights_its_relatives_bundles_included(args, spyre_main_case, browser, tmp_path):
    case = spyre_main_case(*args)
    folders = case.graph_dirs()
    assert folders, case.stdout + case.stderr[-3000:]
    # torch-spyre's bundle folders, by path and by the handle each bundle carries (read here
    # from the files); a call site's recorded folder picks its own
    served: dict[str, str] = {}
    for folder in case.bundle_dirs():
        for bundle in sorted(folder.glob("sdsc_*.json")):
            served[f"{folder.name}/{bundle.name}"] = f"{folder.name}/{bundle.name}"
            (body,) = json.loads(bundle.read_text()).values()
            handle = body.get("debug_handle_")
            if handle:
                served.setdefault(str(handle["id"]), f"{folder.name}/{bundle.name}")
    assert served, "torch-spyre wrote no bundle with a handle"
    from spyre_provenance import cli

    html = tmp_path / "page.html"
    assert (
        cli.main(["view", str(case.out), "-o", str(html), "--bundles", str(case.inductor_cache / "inductor-spyre")])
        == 0
    )
    page = Page(browser, html)
    try:
        problems = []
        for relation in (Relation(f, served) for f in folders):
            problems += lit_mismatches(page, relation)
            assert relation.elements("bundle") and relation.elements("spec")
        assert not problems, "\n".join(problems[:10])
        assert page.errors == [] and [u for u in page.requests if u != page.url] == []
    finally:
        page.close()


def test_a_torch_spyre_trace_times_the_call_sites_by_their_keys(spyre_main_case, browser, tmp_path):
    """torch-spyre's device events as its runtime names them (REFERENCE §6), made here from the
    compile's own kernel keys and OpSpec handles (no Spyre card runs them): each call site
    gets its events' time and count on the page."""
    case = spyre_main_case("mlp")
    events, expected = [], {}
    for folder in case.graph_dirs():
        relation = Relation(folder)
        opspecs = json.loads((folder / "spyre_opspec_debug_handles.json").read_text())
        for n, (key, specs) in enumerate(opspecs["kernels"].items()):
            ids = list(dict.fromkeys(s["debug_handle"] for s in specs if s.get("debug_handle")))
            pkey = opspecs["bundles"][key]["provenance_key"]  # the runner's descriptor key
            for step in range(n + 1):  # a different count per call site
                events.append(
                    {"ph": "X", "name": f"spyre_kernel_v1_fused_x_{pkey}#{step}", "ts": step, "dur": 10.0,
                     "pid": 0, "tid": 0, "args": {"provenance_key": pkey, "debug_handles": ids}}
                )  # fmt: skip
            expected[(relation.label, key)] = n + 1
    trace = tmp_path / "trace.json"
    trace.write_text(json.dumps({"traceEvents": events}))
    from spyre_provenance import cli

    html = tmp_path / "page.html"
    assert cli.main(["view", str(case.out), "-o", str(html), "--trace", str(trace)]) == 0
    page = Page(browser, html)
    try:
        for (label, key), calls in expected.items():
            page.show(label)
            (text,) = page.page.eval_on_selector_all(
                "#p-call .row", f"es => es.filter(e => e.dataset.key === {json.dumps(key)}).map(e => e.textContent)"
            )
            assert f"{calls} call{'s' if calls != 1 else ''}" in text, text
    finally:
        page.close()
