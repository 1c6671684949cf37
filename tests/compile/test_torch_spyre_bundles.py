"""The adapter reads torch-spyre's own SuperDSC bundles: where its runners point.

torch-spyre builds ``SpyreSDSCKernelRunner(kernel_name, code_dir)`` for every kernel, with
``code_dir`` a fresh folder (kernel cache off) or, with ``spyre_kernel_cache`` on, the cache
entry keyed on the specs without their handles, which an earlier compile may have written.
Three compiles of the main-shaped stand-in (tests/stand_ins/gen_main) on one Inductor cache
dir: cache off; cache on, model from a.py (fills it); cache on, the same model from b.py
(other lines, same specs: a hit, served a.py's handles). Each bundle's ``debug_handle_`` is
checked against the OpSpecs of its own compile, as on the reference backend.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import sys
import warnings
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from torch._inductor import config as inductor_config
from torch._inductor.codegen import common as codegen_common

import spyre_provenance
from helpers.where import STAND_INS  # tests/ is on sys.path
from spyre_provenance.backends.spyre import SpyreBackend
from spyre_provenance.model.names import OPSPEC_DEBUG_HANDLES
from spyre_provenance.model.records import BundleHandlesV4
from zoo.user_models import SOURCE

pytestmark = pytest.mark.compile


def _purge_torch_spyre() -> None:
    for name in [m for m in sys.modules if m == "torch_spyre" or m.startswith("torch_spyre.")]:
        del sys.modules[name]


def _load(path: Path) -> torch.nn.Module:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    model, _ = module.softmax_block()
    return model


def _compile(model: torch.nn.Module, out: Path, *, kernel_cache: bool) -> SimpleNamespace:
    importlib.import_module("torch_spyre._inductor.config").spyre_kernel_cache = kernel_cache
    torch._dynamo.reset()
    backend = SpyreBackend(device="cpu")  # the stand-ins compute on CPU
    with (
        warnings.catch_warnings(record=True) as caught,
        torch.no_grad(),
        inductor_config.patch(fx_graph_cache=False),  # a cache hit would skip code generation
        torch._functorch.config.patch(enable_autograd_cache=False),
        spyre_provenance.tracking(backend, out_dir=out) as session,
    ):
        warnings.simplefilter("always")
        torch.compile(model)(torch.randn(4, 16))
    [result] = session.results
    [artifact] = out.glob(f"graph_*/{OPSPEC_DEBUG_HANDLES}.json")
    return SimpleNamespace(result=result, opspecs=json.loads(artifact.read_bytes()), warnings=caught)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, SimpleNamespace]:
    work = tmp_path_factory.mktemp("spyre-bundles")
    (work / "a.py").write_text(SOURCE)
    (work / "b.py").write_text("\n\n# the same model, two lines lower\n" + SOURCE)
    with pytest.MonkeyPatch.context() as mp:
        _purge_torch_spyre()
        mp.syspath_prepend(str(STAND_INS))
        mp.syspath_prepend(str(STAND_INS / "gen_main"))
        mp.setenv("TORCHINDUCTOR_CACHE_DIR", str(work / "inductor-cache"))
        codegen_common.init_backend_registration()
        runs = {
            "off": _compile(_load(work / "a.py"), work / "off", kernel_cache=False),
            "cold": _compile(_load(work / "a.py"), work / "cold", kernel_cache=True),
            "warm": _compile(_load(work / "b.py"), work / "warm", kernel_cache=True),
        }
        runs["cache"] = work / "inductor-cache"
        _purge_torch_spyre()
    torch._dynamo.reset()
    return runs


def _opspec_count(run: SimpleNamespace) -> int:
    return sum(len(specs) for specs in run.opspecs["kernels"].values())


def test_fresh_bundles_carry_this_compiles_handles(runs) -> None:
    for name in ("off", "cold"):
        diag = runs[name].result.diagnostics
        count = _opspec_count(runs[name])
        assert count >= 2, runs[name].opspecs
        assert diag.bundle_handles == BundleHandlesV4(checked=count, stale=0, missing=0, shared=0), name
        assert not diag.faults, diag.faults


def test_bundle_folders_are_torch_spyres(runs) -> None:
    cache = runs["cache"]
    fresh = sorted(p.name for p in (cache / "inductor-spyre").iterdir())
    assert fresh and all(p.count("_") >= 2 and "sdsc_" in p for p in fresh), fresh  # <uuid8>_<name>_XXXXXXXX
    entries = [p for p in (cache / "inductor-spyre-cache").iterdir() if not p.name.startswith("tmp_")]
    assert len(entries) == len(runs["cold"].opspecs["kernels"])  # one entry per kernel, reused by the warm run


def test_a_warm_cache_serves_stale_handles_and_they_are_counted(runs) -> None:
    warm = runs["warm"]
    count = _opspec_count(warm)
    # every handle of b.py's OpSpecs differs from a.py's (other lines): all served ones are stale
    assert warm.result.diagnostics.bundle_handles == BundleHandlesV4(checked=count, stale=count, missing=0, shared=0)
    assert not warm.result.diagnostics.partial  # stale bundles are reported, the mapping is whole


def test_the_artifacts_keep_this_compiles_handles(runs) -> None:
    def files(run):
        return {h["source"]["file"] for h in run.opspecs["handles"].values() if h["source"]}

    assert {Path(f).name for f in files(runs["cold"])} == {"a.py"}
    assert {Path(f).name for f in files(runs["warm"])} == {"b.py"}  # never the stale bundles' a.py


def test_an_unreadable_bundle_is_a_fault_not_a_check(runs, tmp_path: Path) -> None:
    backend = SpyreBackend(device="cpu")
    folder = tmp_path / "k"
    folder.mkdir()
    (folder / "sdsc_0.json").write_text("[]")
    graph = SimpleNamespace()
    graph.__dict__["_spyre_provenance_bundle_dirs"] = {"sdsc_k_0": str(folder)}
    from torch._inductor.virtualized import V

    with V.set_graph_handler(graph):
        assert backend.bundle_handles("sdsc_k_0") is None
        assert backend.bundle_handles("sdsc_other_1") is None  # no runner: not checked, no fault
    [fault] = backend.take_faults()
    assert fault.stage == "OpSpec handle reading"
    assert "sdsc_k_0: bundles not checked" in fault.error and "sdsc_0.json" in fault.error
