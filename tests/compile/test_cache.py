"""Cache hits: a second run with a warm Inductor cache gives the same mapping and a page
whose pre-grad panel is linked.

Tracking bypasses the FX-graph and AOTAutograd caches (README, "Python API"): a cache hit
generates no kernels, so nothing would be recorded, and upstream's replay logs no pre-grad
graph. Both runs here share one TORCHINDUCTOR_CACHE_DIR with both caches switched on by
environment, as a user's would be; kernel-level caches do get warm and are used.
Two compiles of the seed MLP (~10 s each).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from helpers import tlparse_page
from helpers.fresh_process import FRESH  # tests/ is on sys.path
from spyre_provenance.logs import tlparse_run, tracelog
from spyre_provenance.model.names import NODE_MAPPINGS

pytestmark = [
    pytest.mark.compile,
    pytest.mark.skipif(tlparse_run.tlparse_binary() is None, reason="tlparse is not installed"),
]

CACHE_HITS = ("fx_graph_cache_hit", "aotautograd_cache_hit")


def _compile(out: Path, cache: Path) -> subprocess.CompletedProcess[str]:
    return FRESH.run(
        "compile",
        "mlp",
        "--out",
        out,
        env={
            "TORCHINDUCTOR_CACHE_DIR": str(cache),
            "TORCHINDUCTOR_FX_GRAPH_CACHE": "1",
            "TORCHINDUCTOR_AUTOGRAD_CACHE": "1",
        },
    )


def test_warm_cache_run_gives_the_same_mapping_and_a_linked_pre_grad_panel(tmp_path):
    cache = tmp_path / "inductor_cache"
    cold = _compile(tmp_path / "cold", cache)
    assert cold.returncode == 0, cold.stdout + cold.stderr[-3000:]
    assert any(p.is_file() for p in cache.rglob("*")), "the first run left the cache dir empty"
    warm = _compile(tmp_path / "warm", cache)
    assert warm.returncode == 0, warm.stdout + warm.stderr[-3000:]

    files = sorted(p.relative_to(tmp_path / "cold") for p in (tmp_path / "cold").glob("graph_*/*.json"))
    assert any(p.name == f"{NODE_MAPPINGS}.json" for p in files)
    for name in files:
        assert (tmp_path / "cold" / name).read_bytes() == (tmp_path / "warm" / name).read_bytes(), name
    (log,) = (tmp_path / "warm" / "trace").glob("*.log")
    payloads = [text for _, _, text in tracelog.artifact_payloads(log)]
    assert not any(hit in text for text in payloads for hit in CACHE_HITS), "the warm run hit a graph cache"

    (page_path,) = (tmp_path / "warm" / "tlparse" / "mlp").glob("provenance_tracking_-_0_0_0.html")
    page = tlparse_page.parse_page(page_path.read_text())
    assert any(line.strip() for line in page.pre_grad), "no pre-grad graph on the warm run's page"
    assert page.links.get("preToPost") and page.links.get("postToPre")
    kernels = tlparse_page.kernel_lines(page)
    assert kernels and all(kernel.post_grad_lines for kernel in kernels)
