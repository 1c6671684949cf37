"""``compile MODEL --ranks 2`` (issue 14.4): two real processes started by torchrun's
launcher in a gloo group, each its own tracked compile, its own valid artifacts in
``OUT/rank<r>/``; the collectives in the mapping like any call site; validate per rank;
tlparse's multi-rank report; diff and golden rank by rank; a rank killed or failing leaves
the other's artifacts whole; every flag of the command reaches every rank (issue 45.6).

Three 2-rank runs (each 30-45 s here: two fresh interpreters importing torch): the
tensor-parallel toy (shared with the golden test of ``golden/tensor_parallel`` through
``compile_case``), the same model with every flag that once stayed behind (``--profile``,
``--beyond-upstream``, ``--audit --against``; ``tests/data/ranked_arguments.py`` prints the
arguments its rank got), and the data-parallel one with rank 1 killed in the middle of its
compile (``tests/data/ranked_faults.py``: the fault injection stays in test code), whose
rank 0 compiles, writes, and then finds its peer gone.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

import msgspec
import pytest

from helpers import tlparse_page
from helpers.fresh_process import FRESH  # tests/ is on sys.path
from helpers.where import DATA, GOLDEN  # tests/ is on sys.path
from spyre_provenance import golden
from spyre_provenance.compile import process_group, ranks
from spyre_provenance.logs import tlparse_render, tracelog, wrapper_code
from spyre_provenance.logs.graphs import read_log_graphs
from spyre_provenance.model import folders
from spyre_provenance.validate import coverage

ARGUMENTS = DATA / "ranked_arguments.py"
PREVIOUS_AUDIT = DATA / "artifacts" / "provenance_audit.json"
COLLECTIVES = ("torch.ops._c10d_functional.all_reduce_.default", "torch.ops._c10d_functional.wait_tensor.default")
MAPPINGS = "inductor_provenance_tracking_node_mappings.json"
FAULTY = DATA / "ranked_faults.py"

needs_tlparse = pytest.mark.skipif(tlparse_render.tlparse_binary() is None, reason="tlparse is not installed")


@pytest.fixture(scope="session")
def tp_run(compile_case):
    return compile_case("tensor_parallel", "--ranks", "2")


@pytest.fixture(scope="session")
def flagged_run(compile_case):
    """tensor_parallel with the flags ``compile --ranks`` once dropped on the way to its ranks."""
    return compile_case(
        f"{ARGUMENTS}:tensor_parallel",
        "--ranks",
        "2",
        "--profile",
        "--beyond-upstream",
        "--audit",
        "--against",
        str(PREVIOUS_AUDIT),
        "--no-tlparse",
    )


def _faulty_run(
    tmp_path_factory, model: str, how: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    out = tmp_path_factory.mktemp(f"rank1-{how}")
    done = FRESH.run(
        "compile",
        f"{FAULTY}:{model}",
        "--ranks",
        "2",
        "--out",
        out,
        "--no-tlparse",
        env={"SPYRE_TEST_FAIL_RANK": "1", "SPYRE_TEST_FAIL_HOW": how, **(env or {})},
        timeout=600,
    )
    done.out = out  # type: ignore[attr-defined]
    return done


@pytest.fixture(scope="session")
def killed_run(tmp_path_factory):
    """data_parallel with rank 1 killed mid-compile: rank 0's artifacts are all the
    data-parallel model's there are (a healthy run of it costs another 20-35 s)."""
    return _faulty_run(tmp_path_factory, "data_parallel", "kill")


def _rank_dir(out: Path, rank: int) -> Path:
    return out / folders.rank_folder(rank)


def _graph_dir(out: Path, rank: int) -> Path:
    (graph,) = sorted(_rank_dir(out, rank).glob("graph_*"))
    return graph


# --- a healthy run -----------------------------------------------------------------------


@pytest.mark.compile
def test_each_rank_compiles_into_its_own_folder_with_its_own_log(tp_run):
    assert tp_run.returncode == 0, tp_run.stdout + tp_run.stderr[-3000:]
    for rank in (0, 1):
        folder = _rank_dir(tp_run.out, rank)
        assert [p.name for p in folder.glob("graph_*")] == ["graph_tensor-parallel_00_0-0_inference"]
        (log,) = (folder / "trace").glob("*.log")
        assert log.name == "tensor-parallel.log"
        # torch stamps the rank on the records of a process group: this log is this rank's alone
        ranks = {entry.rank for entry in tracelog.read_trace(log) if isinstance(entry, tracelog.TraceEntry)}
        assert ranks == {rank}
        summary = [line for line in tp_run.stdout.splitlines() if line.startswith(f"[rank {rank}] ")]
        assert f"[rank {rank}]   output vs eager: match" in "\n".join(summary)
        assert f"[rank {rank}]   artifacts: 9 validated, all valid" in summary
    assert not tp_run.stderr.strip()


@pytest.mark.compile
@pytest.mark.parametrize("run", ["tp_run", "killed_run"])
def test_collectives_are_call_sites_in_the_mapping_and_coverage_is_complete(run, request):
    compiled = request.getfixturevalue(run)
    ranks = (0, 1) if run == "tp_run" else (0,)  # the killed run's rank 1 wrote nothing
    for rank in ranks:
        (log,) = (_rank_dir(compiled.out, rank) / "trace").glob("*.log")
        assert coverage.check_log(log) == []  # every call site announced, linked; every node reached
        (graph,) = read_log_graphs(log)
        keys = list(graph.node_mappings["cppCodeToPost"])
        assert keys == wrapper_code.handle_comments(graph.output_code)
        for collective in COLLECTIVES:
            (key,) = [k for k in keys if k.rsplit(":", 1)[0] == collective]
            nodes = graph.node_mappings["cppCodeToPost"][key]
            assert nodes and all(graph.node_mappings["postToPre"].get(n) for n in nodes), key
        written = json.loads((_graph_dir(compiled.out, rank) / MAPPINGS).read_text())
        assert written == graph.node_mappings


@pytest.mark.compile
def test_validate_reports_per_rank(tp_run, run_cli, tmp_path):
    code, out, err = run_cli("validate", tp_run.out)
    assert code == 0, out + err
    rank_lines = [line for line in out.splitlines() if line.startswith("rank ")]
    assert [line.split(":")[0] for line in rank_lines] == ["rank 0", "rank 1"]
    assert all(line.endswith("all valid") for line in rank_lines)
    code, out, _ = run_cli("validate", tp_run.out, "--format", "json")
    results = json.loads(out)
    for r in results:
        assert r["rank"] == folders.rank_of_path(Path(r["path"]).parts), r["path"]
    # one rank's broken mapping is that rank's verdict, not the other's
    copy = tmp_path / "run"
    shutil.copytree(tp_run.out, copy, ignore=shutil.ignore_patterns("tlparse"))
    mapping = _graph_dir(copy, 1) / MAPPINGS
    doc = json.loads(mapping.read_text())
    doc["postToPre"]["relu"] = ["not_a_node"]
    mapping.write_text(json.dumps(doc))
    code, out, _ = run_cli("validate", copy)
    assert code == 1
    rank_lines = [line for line in out.splitlines() if line.startswith("rank ")]
    assert rank_lines[0].endswith("all valid") and rank_lines[1].endswith("1 INVALID"), rank_lines


@pytest.mark.compile
@needs_tlparse
def test_open_renders_the_multi_rank_report_and_every_rank_links_every_kernel(tp_run, tmp_path):
    out = tmp_path / "tlparse"
    done = FRESH.run("open", tp_run.out, "--out", out, "--no-browser", timeout=300)
    assert done.returncode == 0, done.stderr
    lines = [line.split("  ") for line in done.stdout.splitlines()]
    assert lines[0][0].strip() == "ranks" and Path(lines[0][-1].strip()) == out / "index.html"
    landing = (out / "index.html").read_text()
    assert 'href="rank_0/index.html"' in landing and 'href="rank_1/index.html"' in landing
    # last, the viewer's one page of every rank's graphs (tests/browser/test_viewer.py)
    assert lines[-1][0].strip() == "viewer" and Path(lines[-1][-1].strip()) == tp_run.out / "view.html"
    assert (tp_run.out / "view.html").is_file()
    pages = {line[0].strip(): Path(line[-1].strip()) for line in lines[1:-1]}
    assert list(pages) == ["rank 0 [0/0] inference", "rank 1 [0/0] inference"]
    for rank, path in enumerate(pages.values()):
        assert path.parent == out / f"rank_{rank}"
        (graph,) = read_log_graphs(next((_rank_dir(tp_run.out, rank) / "trace").glob("*.log")))
        page = tlparse_page.parse_page(path.read_text())
        kernels = tlparse_page.kernel_lines(page)
        assert [k.key for k in kernels] == list(graph.node_mappings["cppCodeToPost"])
        assert {k.key.rsplit(":", 1)[0] for k in kernels} >= set(COLLECTIVES)
        for kernel in kernels:
            assert kernel.post_grad_lines, f"rank {rank}: {kernel.key} links nothing"
            assert set(kernel.post_grad_nodes) <= set(graph.node_mappings["cppCodeToPost"][kernel.key])
    # compile rendered the same report itself
    assert (
        "multi-rank report: " in tp_run.stdout and (tp_run.out / "tlparse" / "tensor-parallel" / "index.html").is_file()
    )


@pytest.mark.compile
def test_diff_pairs_graphs_rank_by_rank(tp_run, run_cli, tmp_path):
    code, out, _ = run_cli("diff", GOLDEN / "tensor_parallel", tp_run.out)  # golden check's pairing
    if golden.read_case(GOLDEN / "tensor_parallel").manifest["torch"] == golden.torch_version():
        assert code == 0, out
    else:  # another torch (make test-torch-next): its own source lines differ, still paired rank by rank
        changes = [line.strip() for line in out.splitlines()[1:] if line.strip()]
        assert all(
            line.startswith(("rank0/graph_00_0-0_inference: ", "rank1/graph_00_0-0_inference: ")) for line in changes
        ), out
    copy = tmp_path / "run"
    shutil.copytree(tp_run.out, copy, ignore=shutil.ignore_patterns("tlparse"))
    mapping = _graph_dir(copy, 1) / MAPPINGS
    mapping.write_text(mapping.read_text().replace('"relu"', '"relu_7"'))
    code, out, _ = run_cli("diff", tp_run.out, copy)
    assert code == 1
    changes = [line.strip() for line in out.splitlines()[1:] if line.strip()]
    assert changes and all(line.startswith("rank1/graph_00_0-0_inference: ") for line in changes), out
    assert "post-grad node renamed: relu -> relu_7" in out


# --- every flag reaches every rank ----------------------------------------------------------


@pytest.mark.compile
def test_every_rank_is_started_with_the_runs_flags(flagged_run):
    """What each rank's process was started with parses back into the parent's request, the
    pages aside (the parent renders all ranks' at once)."""
    from spyre_provenance.cli import build_parser, compile_command

    assert flagged_run.returncode == 0, flagged_run.stdout + flagged_run.stderr[-3000:]
    parent = compile_command.request(
        build_parser().parse_args(
            ["compile", f"{ARGUMENTS}:tensor_parallel", "--ranks", "2", "--profile", "--beyond-upstream"]
            + ["--audit", "--against", str(PREVIOUS_AUDIT), "--out", str(flagged_run.out)]
        )
    )
    for rank in (0, 1):
        (said,) = [line for line in flagged_run.stdout.splitlines() if line.startswith(f"[rank {rank}] arguments: ")]
        arguments = json.loads(said.split("arguments: ", 1)[1])
        got = compile_command.request(build_parser().parse_args(arguments))
        assert got == msgspec.structs.replace(parent, tlparse=False), arguments


@pytest.mark.compile
def test_compile_ranks_profile_writes_each_ranks_annotated_trace(flagged_run):
    for rank in (0, 1):
        (trace,) = (_rank_dir(flagged_run.out, rank) / "profile").glob("*.trace.json")
        events = json.loads(trace.read_text())["traceEvents"]
        annotated = [e for e in events if "spyre_provenance_call_site" in e.get("args", {})]
        assert annotated, f"rank {rank}: no kernel event carries its provenance"
        assert f"[rank {rank}]   profile: annotated " in flagged_run.stdout


@pytest.mark.compile
def test_audit_against_reaches_every_rank(flagged_run):
    for rank in (0, 1):
        markdown = (_rank_dir(flagged_run.out, rank) / "provenance_audit.md").read_text()
        assert f"Against `{PREVIOUS_AUDIT}`." in markdown, f"rank {rank}"


# --- a rank that fails ---------------------------------------------------------------------


@pytest.mark.compile
def test_a_killed_rank_leaves_the_other_ranks_artifacts_whole(killed_run, run_cli):
    out = killed_run.out
    assert killed_run.returncode == 1, killed_run.stdout + killed_run.stderr
    assert killed_run.stderr.splitlines() == [
        f"spyre-provenance compile: error: rank 1 of 2 failed: killed by SIGKILL; artifacts kept: {out / 'rank0'}"
    ]
    # rank 0 compiled before its all_reduce found the peer gone: its artifacts are all there
    stdout = killed_run.stdout
    (reason,) = [line for line in stdout.splitlines() if line.startswith("[rank 0]   output vs eager: ")]
    assert reason.startswith("[rank 0]   output vs eager: NOT CHECKED: the compiled code failed as it ran")
    # gloo words the lost peer by timing ("Connection closed by peer", "... reset by peer"): it
    # is gloo's RuntimeError either way, which is what rank 0 must report
    assert "(RuntimeError: " in reason and "gloo" in reason, reason
    assert "[rank 0]   artifacts: 9 validated, all valid" in stdout
    kept = _graph_dir(out, 0)
    (graph,) = read_log_graphs(next((_rank_dir(out, 0) / "trace").glob("*.log")))
    assert json.loads((kept / MAPPINGS).read_text()) == graph.node_mappings
    diagnostics = json.loads((kept / "spyre_provenance_diagnostics.json").read_text())
    assert diagnostics["complete"] and not diagnostics["partial"]
    code, report, _ = run_cli("validate", out)
    assert code == 0, report
    # each artifact once: the 4 logged ones (their graph folder files named on their lines)
    # and spyre_source_lines, of the 9 files and records compile validated
    assert report.splitlines()[-1] == "rank 0: 5 artifact(s), all valid"
    # the killed rank leaves nothing: not even torch's log under its temporary name
    assert not _rank_dir(out, 1).exists()


@pytest.mark.compile
def test_a_rank_that_fails_on_its_own_is_named_with_its_reason(tmp_path_factory):
    """Rank 1's factory raises (exit 2); rank 0's first collective then finds it gone and
    fails too, at about the moment torchrun stops it: the one line names rank 1, the first."""
    done = _faulty_run(tmp_path_factory, "tensor_parallel", "raise")
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.splitlines() == [
        "spyre-provenance compile: error: rank 1 of 2 failed: exit 2: "
        f"{FAULTY}:tensor_parallel: tensor_parallel() raised RuntimeError: rank 1 was told to fail; "
        "no other rank wrote artifacts"
    ]
    assert "[rank 0] spyre-provenance compile: error: " in done.stdout  # its own reason, printed


@pytest.mark.compile
def test_a_hung_rank_is_killed_by_torchrun_and_named(tmp_path_factory):
    """Rank 1 never finishes loading its model; rank 0's collective gives up after the group's
    timeout (5 s here) and fails; torchrun stops rank 1 (SIGTERM, which a rank ignores) and
    kills it 30 s later: the one line names the rank that hung, not the one that timed out."""
    done = _faulty_run(tmp_path_factory, "tensor_parallel", "hang", {"SPYRE_PROVENANCE_RANK_TIMEOUT": "5"})
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr.splitlines() == [
        "spyre-provenance compile: error: rank 1 of 2 failed: did not finish after another rank failed (stopped); "
        "no other rank wrote artifacts"
    ]
    assert not _rank_dir(done.out, 1).exists()  # it wrote nothing: no folder of its own


# --- without compiling ----------------------------------------------------------------------


def test_rank_folders_are_read_from_paths():
    assert folders.rank_folder(3) == "rank3"
    assert folders.rank_of_path(("out", "rank1", "graph_x")) == 1
    assert folders.rank_of_path(("out", "tlparse", "rank_2", "-_0_0_0")) == 2
    assert folders.rank_of_path(("out", "ranks", "rank01")) is None


@pytest.mark.compile
def test_a_model_that_needs_ranks_is_refused_without_them(compile_case):
    done = compile_case("tensor_parallel", "--no-tlparse")
    assert done.returncode == 2
    assert done.stderr.strip().endswith("tensor_parallel runs on several ranks: compile it with --ranks N (N >= 2)")
    assert list(done.out.iterdir()) == []


def test_failures_torchrun_saw_in_one_second_are_ordered_by_the_moments_the_ranks_noted():
    # rank 0's collective found rank 1 gone; torchrun saw both in one look and recorded rank 0 first
    assert ranks.failure_order([(0, 7), (1, 7)], {0: 7_300, 1: 7_200}) == [1, 0]
    # seconds apart, torchrun's seconds decide, whatever was noted
    assert ranks.failure_order([(0, 7), (1, 8)], {0: 9_000, 1: 1_000}) == [0, 1]
    # a rank that noted nothing (killed: SIGKILL) keeps its place; the others share theirs
    assert ranks.failure_order([(0, 7), (1, 7), (2, 7), (3, 9)], {0: 50, 2: 40, 3: 1}) == [2, 1, 0, 3]
    assert ranks.failure_order([(1, 7)], {}) == [1]


def test_a_rank_notes_when_it_failed_where_its_parent_said(tmp_path, monkeypatch):
    at = tmp_path / "rank1.failed_at"
    monkeypatch.setenv(process_group.ENV_FAILED_AT, str(at))
    before = time.time_ns()
    process_group.note_failure()
    assert before <= int(at.read_text()) <= time.time_ns()
    monkeypatch.setenv(process_group.ENV_FAILED_AT, str(tmp_path / "missing" / "rank1.failed_at"))
    process_group.note_failure()  # a folder gone: the rank's own error is what it reports


def test_a_rank_ends_with_its_code_and_its_output_flushed_without_finalization(tmp_path):
    """What a rank leaves undone at exit (gloo's threads holding a failed collective's work)
    cannot abort it once it has said why it exits: its end skips the interpreter's
    finalization, atexit handlers included, after flushing what it printed."""
    program = (
        "import atexit, sys\n"
        "from spyre_provenance.compile import process_group\n"
        "atexit.register(lambda: print('finalized'))\n"
        "process_group.end(5)\n"  # joined no group: returns
        "print('still here', end='')\n"
        "sys.stderr.write('why')\n"
        "process_group._joined = True\n"
        "process_group.end(2)\n"
    )
    done = FRESH.run(driver=program)
    assert (done.returncode, done.stdout, done.stderr) == (2, "still here", "why")
