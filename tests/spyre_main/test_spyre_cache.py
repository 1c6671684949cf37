"""torch-spyre main's compile from a warm Inductor cache (issue 54): the shared ``mlp``
compile's cache folder, copied (the other tests read that folder's bundles), then the same
compile again from it. Its backend's own passes move the post-grad graph after compile_fx
logged it (restickify nodes): the hit must log the graph the kernels name, and record
everything the cold compile did. One compile beyond the shared one.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from spyre_provenance.golden.normalize import normalize

pytestmark = [pytest.mark.spyre_main, pytest.mark.compile]


def _docs(out: Path) -> dict[str, object]:
    docs: dict[str, object] = {}
    for path in sorted(out.glob("graph_*/*.json")):
        doc = json.loads(path.read_bytes())
        if path.stem == "spyre_provenance_diagnostics":
            docs["cache"] = doc.pop("cache")
        docs[f"{path.parent.name}/{path.name}"] = normalize(path.stem, doc)
    return docs


def test_a_warm_compile_on_main_records_what_the_cold_one_did(spyre_main_case, spyre_main_server, tmp_path):
    cold = spyre_main_case("mlp")
    assert cold.returncode == 0, cold.stderr[-3000:]
    cache = tmp_path / "inductor-cache"
    shutil.copytree(cold.inductor_cache, cache)
    out, stdout, stderr = tmp_path / "warm", tmp_path / "warm.stdout", tmp_path / "warm.stderr"
    command = ["compile", "mlp", "--backend", "spyre", "--dtype", "float16", "--out", str(out)]
    code = spyre_main_server.run(command, stdout, stderr, env={"TORCHINDUCTOR_CACHE_DIR": str(cache)})
    printed = stdout.read_text()
    assert code == 0, printed + stderr.read_text()[-3000:]
    assert "graph 0/0 inference: 1 kernel call site(s) (cached: from Inductor's cache)" in printed
    assert "VIOLATION" not in printed
    warm, compiled = _docs(out), _docs(cold.out)
    assert (compiled.pop("cache"), warm.pop("cache")) == ("compiled", "cached")
    assert warm == compiled
