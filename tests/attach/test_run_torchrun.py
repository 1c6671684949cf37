"""torchrun is the engine (issue 45 points 4, 6, 9): a DDP job on gloo through
``run -- torchrun --nproc-per-node 2``, and two "nodes" on this machine, two torchruns with
c10d rendezvous over loopback, started by one shell command under ``run``. Every rank gets
its own folder, torchrun's launchers none (they compile nothing), and ``open`` gives
tlparse's multi-rank landing page.

The two runs start at once and are read by every test (four ranks, each one compile).
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from helpers.run_program import (
    PROGRAMS,
    Ran,
    cli,
    free_port,
    leftovers,
    needs_startup_hook,
    run_command,
    start_program,
    torch_aborted_in_teardown,
)
from spyre_provenance.launch import run_summary
from spyre_provenance.logs import tlparse_render
from spyre_provenance.model import folders

pytestmark = [pytest.mark.compile, needs_startup_hook]
needs_tlparse = pytest.mark.skipif(tlparse_render.tlparse_binary() is None, reason="tlparse is not installed")
DDP = PROGRAMS / "ddp_train.py"


def _two_nodes(port: int) -> list[str]:
    """One shell command, two torchruns (one rank each) meeting at a c10d rendezvous on
    loopback; its status is the first failure's."""
    node = (
        f"torchrun --nnodes 2 --nproc-per-node 1 --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:{port}"
        f" --rdzv-id attach-test {shlex.quote(str(DDP))}"
    )
    return ["sh", "-c", f"{node} & first=$!; {node}; second=$?; wait $first; first=$?; exit $((first | second))"]


def _commands() -> dict[str, list[str]]:
    return {
        "ddp": ["torchrun", "--nproc-per-node", "2", "--master-port", str(free_port()), str(DDP)],
        "nodes": _two_nodes(free_port()),
    }


def _at_once(root: Path, names: list[str]) -> dict[str, Ran]:
    commands = _commands()
    started = {name: start_program(run_command(root / name, *commands[name]), root / name) for name in names}
    ran = {}
    for name, process in started.items():
        code = process.wait(timeout=1200)
        ran[name] = Ran(
            root / name, code, Path(f"{root / name}.stdout").read_text(), Path(f"{root / name}.stderr").read_text()
        )
    return ran


@pytest.fixture(scope="session")
def torchruns(tmp_path_factory) -> dict[str, Ran]:
    """Both jobs at once; a job whose rank torch's own teardown aborted
    (``run_program.TEARDOWN_ABORT``, tracked or not) once more, from scratch: an abort in both
    attempts would be no accident."""
    ran = _at_once(tmp_path_factory.mktemp("torchrun"), ["ddp", "nodes"])
    aborted = [name for name, job in ran.items() if torch_aborted_in_teardown(job)]
    if aborted:
        ran.update(_at_once(tmp_path_factory.mktemp("torchrun-again"), aborted))
    return ran


@pytest.mark.parametrize("name", ["ddp", "nodes"])
def test_every_rank_has_its_own_folder_and_the_launchers_none(torchruns, name):
    ran = torchruns[name]
    assert ran.returncode == 0, ran.stderr[-4000:]
    processes = [folders.process_of_folder(f.name) for f in ran.folders()]
    assert [(p.program, p.rank) for p in processes if p] == [("ddp-train", 0), ("ddp-train", 1)]
    local = [p.local_rank for p in processes if p]
    assert local == ([0, 1] if name == "ddp" else [0, 0])  # two nodes: each rank is its node's first
    # the program's stdout, whole and alone (torchrun's own notes go to stderr)
    assert sorted(line.split()[:3] for line in ran.stdout.splitlines()) == [
        ["rank", "0", "loss"],
        ["rank", "1", "loss"],
    ]
    assert all(leftovers(f) == [] for f in ran.folders())


@pytest.mark.parametrize("name", ["ddp", "nodes"])
def test_each_rank_compiled_forward_and_backward_complete(torchruns, name):
    summaries = run_summary.summarize_run(torchruns[name].out)
    assert [(s.process.rank, s.graphs, s.word) for s in summaries] == [(0, 2, "complete"), (1, 2, "complete")]
    for s in summaries:
        assert f"{s.folder.name}  2 graph(s), {s.linked_call_sites}/{s.call_sites}" in torchruns[name].stderr


@needs_tlparse
@pytest.mark.parametrize("name", ["ddp", "nodes"])
def test_run_writes_tlparses_multi_rank_landing_page(torchruns, name):
    landing = torchruns[name].out / "tlparse" / "ddp-train" / "index.html"
    assert any(line.split() == ["ddp-train", "ranks", str(landing)] for line in torchruns[name].stderr.splitlines())
    assert landing.is_file()
    for rank in (0, 1):
        assert (landing.parent / f"rank_{rank}" / "index.html").is_file()


@needs_tlparse
def test_open_of_the_run_gives_the_same_landing_page(torchruns, tmp_path):
    done = cli("open", torchruns["nodes"].out, "--out", tmp_path / "pages", "--no-browser")
    assert done.returncode == 0, done.stdout + done.stderr
    first = done.stdout.splitlines()[0].split()
    assert first[:2] == ["ddp-train", "ranks"] and first[-1] == str(tmp_path / "pages" / "ddp-train" / "index.html")
    ranked = [line for line in done.stdout.splitlines() if " rank " in line and "[0/0]" in line]
    assert len(ranked) == 4  # two ranks, forward and backward each


def test_validate_reads_every_rank(torchruns):
    done = cli("validate", torchruns["ddp"].out, "--format", "json")
    assert done.returncode == 0, done.stderr
    ranks = {r["rank"] for r in json.loads(done.stdout) if "/trace/" in r["path"]}
    assert ranks == {0, 1}  # torch stamps the rank on every record of a rank's log
