"""``make bench``'s viewer section (``bench.viewer``) keeps working: its quick run prints the
full run's table. Timings are never asserted; the synthetic --out is checked to be what it
claims: a folder ``view`` reads, with the kernels, OpSpecs and bundles it says."""

from __future__ import annotations

import re

from bench import viewer
from helpers.bench_section import quick_run
from spyre_provenance.viewer import data


def test_quick_run_prints_the_table_and_a_verdict():
    text = quick_run("viewer", timeout=600)
    assert text.startswith(f"#### {viewer.SECTION}. The viewer")
    assert re.search(r"\| page size \| \| [0-9.]+ MiB \| \|", text)
    assert re.search(r"^- \*\*(met|not met|not measured)\*\* \(", text, re.MULTILINE)


def test_the_synthetic_out_is_what_it_claims(tmp_path):
    viewer.write_out(tmp_path / "out", 40)
    doc = data.build(tmp_path / "out")
    (graph,) = doc["graphs"]
    assert len(graph["calls"]) == 40 and len(graph["opspecs"]) == 40 * viewer.SPECS
    assert len(graph["bundles"]) == 40 * viewer.SPECS and all(b["handle_id_only"] for b in graph["bundles"])
    assert all(len(c["lines"]) == 1 and len(c["post_nodes"]) == 2 for c in graph["calls"])
