"""Inductor's caches stay on under tracking, and a hit is recorded as fully as the miss that
wrote its entry (issue 54; ``capture.graph_cache``).

Each case compiles once cold into a fresh TORCHINDUCTOR_CACHE_DIR (with the FX-graph and
AOTAutograd caches forced on by environment, as a user's would be) and once warm from it,
each in a fresh process; every test reads those two runs. Inference on the reference
backend and on stock Inductor, training (forward and backward) on the reference.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from helpers import tlparse_page, warm_start
from helpers.fresh_process import FRESH  # tests/ is on sys.path
from helpers.where import on_measured_torch
from spyre_provenance.golden.normalize import normalize
from spyre_provenance.logs import tlparse_render, tracelog
from spyre_provenance.model.names import DIAGNOSTICS

pytestmark = [
    pytest.mark.compile,
    pytest.mark.skipif(tlparse_render.tlparse_binary() is None, reason="tlparse is not installed"),
]

HIT_ARTIFACTS = ("fx_graph_cache_hit", "aotautograd_cache_hit")
CASES = {
    "reference": ("mlp",),
    "inductor": ("mlp", "--backend", "inductor"),
    "train": ("mlp", "--train"),
}


def _compile(args: tuple[str, ...], out: Path, cache: Path, extra: dict[str, str] | None = None):
    env = {"TORCHINDUCTOR_CACHE_DIR": str(cache), **warm_start.CACHES_ON, **(extra or {})}
    done = FRESH.run("compile", *args, "--out", out, env=env)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    return done


class Pair:
    def __init__(self, root: Path, args: tuple[str, ...]) -> None:
        self.cache = root / "inductor_cache"
        self.cold_out, self.warm_out = root / "cold", root / "warm"
        self.cold: subprocess.CompletedProcess[str] = _compile(args, self.cold_out, self.cache)
        self.warm: subprocess.CompletedProcess[str] = _compile(args, self.warm_out, self.cache)

    def log(self, out: Path) -> Path:
        (log,) = (out / "trace").glob("*.log")
        return log


#: on the next torches (make test-torch-next) the reference's inference and training hold the
#: seams; the other cases run on the measured torch alone, to keep CI's time
MEASURED_TORCH_ONLY = pytest.mark.skipif(not on_measured_torch(), reason="run on torch 2.13 only")


@pytest.fixture(
    scope="module",
    params=[pytest.param(case, marks=() if case != "inductor" else MEASURED_TORCH_ONLY) for case in sorted(CASES)],
)
def pair(request, tmp_path_factory) -> Pair:
    return Pair(tmp_path_factory.mktemp(f"cache_{request.param}"), CASES[request.param])


def _hits(log: Path) -> list[str]:
    return [name for _, name, _ in tracelog.artifact_payloads(log) if name in HIT_ARTIFACTS]


def test_the_warm_run_hits_the_cache_the_cold_run_wrote(pair: Pair) -> None:
    assert _hits(pair.log(pair.cold_out)) == []
    assert _hits(pair.log(pair.warm_out)), "tracking kept the warm run from Inductor's cache"


def test_a_hit_writes_every_artifact_the_miss_wrote(pair: Pair) -> None:
    warm_start.recorded_as_cold(pair.cold_out, pair.warm_out)


def test_the_screen_says_which_graphs_came_from_the_cache(pair: Pair) -> None:
    graphs = [line for line in pair.warm.stdout.splitlines() if line.startswith("  graph ")]
    assert graphs and all(line.endswith("(cached: from Inductor's cache)") for line in graphs), pair.warm.stdout
    assert "from Inductor's cache" not in pair.cold.stdout


def test_the_page_of_a_hit_links_pre_grad_nodes_as_the_miss_does(pair: Pair) -> None:
    pages = {}
    for out in (pair.cold_out, pair.warm_out):
        (page_path,) = (out / "tlparse").glob("*/provenance_tracking_-_0_0_0.html")
        pages[out] = tlparse_page.parse_page(page_path.read_text())
    cold, warm = pages[pair.cold_out], pages[pair.warm_out]
    assert any(line.strip() for line in warm.pre_grad), "no pre-grad graph on the warm run's page"
    assert warm.links == cold.links
    kernels = tlparse_page.kernel_lines(warm)
    assert kernels and all(kernel.post_grad_lines for kernel in kernels)


@pytest.fixture(scope="module")
def ranks(tmp_path_factory) -> tuple[Path, Path, subprocess.CompletedProcess[str]]:
    """``compile tensor_parallel --ranks 2`` twice over one cache dir: cold, the two ranks
    write the same dir at once; warm, both start from it."""
    root = tmp_path_factory.mktemp("cache_ranks")
    args = ("tensor_parallel", "--ranks", "2")
    _compile(args, root / "cold", root / "inductor_cache")
    warm = _compile(args, root / "warm", root / "inductor_cache")
    return root / "cold", root / "warm", warm


@MEASURED_TORCH_ONLY
def test_every_rank_of_a_warm_ranked_compile_records_what_its_cold_one_did(ranks) -> None:
    cold, warm, done = ranks
    for rank in ("rank0", "rank1"):
        files = sorted(p.relative_to(cold / rank) for p in (cold / rank).glob("graph_*/*.json"))
        assert files and files == sorted(p.relative_to(warm / rank) for p in (warm / rank).glob("graph_*/*.json"))
        for name in files:
            docs = [json.loads((out / rank / name).read_bytes()) for out in (cold, warm)]
            if name.name == f"{DIAGNOSTICS}.json":
                assert (docs[0].pop("cache"), docs[1].pop("cache")) == ("compiled", "cached"), rank
                assert docs[1]["complete"], rank
            assert normalize(name.stem, docs[0]) == normalize(name.stem, docs[1]), (rank, name)
    graphs = [line for line in done.stdout.splitlines() if "kernel call site(s)" in line and "graph " in line]
    assert len(graphs) == 2 and all("(cached: from Inductor's cache)" in line for line in graphs), done.stdout
