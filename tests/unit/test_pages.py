"""The one page writer (``viewer.pages.write``) answers in typed results: a page's path, or
why none was written; tlparse's failure is a result too, or refused before any viewer page
is written (``open``'s way). tlparse here is a stand-in program that fails as a real one
does on a log it cannot read."""

from __future__ import annotations

from pathlib import Path

import pytest

from spyre_provenance.base.errors import UnusableInput
from spyre_provenance.viewer import pages


@pytest.fixture
def failing_tlparse(tmp_path: Path) -> str:
    stand_in = tmp_path / "tlparse"
    stand_in.write_text("#!/bin/sh\necho 'cannot parse' >&2\nexit 3\n")
    stand_in.chmod(0o755)
    return str(stand_in)


def test_a_folder_without_graphs_gets_the_reason_its_viewer_page_was_not_written(tmp_path: Path) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    written = pages.write(folder, folder / "tlparse", tlparse=None)
    assert written.viewer is not None and written.viewer.path is None
    assert written.viewer.problem is not None and written.viewer.problem.startswith(f"{folder}: ")
    assert written.viewer.shown == f"NOT WRITTEN: {written.viewer.problem}"
    assert written.labelled == [("viewer", written.viewer.shown)]
    assert (written.graphs, written.landings, written.tlparse_problem) == ([], [], None)
    assert not (folder / "view.html").exists()


def test_tlparse_failing_is_a_result_where_and_why(tmp_path: Path, failing_tlparse: str) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "model.log").touch()
    written = pages.write(folder, folder / "tlparse", tlparse=failing_tlparse, viewer=False)
    assert written.tlparse_problem is not None
    assert written.tlparse_problem.location == str(folder / "model.log")
    assert "exit 3" in written.tlparse_problem.what and "cannot parse" in written.tlparse_problem.what
    assert written.graphs == [] and written.viewers == []


def test_refused_tlparse_failure_raises_before_the_viewer_page(tmp_path: Path, failing_tlparse: str) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "model.log").touch()
    with pytest.raises(UnusableInput, match="cannot parse"):
        pages.write(folder, folder / "tlparse", tlparse=failing_tlparse, refuse=True)
    assert sorted(p.name for p in folder.iterdir()) == ["model.log"]


def test_a_compile_folder_named_trace_keeps_its_own_viewer_page(tmp_path) -> None:
    """``open`` on a compile folder's ``trace/`` writes the viewer page beside the compile
    folder; a compile folder the user named ``trace`` (``compile --out runs/trace``) holds
    graph folders and is its own (the page once went to ``runs/``)."""
    from spyre_provenance.viewer.pages import viewer_folder

    named_trace = tmp_path / "runs" / "trace"
    (named_trace / "graph_mlp_00_0-0_inference").mkdir(parents=True)
    (named_trace / "trace").mkdir()
    assert viewer_folder(named_trace) == named_trace
    assert viewer_folder(named_trace / "trace") == named_trace
