"""``make bench``'s compare section (``bench.compare``) keeps working: its quick run prints
the full run's table and a verdict, and its synthetic folders are what they claim. Timings
are never asserted."""

from __future__ import annotations

import re

import spyre_provenance
from bench import compare as compare_bench
from helpers.bench_section import quick_run


def test_quick_run_prints_the_table_and_a_verdict():
    text = quick_run("compare", timeout=300)
    assert text.startswith(f"#### {compare_bench.SECTION}. `compare` of two 300-kernel folders")
    assert re.search(r"\| `spyre-provenance compare A B --format json` \| 1 \| [0-9.]+ \|", text)
    assert re.search(r"^- \*\*(met|not met)\*\* \(compare of two 300-kernel folders: [0-9.]+ s", text, re.MULTILINE)


def test_the_synthetic_folders_differ_by_one_inserted_line(tmp_path):
    compare_bench.write_out(tmp_path / "a", 40, inserted=False)
    compare_bench.write_out(tmp_path / "b", 40, inserted=True)
    done = spyre_provenance.compare(tmp_path / "a", tmp_path / "b")  # the public API's door to compare_folders
    assert done.counts == {"changed": 0, "only_a": 0, "only_b": 1, "regrouped": 0, "same": 40}
    (inserted,) = [p for p in done.lines if p.status == "only_b"]
    assert (
        inserted.b is not None
        and inserted.b.line == 11
        and inserted.b.opspecs == ["batchmatmul [8, 64, 64]", "add [8, 64]"]
    )
    moved = [p for p in done.lines if p.status == "same" and p.a is not None and p.a.line > 10]
    assert len(moved) == 39 and all(p.b is not None and p.b.line == p.a.line + 1 for p in moved)
