"""``run``'s screen for processes whose compiles went to a backend tracking does not record
(issue 55 point 5), from counts alone (``launch.run_summary.render``); the real runs are
``tests/attach/test_run_backends.py``."""

from __future__ import annotations

from pathlib import Path

from spyre_provenance.launch.run_summary import RECORDED, ProcessSummary, render
from spyre_provenance.model.folders import ProcessFolder


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


def test_a_graph_the_hook_never_saw_is_not_recorded_not_unfinished(tmp_path: Path) -> None:
    """A finished graph without the hook's diagnostics (issue 55 point 1: a program switched
    provenance off around it) is partial and said so; unfinished is only a compile that
    never ended."""
    summary = ProcessSummary(ProcessFolder("toggles", None, None, 3), tmp_path / "toggles_pid3", graphs=1)
    summary.complete_graphs = summary.call_sites = summary.linked_call_sites = 1
    summary.unrecorded = ["[1/0]"]
    assert summary.word == "partial"
    assert summary.verdict.reasons == ("compile [1/0] NOT RECORDED: compiled, but the hook saw none of it",)
    assert summary.verdict.exit_code == 1  # found wanting, as the compile judge says it
    lines = render([summary], tmp_path, {})
    assert "    compile [1/0] NOT RECORDED: compiled, but the hook saw none of it" in lines
    assert not any("UNFINISHED" in line for line in lines)


def test_the_screen_says_how_many_graphs_came_from_inductors_cache(tmp_path: Path) -> None:
    summary = ProcessSummary(ProcessFolder("serve", None, None, 4), tmp_path / "serve_pid4", graphs=2)
    summary.complete_graphs, summary.call_sites, summary.linked_call_sites = 1, 2, 2
    summary.cached = {"[0/0]": "cached", "[1/0]": "cached without provenance"}
    lines = render([summary], tmp_path, {})
    assert any("serve_pid4  2 graph(s) (2 from Inductor's cache), 2/2 kernel call site(s)" in line for line in lines)
    assert "    compile [1/0] CACHED WITHOUT PROVENANCE: its Inductor cache entry held none" in lines
