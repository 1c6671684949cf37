"""``make bench``'s call-site section (``bench.call_sites``) keeps working: its quick run
prints the full run's table, a row per workload and profiler state, the eager loop with the
profiler on judged against its target, and the floor (a range alone) for each workload.
Timings are never asserted."""

from __future__ import annotations

import math
import re

import pytest

from bench import call_sites
from helpers.bench_section import quick_run

pytestmark = pytest.mark.compile


def test_quick_run_prints_a_row_per_workload_and_profiler_state_and_the_floor():
    text = quick_run("call_sites", timeout=600)
    assert text.startswith(f"#### {call_sites.SECTION}. Call sites recorded at launch")
    rows = re.findall(
        r"^\| (?P<workload>[^,|]+), \d+ rounds of \d+ calls \| (?P<profiler>on|off) \| (?P<ratio>[0-9.]+)x"
        r" \([0-9.]+-[0-9.]+\) \| [+-][0-9.]+ us \| (?P<target>[^|]+) \| (?P<verdict>[^|]*) \|$",
        text,
        re.MULTILINE,
    )
    assert [(w, p) for w, p, *_ in rows] == [(w, p) for w in call_sites.WORKLOADS for p in call_sites.PROFILER]
    assert all(math.isfinite(float(ratio)) and float(ratio) > 0 for _, _, ratio, _, _ in rows)
    judged = [(w, p, v.strip()) for w, p, _, t, v in rows if t.strip() != "reported"]
    assert len(judged) == 1 and judged[0][:2] == ("per-op eager loop", "on") and judged[0][2] in ("ok", "OVER")
    # the floor (a range alone, reported under the table) for each workload
    floor = re.search(r"^Floor, the profiler on: .*: (?P<parts>.*)\.$", text, re.MULTILINE)
    assert floor is not None
    parts = re.findall(r"(?P<workload>[^;]+?) [0-9.]+x \([+-][0-9.]+ us a call\)(?:; |$)", floor["parts"])
    assert [p.strip() for p in parts] == list(call_sites.WORKLOADS)
