"""torch-spyre main's compile from a warm Inductor cache (issue 54): ``compile mlp`` on main
twice over one cache dir, with the FX-graph and AOTAutograd caches on (the suite turns them
off, tests/conftest.py), each in a fresh booted process (``run_booted.py``). Main's own passes
move the post-grad graph after compile_fx logged it (restickify nodes): the hit must log the
graph the kernels name, and record everything the cold compile did. Two compiles.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from spyre_provenance.golden.normalize import normalize

pytestmark = [pytest.mark.spyre_main, pytest.mark.compile]

BOOTED = Path(__file__).parent / "run_booted.py"
CACHES_ON = {"TORCHINDUCTOR_FX_GRAPH_CACHE": "1", "TORCHINDUCTOR_AUTOGRAD_CACHE": "1"}


def _docs(out: Path) -> dict[str, object]:
    docs: dict[str, object] = {}
    for path in sorted(out.glob("graph_*/*.json")):
        doc = json.loads(path.read_bytes())
        if path.stem == "spyre_provenance_diagnostics":
            docs["cache"] = doc.pop("cache")
        docs[f"{path.parent.name}/{path.name}"] = normalize(path.stem, doc)
    return docs


def test_a_warm_compile_on_main_records_what_the_cold_one_did(torch_spyre_env, tmp_path):
    env = {**torch_spyre_env, **CACHES_ON, "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor-cache")}
    printed = {}
    for run in ("cold", "warm"):
        command = ["compile", "mlp", "--backend", "spyre", "--dtype", "float16", "--out", str(tmp_path / run)]
        done = subprocess.run(
            [sys.executable, str(BOOTED), *command], capture_output=True, text=True, env=env, timeout=900
        )
        assert done.returncode == 0, done.stdout + done.stderr[-3000:]
        printed[run] = done.stdout
    assert "from Inductor's cache" not in printed["cold"]
    assert "graph 0/0 inference: 1 kernel call site(s) (cached: from Inductor's cache)" in printed["warm"]
    assert "VIOLATION" not in printed["warm"]
    cold, warm = _docs(tmp_path / "cold"), _docs(tmp_path / "warm")
    assert (cold.pop("cache"), warm.pop("cache")) == ("compiled", "cached")
    assert warm == cold
