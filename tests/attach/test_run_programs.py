"""Any program, unmodified (issue 45): a transformers training script, a ``multiprocessing``
spawn worker and a program switched on by the environment alone, each run once here, and
read by many tests the way a user reads them: the screen, the folders, ``validate``,
``open``, ``view``, ``lookup``, the user's own TORCH_TRACE folder.

Programs: ``tests/attach/programs/``. Compiles: 3 tracked + 1 untracked (the same program
without the variable: tracking never changes what it computes).
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.fresh_process import environment
from helpers.run_program import PROGRAMS, Ran, cli, leftovers, needs_startup_hook, run_program
from spyre_provenance.logs import tlparse_render
from spyre_provenance.logs.graphs import read_log_graphs
from spyre_provenance.model import folders
from spyre_provenance.model.layout import Layout

pytestmark = [pytest.mark.compile, needs_startup_hook]
needs_tlparse = pytest.mark.skipif(tlparse_render.tlparse_binary() is None, reason="tlparse is not installed")


@pytest.fixture(scope="session")
def transformers_run(tmp_path_factory) -> Ran:
    pytest.importorskip("transformers")
    return run_program(tmp_path_factory.mktemp("hf") / "run", "python", PROGRAMS / "tiny_train.py")


@pytest.fixture(scope="session")
def spawn_run(tmp_path_factory) -> Ran:
    return run_program(tmp_path_factory.mktemp("spawn") / "run", "python", PROGRAMS / "spawn_workers.py")


class EnvOnly:
    """``plain.py`` run with the variable alone (and the user's own TORCH_TRACE,
    INDUCTOR_PROVENANCE, TORCH_LOGS and TORCH_DEVICE_BACKEND_AUTOLOAD=0), and again without
    the variable; plus two processes that compile nothing."""

    def __init__(self, root: Path) -> None:
        self.out, self.user_trace, self.plain_trace = root / "out", root / "user-trace", root / "plain-trace"
        self.ended = root / "ended"  # where run would hear which processes ended (early_end)
        self.ended.mkdir()
        user = {"INDUCTOR_PROVENANCE": "1", "TORCH_LOGS": "graph_breaks", "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}
        ours = {"SPYRE_PROVENANCE_OUT": str(self.out), "SPYRE_PROVENANCE_ENDED": str(self.ended)}
        self.tracked = self._python(PROGRAMS / "plain.py", {**user, **ours, "TORCH_TRACE": str(self.user_trace)})
        self.untracked = self._python(PROGRAMS / "plain.py", {**user, "TORCH_TRACE": str(self.plain_trace)})
        self.torch_free = self._python(
            "-c",
            {"SPYRE_PROVENANCE_OUT": str(self.out)},
            "import sys; print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'msgspec')))",
        )
        self.idle = self._python("-c", ours, "import torch; print(torch.ones(2).sum().item())")

    @staticmethod
    def _python(program: object, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, str(program), *args], capture_output=True, text=True, env=environment(env), timeout=900
        )


@pytest.fixture(scope="session")
def env_only(tmp_path_factory) -> EnvOnly:
    return EnvOnly(tmp_path_factory.mktemp("env-only"))


# --- a transformers training script -------------------------------------------------------------


def test_the_program_keeps_its_stdout_and_run_its_exit_status(transformers_run):
    assert transformers_run.returncode == 0, transformers_run.stderr[-3000:]
    (line,) = transformers_run.stdout.splitlines()  # the program's own output, nothing of ours
    assert line.startswith("loss ")


def test_one_folder_for_the_one_process_named_after_the_script(transformers_run):
    (folder,) = transformers_run.folders()
    process = folders.process_of_folder(folder.name)
    assert process is not None and process.program == "tiny-train" and process.rank is None


def test_forward_and_backward_are_recorded_whole(transformers_run):
    (folder,) = transformers_run.folders()
    graphs = read_log_graphs(folder / "trace" / "tiny-train.log")
    assert [g.diagnostics["graph"] for g in graphs] == ["forward", "backward"]
    assert all(g.node_mappings and g.node_mappings["cppCodeToPost"] for g in graphs)
    assert sorted(p.name.rsplit("_", 1)[-1] for p in folder.glob("graph_*")) == ["backward", "forward"]
    assert leftovers(folder) == []


def test_the_screen_counts_what_the_artifacts_hold(transformers_run):
    from spyre_provenance.validate import coverage

    (folder,) = transformers_run.folders()
    graphs = read_log_graphs(folder / "trace" / "tiny-train.log")
    verdicts = [coverage.judge_logged(g) for g in graphs]
    linked = sum(v.counts.linked_call_sites for v in verdicts)
    sites = sum(v.counts.call_sites for v in verdicts)
    verdict = "complete" if all(v.complete for v in verdicts) else "partial"
    assert (
        f"{folder.name}  2 graph(s), {linked}/{sites} kernel call site(s) linked: {verdict}" in transformers_run.stderr
    )
    assert sites > 10


def test_validate_takes_the_whole_run(transformers_run):
    done = cli("validate", transformers_run.out)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr
    assert "INVALID" not in done.stdout
    assert f"  {transformers_run.folders()[0].name}  2 graph(s)" in done.stdout


@needs_tlparse
def test_validate_says_each_artifact_once(spawn_run):
    """A run folder holds each logged artifact three times: the record in the process's log,
    the graph folder's file, and tlparse's copies (its ``raw.log`` and payload files). One
    line each (issue 55 point 4): the log's record, its file named on the same line; tlparse's
    pages folder is not searched."""
    assert spawn_run.returncode == 0, spawn_run.stderr[-3000:]
    assert (spawn_run.out / "tlparse").is_dir()
    done = cli("validate", spawn_run.out, "--format", "json")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr
    results = json.loads(done.stdout)
    assert not [r for r in results if "/tlparse/" in r["path"]]
    said = [r["path"] for r in results] + [c for r in results for c in r["copies"]]
    graph_files = sorted(str(p) for folder in spawn_run.folders() for p in folder.glob("graph_*/*.json"))
    assert sorted(p for p in said if "/graph_" in p) == graph_files  # each file once, alone or as a copy
    keys = [(r["path"], r["compile_id"], r["artifact"]) for r in results]
    assert len(keys) == len(set(keys))
    graphs = sum(len(list(folder.glob("graph_*"))) for folder in spawn_run.folders())
    assert graphs == 2 and len(results) == graphs * 4  # 3 logged artifacts and spyre_source_lines each
    text = cli("validate", spawn_run.out)
    assert len([line for line in text.stdout.splitlines() if line.startswith("OK ")]) == graphs * 4, text.stdout


@needs_tlparse
def test_run_writes_the_pages_and_the_viewer(transformers_run):
    (folder,) = transformers_run.folders()
    printed = {
        kind: line.split()[-1]
        for line in transformers_run.stderr.splitlines()
        for kind in ("forward", "backward")
        if line.split()[:3] == [folder.name, "[0/0]", kind]
    }
    assert set(printed) == {"forward", "backward"}  # each graph its own page
    assert all(Path(page).is_file() and str(transformers_run.out / "tlparse") in page for page in printed.values())
    assert (folder / "view.html").is_file()
    assert f"{folder.name} viewer" in transformers_run.stderr


def _copy_without_pages(run: Path, target: Path) -> Path:
    shutil.copytree(run, target, ignore=shutil.ignore_patterns("tlparse", "view.html"))
    return target


@needs_tlparse
def test_the_pages_written_while_tlparse_runs_are_opens_in_opens_order(transformers_run, tmp_path):
    """``run`` writes the viewer pages while tlparse runs: the same pages and lines as
    ``open``'s (``viewer.pages.write`` at once), tlparse's first, the viewer's last."""
    from spyre_provenance.launch import end_report as report
    from spyre_provenance.viewer import pages

    ours, opens = _copy_without_pages(transformers_run.out, tmp_path / "a"), tmp_path / "b"
    _copy_without_pages(transformers_run.out, opens)
    run = Layout(ours)
    lines = report.pages(run.processes(), run.pages_root, [], tlparse_render.tlparse_binary()).lines
    expected = pages.write(opens, opens / "tlparse", tlparse=tlparse_render.tlparse_binary()).labelled
    assert [(label, page.replace(str(ours), "OUT")) for label, page in lines] == [
        (label, page.replace(str(opens), "OUT")) for label, page in expected
    ]
    assert lines[-1][0].endswith(" viewer") and all(Path(page).is_file() for _, page in lines)


def test_a_tlparse_that_fails_still_leaves_the_viewer_pages(transformers_run, tmp_path):
    from spyre_provenance.launch import end_report as report

    out = _copy_without_pages(transformers_run.out, tmp_path / "run")
    broken = tmp_path / "tlparse"  # a stand-in for a tlparse that cannot read the log
    broken.write_text("#!/bin/sh\necho 'cannot parse' >&2\nexit 3\n")
    broken.chmod(0o755)
    (folder,) = [layout.out for _, layout in Layout(out).processes()]
    written = report.pages(Layout(out).processes(), Layout(out).pages_root, [], str(broken))
    assert written.lines == [(f"{folder.name} viewer", str(folder / "view.html"))]
    assert (folder / "view.html").is_file() and not (out / "tlparse" / folder.name / "index.html").exists()
    (line,) = written.problems
    assert line.startswith("  tlparse pages: NOT WRITTEN: ")
    assert "NOT WRITTEN" in line and "exit 3" in line and "cannot parse" in line


def test_lookup_finds_a_kernel_of_the_run_in_the_whole_run(transformers_run):
    (folder,) = transformers_run.folders()
    graph = read_log_graphs(folder / "trace" / "tiny-train.log")[0]
    kernel = next(k.split(":")[0] for k in graph.node_mappings["cppCodeToPost"] if k.startswith("cpp_"))
    done = cli("lookup", kernel, "--from", transformers_run.out, "--format", "json")
    assert done.returncode == 0, done.stderr
    ((answer,),) = [a["matches"] for a in json.loads(done.stdout)["answers"]]
    assert (answer["model"], answer["compile_id"], answer["graph"]) == ("tiny-train", "0/0", "forward")
    assert folder.name in answer["origin"]
    assert any(line["file"].endswith("modeling_llama.py") for site in answer["call_sites"] for line in site["source"])


# --- a multiprocessing spawn worker ---------------------------------------------------------


def test_a_spawned_worker_that_compiles_gets_its_own_folder_and_one_that_does_not_none(spawn_run):
    assert spawn_run.returncode == 0, spawn_run.stderr[-3000:]
    found = spawn_run.folders()
    assert len(found) == 2  # main and the compiling worker; the idle worker compiled nothing
    processes = [folders.process_of_folder(f.name) for f in found]
    assert {p.program for p in processes if p} == {"spawn-workers"}
    assert len({p.pid for p in processes if p}) == 2
    ops = set()
    for folder in found:
        (graph,) = read_log_graphs(next((folder / "trace").glob("*.log")))
        ops |= {op for op in ("sin", "cos") if op in graph.output_code}
    assert ops == {"sin", "cos"}
    # the program's own output (float32): 4 (sin 1 + 1), 4 * 3 cos 1, 4
    printed = [line.split() for line in spawn_run.stdout.splitlines()]
    assert [who for who, _ in printed] == ["main", "worker", "worker"]
    assert [float(value) for _, value in printed] == pytest.approx([4 * (math.sin(1) + 1), 12 * math.cos(1), 4.0])


# --- switched on by the environment alone ---------------------------------------------------------


def test_the_environment_alone_switches_it_on_without_torch_autoload(env_only):
    assert env_only.tracked.returncode == 0, env_only.tracked.stderr[-3000:]
    (folder,) = list(env_only.out.iterdir())
    assert folders.process_of_folder(folder.name).program == "plain"
    done = cli("validate", env_only.out)
    assert done.returncode == 0 and "1 graph(s)" in done.stdout and ": complete" in done.stdout


def test_tracking_changes_nothing_the_program_computes_or_set(env_only):
    assert env_only.untracked.returncode == 0, env_only.untracked.stderr[-3000:]
    tracked = env_only.tracked.stdout.replace(str(env_only.user_trace), "TRACE")
    untracked = env_only.untracked.stdout.replace(str(env_only.plain_trace), "TRACE")
    assert tracked == untracked
    assert "INDUCTOR_PROVENANCE 1" in tracked and "TORCH_DEVICE_BACKEND_AUTOLOAD 0" in tracked
    assert "graph_breaks logged True" in tracked  # TORCH_LOGS=graph_breaks, as torch set it


def test_a_tracked_process_checks_what_it_writes_without_jsonschema(env_only):
    """The hook checks each artifact on the fast engine, the source-lines snapshot too: the
    program's process never pays for importing jsonschema (0.1 s)."""
    assert env_only.tracked.returncode == 0, env_only.tracked.stderr[-3000:]
    (graph,) = env_only.out.glob("*/graph_*")
    assert (graph / "spyre_source_lines.json").is_file()  # the snapshot was checked and written
    assert "jsonschema imported False" in env_only.tracked.stdout.splitlines()


@needs_tlparse
def test_the_users_torch_trace_gets_the_whole_log_with_the_artifacts(env_only, tmp_path):
    (log,) = env_only.user_trace.glob("*.log")
    (graph,) = read_log_graphs(log)
    assert graph.diagnostics is not None and graph.diagnostics["coverage"]["call_sites"] > 0
    (ours,) = env_only.out.glob("*/trace/plain.log")
    (own,) = read_log_graphs(ours)
    assert own.node_mappings == graph.node_mappings and own.output_code == graph.output_code
    pages = tlparse_render.render_pages(tlparse_render.tlparse_binary(), log, tmp_path / "pages")
    assert [p.has_mapping for p in pages] == [True]


def test_a_process_that_compiles_nothing_leaves_nothing(env_only):
    assert env_only.torch_free.returncode == 0 and env_only.torch_free.stdout.strip() == "[]"
    assert env_only.idle.returncode == 0, env_only.idle.stderr[-2000:]
    assert len(list(env_only.out.iterdir())) == 1  # plain.py's folder alone
    # ... and says nothing to run; the process that compiled says it ended, by its folder's name
    assert [p.name for p in env_only.ended.iterdir()] == [p.name for p in env_only.out.iterdir()]


@needs_tlparse
def test_runs_early_end_is_what_the_end_makes_and_is_dropped_when_the_folder_changes(env_only, tmp_path):
    """What ``run`` makes of a process that said it ended (early_end) equals what its end makes
    of the same folder; a folder that changed afterwards has its early end dropped."""
    from spyre_provenance.launch import run_summary
    from spyre_provenance.launch.early_end import EarlyEnd
    from spyre_provenance.viewer import pages

    out = tmp_path / "run"
    shutil.copytree(env_only.out, out)
    (name,) = [p.name for p in env_only.ended.iterdir()]
    tlparse = tlparse_render.tlparse_binary()
    assert tlparse is not None
    for changed in (False, True):
        early = EarlyEnd(Layout(out), pages=True, tlparse=tlparse)
        try:
            early.poll()
            assert early.ended() == {}  # nothing said yet
            (early.markers / name).touch()
            early.poll()
            if changed:  # a record after the word: the log grew
                (log,) = out.glob("*/trace/*.log")
                with log.open("a") as f:
                    f.write("\n")
            ended = early.ended()
        finally:
            early.close()
        assert not early.markers.exists()
        if changed:
            assert ended == {}
            continue
        ((got_name, got),) = ended.items()
        assert got_name == name
        ((process, layout),) = Layout(out).processes()
        assert got.summary == run_summary.summarize_process(process, layout)
        assert got.summary.graphs >= 1 and got.pages
        assert [("x", got.viewer)] == [("x", page) for _, page in pages.write(out, out, tlparse=None).viewers]
        lines = pages.write(out, Layout(out).pages_root, tlparse=tlparse, viewer=False).labelled
        assert [str(page.page) for page in got.pages] == [where.split("  (")[0] for _, where in lines]


def test_the_variable_set_imports_no_torch_and_unset_not_even_the_package():
    code = "import sys; print(sorted(m for m in sys.modules if m.startswith(('spyre_provenance', 'torch'))))"
    unset = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=environment())
    assert json.loads(unset.stdout.replace("'", '"')) == []
    found = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=environment({"SPYRE_PROVENANCE_OUT": "x"})
    )
    loaded = json.loads(found.stdout.replace("'", '"'))
    # the start-up hook's own module, and nothing of the package a pytest11 plugin's rewrite wants
    assert loaded == ["spyre_provenance_startup"]


def test_a_program_that_tracks_itself_wins(tmp_path):
    """``compile`` (tracking of its own: ``enable``) in a process switched on from outside:
    the attached session steps aside; the compile's output is whole, the run's folder empty."""
    out, own = tmp_path / "run", tmp_path / "own"
    done = subprocess.run(
        [sys.executable, "-m", "spyre_provenance", "compile", "mlp", "--out", str(own), "--no-tlparse"],
        capture_output=True,
        text=True,
        env=environment({"SPYRE_PROVENANCE_OUT": str(out)}),
        timeout=900,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert [p.name for p in own.glob("graph_*")] == ["graph_mlp_00_0-0_inference"]
    assert not out.exists() or list(out.iterdir()) == []
