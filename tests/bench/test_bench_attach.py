"""The quick form of ``make bench`` section 10 (``bench.attach_overhead``): the start-up rows
measure real fresh processes and leave nothing behind; the section renders its verdicts and
says where the run row's extra time goes."""

from __future__ import annotations

from pathlib import Path

from bench import attach_overhead
from bench.attach_overhead import AttachResults, RunMeasure


def test_startup_pairs_are_measured_side_by_side_and_leave_no_folder():
    gaps = attach_overhead.startup(2)  # asserts itself that the torch-free processes wrote nothing
    assert len(gaps) == 2 and all(isinstance(gap, float) for gap in gaps)


def _results(plain: list[float], run: list[float]) -> AttachResults:
    runs = {
        "plain": [RunMeasure(w, w / 2) for w in plain],
        "trace": [RunMeasure(w + 0.5, w / 2 + 0.5, logging=0.4) for w in plain],
        "upstream": [RunMeasure(w + 0.25, w / 2 + 0.25) for w in plain],
        "env": [RunMeasure(w + 1.0, w / 2 + 0.5, logging=0.3) for w in plain],
        "run": [RunMeasure(w, w / 2 + 0.75) for w in run],
    }
    return AttachResults([3.0, 4.0, 5.0], runs)


def test_the_section_says_over_when_a_target_is_missed():
    text = attach_overhead.render_section(_results([10.0, 10.0], [10.05, 12.0]), 10)
    assert "+4.00 ms" in text and "| ok |" in text
    assert "1.103x (1.005-1.200)" in text and "| OVER |" in text


def test_the_breakdown_is_the_arms_differences_round_by_round():
    text = attach_overhead.render_section(_results([10.0, 20.0], [12.0, 22.0]), 10)
    assert "(upstream - plain): +0.25 s wall, +0.25 s CPU" in text
    assert "(env - upstream): +0.75 s wall, +0.25 s CPU; torch counts 0.30 s" in text
    assert "(run - env): +1.00 s wall, +1.25 s CPU" in text
    assert "(trace - plain): +0.50 s wall, +0.50 s CPU; torch counts 0.40 s" in text
    assert "(run - trace): +1.50 s wall, +1.25 s CPU" in text


def test_two_arms_give_the_ratio_alone():
    results = _results([10.0, 20.0], [12.0, 22.0])
    results.runs = {arm: results.runs[arm] for arm in ("plain", "run")}
    text = attach_overhead.render_section(results, 10)
    assert "1.150x" in text and "Where it goes" not in text


def test_the_logging_overhead_is_read_from_the_processes_logs(tmp_path: Path):
    log = tmp_path / "prog_pid1" / "trace" / "prog.log"
    log.parent.mkdir(parents=True)
    head = "V1206 10:00:00.000000 1 torch/_dynamo/utils.py:1] "
    log.write_text(
        f'{head}{{"compilation_metrics": {{"structured_logging_overhead_us": 1500000}}}}\n'
        f'{head}{{"bwd_compilation_metrics": {{"structured_logging_overhead_us": 250000}}}}\n'
        f'{head}{{"artifact": {{"name": "x"}}, "has_payload": "0"}}\n\tcompilation_metrics 99\n'
    )
    assert attach_overhead.logging_overhead(tmp_path) == 1.75
    assert attach_overhead.logging_overhead(tmp_path / "none") == 0.0


def test_arms_that_make_no_named_difference_give_no_breakdown():
    results = _results([10.0, 20.0], [12.0, 22.0])
    results.runs = {arm: results.runs[arm] for arm in ("plain", "run", "env")}
    assert "Where it goes" not in attach_overhead.render_section(results, 10)
