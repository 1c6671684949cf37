"""``annotate --summary``'s default text fits a screen (issue 56 point 3): on a synthetic
summary shaped like FMS's llama ``micro`` (one kernel fused from 30 lines, 50 lines in all),
the text names the heaviest lines and kernels within about 60 lines, one fused kernel does
not fill the table, and ``--all`` (``time_summary.render_text``) still lists every row."""

from __future__ import annotations

import json

from spyre_provenance.runtime import time_screen, time_summary
from spyre_provenance.runtime.time_summary import KernelTime, Row, TimeSummary

GRAPH = "llama 0/0 inference"
FUSED = "sdsc_fused_everything_0:1"
SCREEN = 60


def _row(line: int, kernels: list[KernelTime], phase: str = "forward", total: float = 0.0) -> Row:
    spent = sum(k.total_us for k in kernels)
    return Row(phase, "/src/model.py", line, f"x{line} = f(x)", 4, spent, spent / total, kernels)


def _summary() -> TimeSummary:
    """30 lines fused into one 900 us kernel; 20 more lines with a kernel each (40..21 us),
    the heaviest of them (line 100, 40 us) also launching a per-op mm (39.5 us)."""
    fused = KernelTime("sdsc_fused_everything_0", FUSED, GRAPH, 4, 900.0)
    own = [KernelTime(f"sdsc_own_{i}", f"sdsc_own_{i}:1", GRAPH, 4, 40.0 - i) for i in range(20)]
    per_op = KernelTime("mm", time_summary.PER_OP, "llama per-op compile, 1 graph", 2, 39.5)
    total = 900.0 + sum(k.total_us for k in own) + 39.5
    lines = [_row(line, [fused], total=total) for line in range(10, 40)]
    lines += [_row(100 + i, [k, per_op] if i == 0 else [k], total=total) for i, k in enumerate(own)]
    lines.sort(key=lambda r: (-r.total_us, r.file, r.line))
    modules = [_row(500 + i, [fused], total=total) for i in range(12)]
    return TimeSummary(2, "t.json", time_summary.CPU, 90, 90, total, 0.0, lines, modules)


def test_the_default_text_fits_a_screen_and_names_the_heaviest():
    summary = _summary()
    text = time_screen.render(summary)
    lines = text.splitlines()
    assert len(lines) <= SCREEN, text
    # the fused kernel is one row of lines (30 of them, named by the first few) and one kernel row
    (group,) = [line for line in lines if "30 lines, same kernels: model.py:10, model.py:11, model.py:12 +27" in line]
    assert "900.0 us" in group and "100.0%" not in group
    (kernel,) = [line for line in lines if f"  {FUSED}  ({GRAPH})" in line]
    assert "fused from 30 lines: model.py:10, model.py:11, model.py:12 +27 more" in kernel
    # so the lines with their own kernels are on the screen, the heaviest first, exclusive time apart
    (heaviest,) = [line for line in lines if "/src/model.py:100  x100 = f(x)" in line]
    assert heaviest.split()[1:8] == ["79.5", "us", "79.5", "us", "0.0", "us", "2"]
    assert "/src/model.py:118  x118 = f(x)" in text and "/src/model.py:119" not in text
    assert "  mm  (llama per-op compile, 1 graph)  launched from 1 line: model.py:100" in text
    assert lines[-1] == (
        "not shown: 1 of 50 source lines, 10 of 22 kernels, 4 of 12 module calls;"
        " --all lists every row (--format json and csv always do)"
    )


def test_all_lists_every_row_and_json_every_kernel():
    summary = _summary()
    everything = time_summary.render_text(summary)
    for line in (*range(10, 40), *range(100, 120), *range(500, 512)):
        assert f"/src/model.py:{line}  x{line} = f(x)" in everything
    assert everything.count(FUSED) == 42 and len(everything.splitlines()) > 100
    doc = json.loads(time_summary.render_json(summary))
    assert len(doc["lines"]) == 50 and sum(len(r["kernels"]) for r in doc["lines"]) == 51


def test_the_text_is_the_same_for_the_same_summary_whatever_the_row_order():
    summary = _summary()
    shuffled = time_summary.TimeSummary(
        *[getattr(summary, f) for f in summary.__struct_fields__[:7]],
        list(reversed(summary.lines)),
        list(reversed(summary.modules)),
    )
    assert time_screen.render(shuffled) == time_screen.render(summary)


def test_phases_are_apart_and_the_cap_takes_the_heaviest_of_both():
    summary = _summary()
    back = KernelTime("sdsc_backward_0", "sdsc_backward_0:1", "llama 0/0 backward", 1, 2000.0)
    row = Row("backward", "/src/model.py", 100, "x100 = f(x)", 1, 2000.0, 0.5, [back])
    both = TimeSummary(*[getattr(summary, f) for f in summary.__struct_fields__[:7]], [row, *summary.lines], [])
    lines = time_screen.render(both).splitlines()
    titles = [line for line in lines if line.startswith(("forward,", "backward,"))]
    assert titles == [
        f"forward, {time_screen._LINES[0]}:",
        f"backward, {time_screen._LINES[0]}:",
        f"forward, {time_screen._KERNELS[0]}:",
        f"backward, {time_screen._KERNELS[0]}:",
    ]
    # the backward row took the place of the lightest forward line shown alone
    assert "/src/model.py:117  x117" in "\n".join(lines) and "/src/model.py:118  x118" not in "\n".join(lines)
    assert len(lines) <= SCREEN


def test_the_header_lists_a_few_misnamed_handles_and_counts_the_rest():
    summary = _summary()
    misnamed = [f"{GRAPH}: {FUSED} OpSpec mul -> buf{i}: handle {i} says aten.linear.default" for i in range(10)]
    noted = time_summary.TimeSummary(*[getattr(summary, f) for f in summary.__struct_fields__[:13]], misnamed)
    lines = time_screen.render(noted).splitlines()
    assert [line.strip() for line in lines if "OpSpec mul -> buf" in line] == misnamed[: time_screen.MISNAMED_SHOWN]
    assert f"    ... and {10 - time_screen.MISNAMED_SHOWN} more (--all lists them)" in lines
    assert len(lines) <= SCREEN + 1 + time_screen.MISNAMED_SHOWN  # the header grew by the note and the few listed
    assert sum("OpSpec mul -> buf" in line for line in time_summary.render_text(noted).splitlines()) == 10
