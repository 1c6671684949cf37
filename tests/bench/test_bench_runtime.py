"""``make bench``'s run-time section (``bench.runtime``) keeps working: its quick run prints
the full run's table with finite ratios. Timings are never asserted."""

from __future__ import annotations

import json
import math
import re

from bench import runtime
from helpers.bench_section import quick_run
from spyre_provenance.runtime import index, trace_stream


def test_quick_run_prints_both_tables_and_a_verdict():
    text = quick_run("runtime", timeout=300)
    assert text.startswith(f"#### {runtime.SECTION}. Run time")
    ratio = re.search(r"\| A/B \| \| ([0-9.]+) \| \| ([0-9.]+) \|", text)
    assert ratio and all(math.isfinite(float(x)) and float(x) > 0 for x in ratio.groups())
    assert re.search(r"`spyre-provenance lookup NAME --in OUT` \| 500 \| 1 \| [0-9.]+ \|", text)
    eager = re.search(r"\| E/B' \| \| ([0-9.]+) \| \| ([0-9.]+) \|", text)  # the eager summary with stacks
    assert eager and all(math.isfinite(float(x)) and float(x) > 0 for x in eager.groups())
    assert "annotate --summary of an eager trace with stacks / (json.load + json.dump)" in text
    assert re.search(r"^- \*\*(met|not met)\*\* \(", text, re.MULTILINE)


def test_the_synthetic_inputs_are_what_they_claim(tmp_path):
    names = runtime.write_out(tmp_path / "out", 30)
    built = index.build([tmp_path / "out"])
    assert sorted(built.by_name) == sorted(names)  # the log reads back through the project's reader
    trace = tmp_path / "t.json"
    runtime.write_trace(trace, 200, names)
    doc = json.loads(trace.read_text())  # valid JSON as a whole
    streamed = [e for kind, _, e in trace_stream.read_trace(trace) if kind == "event"]
    assert streamed == doc["traceEvents"] and len(streamed) == 200
    assert sum(e["name"].startswith("graph_0_sdsc_") for e in streamed) == 20


def test_the_synthetic_eager_inputs_are_what_they_claim(tmp_path):
    """Per-op graphs by the project's rule, read back through its log reader; a trace that is
    valid JSON, about one event in ten a kernel's, every launch with its Python stack."""
    from spyre_provenance.runtime import time_summary
    from spyre_provenance.runtime.lookup import GraphView

    runtime.write_eager_out(tmp_path / "out")
    built = index.build([tmp_path / "out"])
    assert sorted(GraphView.of(g).per_op for g in built.graphs) == sorted(
        f"aten.{op}.{'Tensor' if op in ('add', 'mul') else 'default'}" for op in runtime.EAGER_OPS
    )
    trace = tmp_path / "t.json"
    _, kernels = runtime.write_eager_trace(trace, 2000)
    events = json.loads(trace.read_text())["traceEvents"]
    assert 0.08 < kernels / len(events) < 0.12
    summary = time_summary.summarize(trace, built)
    assert summary.timed_events == summary.per_op_events == kernels and summary.unplaced == 0
    assert {r.code for r in summary.lines} == {f"in layer{f}" for f in range(runtime.EAGER_FUNCTIONS)}
