"""``run``'s screen for processes whose compiles went to a backend tracking does not record
(issue 55 point 5), from counts alone (``validate.run_summary.render``); the real runs are
``tests/attach/test_run_backends.py``."""

from __future__ import annotations

from pathlib import Path

from spyre_provenance.model.folders import ProcessFolder
from spyre_provenance.validate.run_summary import RECORDED, ProcessSummary, render


def test_no_process_recorded_names_the_backends_used_instead(tmp_path: Path) -> None:
    other = {"b_pid2": ["my_backend"], "a_pid1": ["aot_eager"]}
    (line,) = render([], tmp_path / "gone", other)
    assert line == (
        f"spyre-provenance run: nothing recorded: {RECORDED}; this run compiled with aot_eager and"
        f" my_backend instead (a_pid1, b_pid2); no folder left at {tmp_path / 'gone'}"
    )
    (line,) = render([], tmp_path, {})
    assert line == f"spyre-provenance run: no process compiled anything tracking could record; nothing in {tmp_path}"


def test_some_processes_recorded_and_others_not(tmp_path: Path) -> None:
    summary = ProcessSummary(ProcessFolder("train", None, None, 7), tmp_path / "train_pid7", graphs=1)
    summary.complete_graphs = summary.call_sites = summary.linked_call_sites = 1
    other = {f"w_pid{n}": ["aot_eager"] for n in range(10, 15)}
    lines = render([summary], tmp_path, other)
    assert lines[:2] == [
        f"spyre-provenance run: 1 process(es) compiled, in {tmp_path}",
        f"  not recorded: w_pid10, w_pid11, w_pid12 and 2 more compiled with aot_eager only; {RECORDED}",
    ]
    assert lines[2].split() == [
        "train_pid7",
        "1",
        "graph(s),",
        "1/1",
        "kernel",
        "call",
        "site(s)",
        "linked:",
        "complete",
    ]
