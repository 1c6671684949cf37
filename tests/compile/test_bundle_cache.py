"""torch-spyre's kernel cache, modelled: bundles keyed on the specs without their handles.

A second compile whose specs match an earlier one is served the earlier bundles, handles
and all. The hook checks every bundle's ``debug_handle_`` against this compile's OpSpecs:
stale ones are counted in the diagnostics (version 3) and named in the summary, and the
mapping and the OpSpec artifact keep this compile's handles.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from helpers.fresh_process import FRESH  # tests/ is on sys.path
from spyre_provenance.model.names import DIAGNOSTICS, OPSPEC_DEBUG_HANDLES
from spyre_provenance.validate import paths as path_validation
from zoo.user_models import SOURCE

pytestmark = pytest.mark.compile


def compile_with_cache(model: Path, out: Path, cache: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """``model`` (a copy of ``zoo/user_models.py``) compiled in a fresh process with its own
    Inductor cache dir, where the kernel cache keeps its bundles; the FX-graph and AOTAutograd
    caches on, as a user's are (the suite turns them off): a model whose lines moved must not
    be served the entry of its old lines (``graph_cache.source_digest``)."""
    return FRESH.run(
        "compile",
        f"{model}:summed_block",
        "--backend",
        "reference",
        "--out",
        out,
        "--no-tlparse",
        *extra,
        env={
            "TORCHINDUCTOR_CACHE_DIR": str(cache),
            "TORCHINDUCTOR_FX_GRAPH_CACHE": "1",
            "TORCHINDUCTOR_AUTOGRAD_CACHE": "1",
        },
        timeout=600,
    )


def diagnostics(out: Path) -> dict:
    (file,) = out.glob(f"graph_*/{DIAGNOSTICS}.json")
    return json.loads(file.read_bytes())


def handle_sources(out: Path) -> set[str]:
    (file,) = out.glob(f"graph_*/{OPSPEC_DEBUG_HANDLES}.json")
    handles = json.loads(file.read_bytes())["handles"].values()
    return {h["source"]["file"] for h in handles if h["source"]}


def opspec_ids(out: Path) -> list[str | None]:
    """Every OpSpec's handle id, kernel by kernel (kernel names are the same in both runs)."""
    (file,) = out.glob(f"graph_*/{OPSPEC_DEBUG_HANDLES}.json")
    kernels = json.loads(file.read_bytes())["kernels"]
    return [spec["debug_handle"] for key in sorted(kernels) for spec in kernels[key]]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, subprocess.CompletedProcess[str]]]:
    """The same model from two files (other paths and lines, same specs), compiled with one
    warm kernel cache: a.py fills it, a.py again hits it, b.py hits it with a.py's handles."""
    work = tmp_path_factory.mktemp("bundle-cache")
    cache = work / "inductor-cache"
    (work / "a.py").write_text(SOURCE)
    (work / "moved").mkdir()
    (work / "moved" / "b.py").write_text("\n\n# the same model, two lines lower\n" + SOURCE)
    done = {}
    for name, model in (("cold", work / "a.py"), ("same", work / "a.py"), ("other", work / "moved" / "b.py")):
        out = work / name
        done[name] = (out, compile_with_cache(model, out, cache, "--kernel-cache"))
    return done


def test_a_cold_cache_serves_this_compiles_handles(runs):
    out, done = runs["cold"]
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    bundles = diagnostics(out)["bundle_handles"]
    assert bundles["checked"] > 0 and bundles["stale"] == bundles["missing"] == 0
    assert f"SuperDSC bundles: {bundles['checked']}, every debug_handle_ this compile's" in done.stdout
    assert not (out / "sdsc").exists()  # with the kernel cache on, bundles live in the cache only


def test_a_hit_from_the_same_source_is_not_stale(runs):
    out, done = runs["same"]
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert diagnostics(out)["bundle_handles"] == diagnostics(runs["cold"][0])["bundle_handles"]


def test_a_hit_from_another_source_reports_stale_handles_and_keeps_its_own(runs):
    out, done = runs["other"]
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    doc = diagnostics(out)
    bundles = doc["bundle_handles"]
    assert bundles["checked"] == diagnostics(runs["cold"][0])["bundle_handles"]["checked"]
    # stale exactly where the handle differs from the one the cache was filled with (a
    # handle without a source, the split bias add's, is the same in both files)
    cold, other = (opspec_ids(runs[name][0]) for name in ("cold", "other"))
    assert len(cold) == len(other) == bundles["checked"]
    assert bundles["stale"] == sum(a != b for a, b in zip(cold, other, strict=True)) > 0
    assert doc["complete"] and not doc["partial"]  # the mapping is this compile's: nothing lost
    assert f"STALE BUNDLES: {bundles['stale']} of {bundles['checked']} SuperDSC bundles" in done.stdout
    # never a stale handle in the artifacts: they point at b.py, the cached bundles at a.py
    assert {Path(f).name for f in handle_sources(out)} == {"b.py"}
    assert {Path(f).name for f in handle_sources(runs["cold"][0])} == {"a.py"}
    results = path_validation.validate_paths([out])
    assert results and all(r.ok for r in results), results


def test_kernel_cache_is_refused_where_there_are_no_bundles(tmp_path: Path):
    (tmp_path / "m.py").write_text(SOURCE)
    done = compile_with_cache(
        tmp_path / "m.py", tmp_path / "out", tmp_path / "cache", "--kernel-cache", "--backend", "inductor"
    )
    assert done.returncode == 2 and "--kernel-cache" in done.stderr and not (tmp_path / "out").exists()
