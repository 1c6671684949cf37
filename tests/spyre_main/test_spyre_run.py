"""torch-spyre main through ``spyre-provenance run`` (issue 45 point 7): a user's program that
boots torch-spyre itself (``programs/spyre_mlp.py``, with ``TORCH_DEVICE_BACKEND_AUTOLOAD=0``)
and compiles the seed MLP in fp16 on it, run unmodified in a child of ``run``, gets what
``compile mlp --backend spyre --dtype float16`` gets through the suite's own path
(``spyre_main_case``): the same kernels, call sites, OpSpec handles and mapping, all valid.

Compiles: the run once, and ``spyre_main_case("mlp")``, which the golden test shares.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from helpers.run_program import Ran, cli, leftovers, needs_startup_hook, run_program
from helpers.where import REPO
from spyre_provenance import golden
from spyre_provenance.golden import store
from spyre_provenance.model import folders
from spyre_provenance.model.names import KERNEL_STACK_TRACES, NODE_MAPPINGS, OPSPEC_DEBUG_HANDLES

pytestmark = [pytest.mark.compile, needs_startup_hook]

PROGRAM = Path(__file__).resolve().parent / "programs" / "spyre_mlp.py"
GRAPH = "graph_00_0-0_inference"


class SpyreRun(Ran):
    """The run, and the Inductor cache of its child (torch-spyre's bundles)."""

    inductor_cache: Path = Path()

    def folder(self) -> Path:
        (folder,) = self.folders()
        return folder

    def graph(self) -> Path:
        (graph,) = [p for p in self.folder().iterdir() if p.name.startswith("graph_")]
        return graph


@pytest.fixture(scope="session")
def spyre_run(tmp_path_factory: pytest.TempPathFactory, torch_spyre_env: dict[str, str]) -> SpyreRun:
    root = tmp_path_factory.mktemp("spyre_run")
    cache = root / "inductor-cache"
    env = {name: value for name, value in torch_spyre_env.items() if name != "TORCH_TRACE"}
    env["PYTHONPATH"] = os.pathsep.join((str(REPO / "src"), env["PYTHONPATH"]))
    env["TORCHINDUCTOR_CACHE_DIR"] = str(cache)
    assert env["TORCH_DEVICE_BACKEND_AUTOLOAD"] == "0"  # as vLLM's Spyre plugin sets it
    ran = run_program(root / "out", "python", PROGRAM, env=env)
    return SpyreRun(ran.out, ran.returncode, ran.stdout, ran.stderr, inductor_cache=cache)


@pytest.fixture(scope="session")
def spyre_compile(spyre_main_case):
    compiled = spyre_main_case("mlp")
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr[-3000:]
    return compiled


def _graph_of(out: Path) -> Path:
    (graph,) = [p for p in out.iterdir() if p.is_dir() and p.name.startswith("graph_")]
    return graph


def _read(graph: Path, artifact: str) -> Any:
    return json.loads((graph / f"{artifact}.json").read_text())


def test_the_program_runs_as_without_run(spyre_run):
    assert spyre_run.returncode == 0, spyre_run.stderr[-3000:]
    assert spyre_run.stdout.splitlines() == ["output (8, 128) torch.float16"]  # its own output alone


def test_its_one_process_is_tracked_on_torch_spyre_and_complete(spyre_run):
    folder = spyre_run.folder()
    assert folder.name.startswith("spyre-mlp_pid")
    assert spyre_run.graph().name == "graph_spyre-mlp_00_0-0_inference"
    # auto chose torch-spyre because the program loaded it (backends.resolve_backend): its
    # OpSpec handles are written, which stock Inductor's tracking never writes
    assert (spyre_run.graph() / f"{OPSPEC_DEBUG_HANDLES}.json").is_file()
    assert f"{folder.name}  1 graph(s), 1/1 kernel call site(s) linked: complete" in spyre_run.stderr
    assert leftovers(spyre_run.out) == []


def test_the_same_artifacts_as_compile_backend_spyre(spyre_run, spyre_compile):
    run_graph, compile_graph = spyre_run.graph(), _graph_of(spyre_compile.out)
    artifacts = {p.name for p in compile_graph.iterdir()}
    assert {f"{a}.json" for a in (KERNEL_STACK_TRACES, NODE_MAPPINGS, OPSPEC_DEBUG_HANDLES)} <= artifacts
    assert {p.name for p in run_graph.iterdir()} == artifacts


def test_the_same_kernels_call_sites_and_opspec_handles(spyre_run, spyre_compile):
    run_graph, compile_graph = spyre_run.graph(), _graph_of(spyre_compile.out)
    # kernels and their call sites: the kernel stack traces' keys, as written
    assert _read(run_graph, KERNEL_STACK_TRACES).keys() == _read(compile_graph, KERNEL_STACK_TRACES).keys()
    # the OpSpec handles with their ids, as written (same checkout, same model file: the
    # content hashes agree before any normalising); only the bundle folders' names differ,
    # in the random prefix and suffix torch-spyre gives every folder it makes
    assert _bundle_kernels(_read(run_graph, OPSPEC_DEBUG_HANDLES)) == _bundle_kernels(
        _read(compile_graph, OPSPEC_DEBUG_HANDLES)
    )


def _bundle_kernels(handles: dict[str, Any]) -> dict[str, Any]:
    """The OpSpec handles' document with each bundle folder named by its kernel alone."""
    bundles = {
        key: {**bundle, "folder": folders.kernel_of_bundle_folder(bundle["folder"])}
        for key, bundle in handles["bundles"].items()
    }
    assert bundles and all(bundle["folder"] for bundle in bundles.values())
    return {**handles, "bundles": bundles}


def test_the_same_provenance_modulo_what_the_normaliser_normalises(spyre_run, spyre_compile):
    ran = store.load(spyre_run.folder()).normalized(None)
    compiled = store.load(spyre_compile.out).normalized(None)
    assert ran.files() == compiled.files()
    assert sorted({rel.split("/")[0] for rel in ran.files()}) == [GRAPH]
    assert golden.differences(compiled, ran, None, labels=("compile", "run")).changes == []


def test_the_same_superdsc_bundles(spyre_run, spyre_compile):
    def kernels(cache: Path) -> list[str | None]:
        return sorted(folders.kernel_of_bundle_folder(p.name) for p in (cache / "inductor-spyre").glob("*"))

    assert kernels(spyre_run.inductor_cache) == kernels(spyre_compile.inductor_cache) != []


def test_validate_takes_the_run(spyre_run):
    done = cli("validate", spyre_run.out)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr
    assert "INVALID" not in done.stdout
    assert f"  {spyre_run.folder().name}  1 graph(s)" in done.stdout
