"""The folder of a tracked process (``spyre-provenance run``, ``SPYRE_PROVENANCE_OUT``):
named so a person tells processes apart (program, torchrun's ranks, pid), read back by
every reader of a run folder (``model.folders``, ``Layout.processes``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from spyre_provenance.model import folders
from spyre_provenance.model.layout import Layout


@pytest.mark.parametrize(
    ("argv", "orig_argv", "program"),
    [
        (["train.py", "--lr", "1"], ["python", "train.py", "--lr", "1"], "train"),
        (["/jobs/fine tune.py"], ["python3", "-u", "/jobs/fine tune.py"], "fine-tune"),
        (
            ["/v/lib/torch/distributed/run.py", "x.py"],
            ["python", "-m", "torch.distributed.run", "x.py"],
            "torch.distributed.run",
        ),
        (["/v/lib/pkg/__main__.py"], ["python", "-X", "importtime", "-mpkg"], "pkg"),
        (
            ["/v/bin/torchrun", "--nproc-per-node", "2", "t.py"],
            ["/v/bin/python", "/v/bin/torchrun", "t.py"],
            "torchrun",
        ),
        (["-c"], ["python", "-c", "import torch"], "python-c"),
        ([""], ["python"], "python"),
        # a spawned worker: started with -c, its argv is its parent's (multiprocessing.spawn)
        (
            ["train.py"],
            ["python", "-c", "from multiprocessing.spawn import spawn_main", "--multiprocessing-fork"],
            "train",
        ),
        # -m after the program is the program's own option
        (["serve.py", "-m", "x"], ["python", "serve.py", "-m", "x"], "serve"),
    ],
)
def test_the_program_is_named_as_a_person_calls_it(argv, orig_argv, program):
    assert folders.program_label(argv, orig_argv) == program


def test_a_process_folder_names_program_ranks_and_pid_and_reads_back():
    ranked = folders.process_folder("train", 4242, {"RANK": "3", "LOCAL_RANK": "1", "WORLD_SIZE": "4"})
    assert ranked.name == "train_rank3_local1_pid4242"
    assert folders.process_of_folder(ranked.name) == ranked
    alone = folders.process_folder("torch.distributed.run", 7, {})
    assert alone.name == "torch.distributed.run_pid7"
    assert folders.process_of_folder(alone.name) == alone


@pytest.mark.parametrize("value", ["", "-1", "one", "١", "99999999999"])
def test_a_rank_that_is_no_rank_is_left_out_never_guessed(value):
    assert folders.process_folder("train", 5, {"RANK": value}).rank is None


@pytest.mark.parametrize(
    "name", ["train_pid0", "train", "train_rank1", "graph_00_0-0_forward", "rank0", "a_b_pid3", "train_pid07", "_pid3"]
)
def test_other_names_are_no_process_folder(name):
    assert folders.process_of_folder(name) is None


def test_layout_lists_the_processes_ranks_first_and_names_their_files(tmp_path: Path):
    for name in ["worker_pid30", "train_rank1_local1_pid20", "train_rank0_local0_pid21", "tlparse", "notes_pid"]:
        (tmp_path / name).mkdir()
    found = Layout(tmp_path).processes()
    assert [p.name for p, _ in found] == ["train_rank0_local0_pid21", "train_rank1_local1_pid20", "worker_pid30"]
    process, layout = found[0]
    assert layout == Layout(tmp_path / process.name, "train")
    assert layout.trace_log == tmp_path / process.name / "trace" / "train.log"


def test_a_second_claim_of_a_name_reads_back_with_its_number():
    again = folders.process_folder("train", 1, {})._replace(claim=2)
    assert again.name == "train_pid1-2"
    assert folders.process_of_folder("train_pid1-2") == again
    assert folders.process_of_folder("train_rank0_local0_pid1-12").claim == 12
    assert folders.process_of_folder("train_pid1").claim == 1


@pytest.mark.parametrize("name", ["train_pid1-1", "train_pid1-0", "train_pid1-02", "train_pid1-", "train_pid1-2-2"])
def test_a_claim_number_is_two_or_more_written_once(name):
    assert folders.process_of_folder(name) is None


def test_a_claimed_folder_is_a_name_nothing_had(tmp_path: Path):
    """Issue 55 point 11: a folder, a file, a link to a folder and a dangling link all keep
    their names; the claim makes the first name that is free, and writes nothing through
    the links."""
    from spyre_provenance.base import files

    theirs = tmp_path / "theirs"
    theirs.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    (out / "a").mkdir()
    (out / "b").write_text("x")
    (out / "c").symlink_to(theirs)
    (out / "d").symlink_to(tmp_path / "nowhere")
    assert files.claim_folder(out, ["a", "b", "c", "d", "e", "f"]) == out / "e"
    assert (out / "e").is_dir() and not (out / "e").is_symlink()
    assert list(theirs.iterdir()) == [] and not (tmp_path / "nowhere").exists()
    with pytest.raises(FileExistsError):
        files.claim_folder(out, ["a", "e"])


def test_the_folders_made_for_out_are_the_ones_that_were_missing(tmp_path: Path):
    from spyre_provenance.base import files

    assert files.make_folders(tmp_path / "x" / "y") == [tmp_path / "x", tmp_path / "x" / "y"]
    assert files.make_folders(tmp_path / "x" / "y") == []


def test_a_link_in_out_is_no_process_folder(tmp_path: Path):
    (tmp_path / "theirs").mkdir()
    (tmp_path / "train_pid1").mkdir()
    (tmp_path / "train_pid1-2").symlink_to(tmp_path / "theirs")
    assert [p.name for p, _ in Layout(tmp_path).processes()] == ["train_pid1"]
