"""The quick form of ``make bench`` section 9 (``bench.attach_overhead``): the start-up rows
measure real fresh processes and leave nothing behind; the section renders its verdicts."""

from __future__ import annotations

from bench import attach_overhead


def test_startup_pairs_are_measured_side_by_side_and_leave_no_folder():
    gaps = attach_overhead.startup(2)  # asserts itself that the torch-free processes wrote nothing
    assert len(gaps) == 2 and all(isinstance(gap, float) for gap in gaps)


def test_the_section_says_over_when_a_target_is_missed():
    results = attach_overhead.AttachResults([3.0, 4.0, 5.0], [1.005, 1.2], [(10.05, 10.0), (12.0, 10.0)])
    text = attach_overhead.render_section(results, 9)
    assert "+4.00 ms" in text and "| ok |" in text
    assert "1.103x" in text and "| OVER |" in text
