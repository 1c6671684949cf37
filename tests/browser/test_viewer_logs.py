"""``spyre-provenance view`` of what torch's own flags write, no ``--out``
(``TORCH_TRACE=DIR INDUCTOR_PROVENANCE=1 python x.py``): a TORCH_TRACE folder, or its log, in
headless chromium; every element lights exactly the relation computed from the log's
artifacts, read here line by line (tests/browser/test_viewer.py says how it is compared).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_viewer import _PANEL_TEXT, Page, Relation, lit_mismatches  # tests/browser/test_viewer.py

from helpers import chromium  # tests/helpers/chromium.py

pytestmark = [pytest.mark.browser, pytest.mark.compile]
browser = chromium.browser  # the module's chromium: one fixture for every viewer test file


UPSTREAM = """
import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(128, 256), torch.nn.ReLU(), torch.nn.Linear(256, 128))
torch.compile(model)(torch.randn(8, 128)).sum().backward()
"""


def logged_graphs(log: Path) -> list[tuple[str, dict[str, dict]]]:
    """Each compiled graph of a TORCH_TRACE log, read here line by line: its label as the page
    names a log's graph (``<log name> <compile id> <kind>``, the kind from the wrapper's
    ``# AOT ID``) and the JSON artifacts logged after its code."""
    records: list[tuple[dict, list[str]]] = []
    for line in log.read_text().splitlines():
        if line.startswith("\t") and records:
            records[-1][1].append(line[1:])
        elif "] {" in line:
            records.append((json.loads(line.split("] ", 1)[1]), []))
    graphs: list[tuple[str, dict[str, dict]]] = []
    for envelope, payload in records:
        if "inductor_output_code" in envelope:
            kind = re.search(r"# AOT ID: \['\d+_(\w+)'\]", payload[0])[1]
            graphs.append((f"{log.stem} {envelope['frame_id']}/{envelope['frame_compile_id']} {kind}", {}))
        name = (envelope.get("artifact") or {}).get("name", "")
        if graphs and name.startswith("inductor_provenance_tracking"):
            graphs[-1][1][name] = json.loads("\n".join(payload))
    return graphs


@pytest.fixture(scope="module")
def upstream_trace(tmp_path_factory, fresh_process):
    """A TORCH_TRACE folder written by torch's own flags alone (no spyre-provenance in the
    process): a training compile of the seed MLP's shape on stock Inductor."""
    work = tmp_path_factory.mktemp("upstream")
    env = {
        "TORCH_TRACE": str(work / "trace"),
        "INDUCTOR_PROVENANCE": "1",
        "TORCHINDUCTOR_CACHE_DIR": str(work / "cache"),
        "TORCHINDUCTOR_FORCE_DISABLE_CACHES": "1",
    }
    done = fresh_process.run(driver=UPSTREAM, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    return work / "trace"


def test_a_plain_torch_trace_folder_or_log_is_viewed_as_open_reads_it(browser, upstream_trace, run_cli, tmp_path):
    (log,) = upstream_trace.glob("*.log")
    graphs = [Relation(log, logged=g) for g in logged_graphs(log)]
    assert [r.label.rsplit(" ", 1)[1] for r in graphs] == ["forward", "backward"]
    for target in (upstream_trace, log):
        html = tmp_path / f"{target.name}.html"
        code, printed, err = run_cli("view", target, "-o", html)
        assert (code, err) == (0, ""), err
        page = Page(browser, html)
        try:
            problems = [problem for relation in graphs for problem in lit_mismatches(page, relation)]
            assert not problems, "\n".join(problems[:10])
            assert graphs[0].elements("call") and page.errors == []
            page.show(graphs[0].label)  # the graphs' code, from the log's payloads
            shown = page.page.eval_on_selector("#p-pre .body", _PANEL_TEXT)
            assert any(key == "input_1" for key, _ in shown) and shown[0][1].startswith("class GraphModule")
        finally:
            page.close()
    # with no -o, a log's page goes beside it
    assert run_cli("view", log)[0] == 0 and log.with_name(f"{log.stem}.view.html").is_file()
