"""Crash safety: SIGKILL in the middle of artifact writing and of ``golden update``.

After every kill each file is byte-identical to a complete version (the previous one or the
complete new one), never torn, and every artifact is valid; the next run of the writer
leaves no temporary file behind (writers clear dead writers' temporaries when they start,
``support.remove_stale_temporaries``, while a live writer's temporaries are left alone).
"""

from __future__ import annotations

import inspect
import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from helpers.vanishing import remove_after_listing  # tests/ is on sys.path
from helpers.where import REPO
from spyre_provenance.base import files
from spyre_provenance.model.names import KERNEL_STACK_TRACES, NODE_MAPPINGS
from spyre_provenance.validate import schemas

ENV = {**os.environ, "PYTHONPATH": str(REPO / "src")}
KILLS = 24  # random-moment kills of the artifact writer
SEED = int(os.environ.get("SPYRE_PROVENANCE_CRASH_SEED", "8"))


def artifact_versions(version: int, kernels: int = 12_000) -> dict[str, bytes]:
    """Two large, valid artifacts; version 0 and 1 differ in every kernel name."""
    post = {f"node_{i}": [f"v{version}_kernel_{i}:{i + 1}"] for i in range(kernels)}
    mapping = {
        "preToPost": {f"pre_{i}": [f"node_{i}"] for i in range(kernels)},
        "postToPre": {f"node_{i}": [f"pre_{i}"] for i in range(kernels)},
        "cppCodeToPost": {f"v{version}_kernel_{i}:{i + 1}": [f"node_{i}"] for i in range(kernels)},
        "postToCppCode": post,
        "version": 2.0,
    }
    traces = {
        f"v{version}_kernel_{i}:{i + 1}": [f'File "/home/user/model.py", line {i}, in forward'] for i in range(kernels)
    }
    return {
        f"{NODE_MAPPINGS}.json": json.dumps(mapping).encode(),
        f"{KERNEL_STACK_TRACES}.json": json.dumps(traces).encode(),
    }


WRITER = (
    "import json, sys\n"
    "from pathlib import Path\n"
    "from spyre_provenance.base import files as support\n"
    "from spyre_provenance.model.names import KERNEL_STACK_TRACES, NODE_MAPPINGS\n"
    + inspect.getsource(artifact_versions)
    + textwrap.dedent(
        """
        folder, mode = Path(sys.argv[1]), sys.argv[2]
        support.remove_stale_temporaries(folder)  # what every writer does first
        versions = [artifact_versions(0), artifact_versions(1)]
        round = 0
        while True:
            for name, data in versions[round % 2].items():
                support.atomic_write_bytes(folder / name, data)
            if round == 0:
                print("ready", flush=True)
                if mode == "once":
                    break
            round += 1
        """
    )
)


def temporaries(folder: Path) -> list[Path]:
    return sorted(folder.rglob(f"{files.TMP_PREFIX}*"))


def test_sigkill_while_writing_artifacts_never_tears_a_file(tmp_path: Path) -> None:
    versions = [artifact_versions(0), artifact_versions(1)]
    folder = tmp_path / "graph_mlp_00_0-0_inference"
    rng = random.Random(SEED)
    mid_write = 0
    for kill in range(KILLS):
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(folder), "loop"], stdout=subprocess.PIPE, env=ENV)
        assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
        time.sleep(rng.uniform(0.0, 0.2))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
        assert proc.returncode == -signal.SIGKILL
        for name in versions[0]:
            data = (folder / name).read_bytes()
            assert data in (versions[0][name], versions[1][name]), f"kill {kill}: {name} is torn ({len(data)} bytes)"
        mid_write += bool(temporaries(folder))  # killed between a temporary's creation and its rename
    assert mid_write >= KILLS // 4, f"only {mid_write} of {KILLS} kills hit a write in flight"
    for name in versions[0]:  # the artifacts of the last kill are valid, too
        assert schemas.validate_bytes((folder / name).read_bytes(), full=False).ok

    # the next run clears the dead writers' temporaries, and completes
    done = subprocess.run([sys.executable, "-c", WRITER, str(folder), "once"], capture_output=True, env=ENV)
    assert done.returncode == 0, done.stderr
    assert temporaries(folder) == []
    assert {name: (folder / name).read_bytes() for name in versions[0]} == versions[0]
    print(f"{KILLS} kills survived ({mid_write} in the middle of a write), seed {SEED}")


def test_cleanup_spares_a_live_writers_temporaries(tmp_path: Path) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f"{files.TMP_PREFIX}{dead.pid}-abc.part"
    old_style = tmp_path / "sub" / f"{files.TMP_PREFIX}xyz.part"
    live = tmp_path / f"{files.TMP_PREFIX}{os.getppid()}-def.part"  # pytest's parent: alive
    mine = tmp_path / "sub" / f"{files.TMP_PREFIX}{os.getpid()}-ghi.part"
    other = tmp_path / "keep.json"
    for path in (stale, old_style, live, mine, other):
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(b"x")
    assert files.remove_stale_temporaries(tmp_path, recursive=False) == 1
    assert not stale.exists() and old_style.exists()
    assert files.remove_stale_temporaries(tmp_path) == 1
    assert not old_style.exists()
    assert live.exists() and mine.exists() and other.exists()


def test_cleanup_passes_over_a_folder_another_process_removes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Two compiles into one --out: one sweeps the whole folder for dead writers' temporaries
    # while the other replaces its own model's output (sdsc/<model>). Here the folder goes
    # right after its parent was listed, the window the CI run hit (FileNotFoundError).
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    going = tmp_path / "sdsc" / "mlp" / "inductor-spyre"
    going.mkdir(parents=True)
    (going / "sdsc_0.json").write_bytes(b"{}")
    stale = tmp_path / "sdsc" / "residual" / f"{files.TMP_PREFIX}{dead.pid}-abc.part"
    stale.parent.mkdir()
    stale.write_bytes(b"x")
    remove_after_listing(monkeypatch, tmp_path / "sdsc", tmp_path / "sdsc" / "mlp")
    assert files.remove_stale_temporaries(tmp_path) == 1
    assert not stale.exists() and not going.exists()


def test_emit_clears_dead_writers_temporaries_before_writing(tmp_path: Path) -> None:
    from spyre_provenance.capture import emit
    from spyre_provenance.model.layout import Layout
    from spyre_provenance.model.records import GraphDiagnostics, GraphResult

    result = GraphResult(
        index=0,
        compile_id="0/0",
        kind="inference",
        records=[],
        node_mappings=None,
        stack_traces={"k:1": []},
        opspec_handles=None,
        upstream_node_mappings=None,
        diagnostics=GraphDiagnostics(),
        label="mlp",
    )
    folder = tmp_path / emit.graph_folder_name(result)
    folder.mkdir()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = folder / f"{files.TMP_PREFIX}{dead.pid}-x.part"
    stale.write_bytes(b"half an artifact")
    emit.write_files(emit.artifact_files(result), emit.graph_folders(result, None, Layout(tmp_path, result.label)))
    assert sorted(p.name for p in folder.iterdir()) == [f"{KERNEL_STACK_TRACES}.json"]


def test_compile_prepare_removes_only_this_models_output(tmp_path: Path) -> None:
    from spyre_provenance.compile import out_folder
    from spyre_provenance.model.layout import Layout

    out = tmp_path / "out"
    mine = [out / "graph_mlp_00_0-0_inference", out / "sdsc" / "mlp", out / "tlparse" / "mlp"]
    theirs = [
        out / "graph_residual_00_0-0_inference",
        out / "graph_mlp-big_00_0-0_inference",
        out / "sdsc" / "residual",
        out / "tlparse" / "residual",
    ]
    for folder in mine + theirs:
        folder.mkdir(parents=True)
        (folder / "a.json").write_text("{}")
    (out / "trace").mkdir()
    for log in ("mlp.log", "residual.log", "dedicated_log_torch_trace_abc.log"):
        (out / "trace" / log).write_text("V")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = out / "graph_residual_00_0-0_inference" / f"{files.TMP_PREFIX}{dead.pid}-x.part"
    live = out / "graph_residual_00_0-0_inference" / f"{files.TMP_PREFIX}{os.getppid()}-x.part"
    stale.write_bytes(b"x")
    live.write_bytes(b"x")

    out_folder.prepare(Layout(out, "mlp"), "mlp")
    assert not any(folder.exists() for folder in mine)
    assert all((folder / "a.json").is_file() for folder in theirs)
    # mlp's log is gone; the marker naming the model its label stands for is written anew
    assert sorted(p.name for p in (out / "trace").iterdir()) == [
        "dedicated_log_torch_trace_abc.log",
        "mlp.model",
        "residual.log",
    ]
    assert not stale.exists() and live.exists()


# --- golden update ----------------------------------------------------------------------------------

GOLDEN_DRIVER = textwrap.dedent(
    """
    import os, signal, sys, tempfile
    from pathlib import Path
    from spyre_provenance import cli; from spyre_provenance.base import files as support
    from spyre_provenance.cli import golden_command

    out, golden_dir, kill_at, when = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    golden_command.compile_case = lambda case, _out: golden_command.CaseCompile(Path(out), 0, "")
    real_write = support.atomic_write_bytes
    writes = 0


    def write(path, data):
        global writes
        if writes == kill_at and when == "during":  # half the new bytes in a temporary, then dead
            fd, _ = tempfile.mkstemp(prefix=f"{support.TMP_PREFIX}{os.getpid()}-", suffix=".part", dir=Path(path).parent)
            os.write(fd, data[: len(data) // 2])
            os.kill(os.getpid(), signal.SIGKILL)
        done = real_write(path, data)
        if writes == kill_at and when == "after":  # this file replaced, the next not yet
            os.kill(os.getpid(), signal.SIGKILL)
        writes += 1
        return done


    support.atomic_write_bytes = write
    sys.exit(cli.main(["golden", "update", "mlp", "--golden-dir", golden_dir]))
    """
)


@pytest.fixture(scope="module")
def compiled_mlp(golden_compile: Any) -> Any:
    case = golden_compile("mlp")
    assert case.returncode == 0, case.stdout + case.stderr[-2000:]
    return case


def test_sigkill_during_golden_update(compiled_mlp: Any, tmp_path: Path) -> None:
    """golden update killed during and after each file it writes: every golden file is the
    old one or the complete new one, and the next update completes the golden."""
    from spyre_provenance import golden

    new = golden.fresh_case(golden.CASES["mlp"], compiled_mlp.out).files()
    # the previous golden: the same content in other bytes, so that update rewrites every file
    old = {rel: (json.dumps(json.loads(data), indent=4) + "\n").encode() for rel, data in new.items()}
    assert all(old[rel] != new[rel] for rel in new)
    golden_dir = tmp_path / "golden"
    case = golden_dir / "mlp"

    def run(kill_at: int, when: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            [sys.executable, "-c", GOLDEN_DRIVER, str(compiled_mlp.out), str(golden_dir), str(kill_at), when],
            capture_output=True,
            env=ENV,
            timeout=300,
        )

    kills = 0
    for kill_at in range(len(new)):
        for when in ("during", "after"):
            for rel, data in old.items():
                (case / rel).parent.mkdir(parents=True, exist_ok=True)
                (case / rel).write_bytes(data)
            before = set(temporaries(case))
            done = run(kill_at, when)
            assert done.returncode == -signal.SIGKILL, done.stderr.decode()[-2000:]
            kills += 1
            states = {
                rel: "old"
                if (case / rel).read_bytes() == old[rel]
                else "new"
                if (case / rel).read_bytes() == new[rel]
                else "TORN"
                for rel in new
            }
            assert "TORN" not in states.values(), (kill_at, when, states)
            assert list(states.values()).count("new") == kill_at + (when == "after"), (kill_at, when, states)
            assert len(set(temporaries(case)) - before) == (when == "during")  # the half-written one

    done = run(-1, "never")  # the next run
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    assert {rel: (case / rel).read_bytes() for rel in new} == new
    print(f"golden update: {kills} kills survived, every file old or new, never torn")
    assert temporaries(case) == [], "the next update must clear what killed writers left"
