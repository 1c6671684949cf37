"""What a warm start must record: every artifact its cold start wrote, equal to it (issue 54;
``capture.graph_cache``). Shared by the cache tests (tests/compile/test_cache.py) and the
cold/warm pairs other tests hold (tests/compile/test_module_names.py)."""

from __future__ import annotations

import json
from pathlib import Path

from spyre_provenance.golden.normalize import normalize
from spyre_provenance.model.names import DIAGNOSTICS, NODE_MAPPINGS

#: Inductor's FX-graph and AOTAutograd caches on, as a user's would be (the suite turns them off)
CACHES_ON = {"TORCHINDUCTOR_FX_GRAPH_CACHE": "1", "TORCHINDUCTOR_AUTOGRAD_CACHE": "1"}


def recorded_as_cold(cold_out: Path, warm_out: Path) -> None:
    """The warm run's graph folders hold the cold run's files, equal once normalized (the
    diagnostics but for their cache state), and the same SuperDSC bundles, byte for byte."""
    files = sorted(p.relative_to(cold_out) for p in cold_out.glob("graph_*/*.json"))
    assert any(p.name == f"{NODE_MAPPINGS}.json" for p in files)
    warm = sorted(p.relative_to(warm_out) for p in warm_out.glob("graph_*/*.json"))
    assert warm == files
    for name in files:
        cold, hot = (out / name for out in (cold_out, warm_out))
        if name.name == f"{DIAGNOSTICS}.json":
            cold_doc, hot_doc = json.loads(cold.read_bytes()), json.loads(hot.read_bytes())
            assert (cold_doc.pop("cache"), hot_doc.pop("cache")) == ("compiled", "cached"), name
            assert cold_doc == hot_doc, name
            continue
        docs = (normalize(name.stem, json.loads(path.read_bytes())) for path in (cold, hot))
        assert next(docs) == next(docs), name
    cold_bundles = sorted(p.relative_to(cold_out) for p in cold_out.glob("sdsc/**/*.json"))
    assert cold_bundles == sorted(p.relative_to(warm_out) for p in warm_out.glob("sdsc/**/*.json"))
    for name in cold_bundles:
        assert (cold_out / name).read_bytes() == (warm_out / name).read_bytes(), name
