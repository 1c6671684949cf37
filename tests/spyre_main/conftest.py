"""Fixtures for the ``spyre_main`` tests: torch-spyre main's compiles, once per session.

``spyre_main_case("tests/zoo/models.py:FACTORY")`` compiles a model with tracking on
(``--backend spyre``, the project's adapter) in fp16 through the route, in a compile
worker that booted torch-spyre (``server.py``), into an ``--out`` folder laid out as
``spyre-provenance compile`` writes it; extra arguments go on the command line
(``spyre_main_case(spec, "--train")``). Each distinct argument list compiles once.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import CompiledCase, CompileServer
from helpers.where import REPO
from spyre_main import boot, locate

SERVER = Path(__file__).resolve().parent / "server.py"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test in this folder is a ``spyre_main`` test."""
    here = Path(__file__).resolve().parent
    for item in items:
        if here in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.spyre_main)


class SpyreCompiledCase(CompiledCase):
    """A compile on torch-spyre main: ``CompiledCase`` and Inductor's cache folder of that
    compile alone (``TORCHINDUCTOR_CACHE_DIR``: cold, so never an FX-graph-cache hit),
    which holds torch-spyre's SuperDSC bundles."""

    def __init__(self, out: Path, returncode: int, stdout: str, stderr: str, inductor_cache: Path) -> None:
        super().__init__(out, returncode, stdout, stderr)
        self.inductor_cache = inductor_cache

    def bundle_dirs(self) -> list[Path]:
        """torch-spyre's bundle folders, ``inductor-spyre/<uuid8>_<kernel>_<suffix>/``."""
        return sorted(p for p in (self.inductor_cache / "inductor-spyre").glob("*") if p.is_dir())


@pytest.fixture(scope="session")
def torch_spyre() -> locate.TorchSpyre:
    """The torch-spyre under test (skips, or fails with CI=true, without one)."""
    return locate.require()


@pytest.fixture(scope="session")
def torch_spyre_env(torch_spyre: locate.TorchSpyre) -> dict[str, str]:
    """The environment a process needs to boot it (``boot.environment``), the current one
    included but for ``CI`` (``boot.inherited``)."""
    boot.install_dxp(torch_spyre.tools)
    current = boot.inherited()
    return {**current, **boot.environment(torch_spyre.source, torch_spyre.tools), "PYTHONPATH": _pythonpath()}


def _pythonpath() -> str:
    parts = [str(REPO / "tests"), os.environ.get("PYTHONPATH", "")]
    return os.pathsep.join(p for p in parts if p)


@pytest.fixture(scope="session")
def torch_spyre_python(torch_spyre_env: dict[str, str]) -> Callable[..., Any]:
    """``torch_spyre_python(CODE)``: run CODE in a fresh interpreter where torch-spyre is
    booted on the stand-in (``boot.boot_from_env`` runs first), and return the JSON value
    it prints as its last line of stdout. For calling torch-spyre's own functions, e.g.
    ``build_kernel_provenance_descriptor`` or ``provenance._stable_id``, on data a test
    read from a compile's output. ``env``: more environment variables (``TORCH_TRACE``)."""

    def run(code: str, timeout: float = 300, env: dict[str, str] | None = None) -> Any:
        script = "from spyre_main import boot\nboot.boot_from_env()\n" + textwrap.dedent(code)
        done = subprocess.run(
            [sys.executable, "-c", script],
            env={**torch_spyre_env, **(env or {})},
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if done.returncode != 0:
            raise AssertionError(f"torch_spyre_python failed ({done.returncode}):\n{done.stderr[-3000:]}")
        lines = done.stdout.strip().splitlines()
        return json.loads(lines[-1]) if lines else None

    return run


@pytest.fixture(scope="session")
def spyre_main_server(torch_spyre_env: dict[str, str]) -> Iterator[CompileServer]:
    server = CompileServer(script=SERVER, env=torch_spyre_env)
    yield server
    server.close()


@pytest.fixture(scope="session")
def spyre_main_case(
    tmp_path_factory: pytest.TempPathFactory, spyre_main_server: CompileServer
) -> Callable[..., SpyreCompiledCase]:
    """``spyre_main_case(SPEC, *ARGS)``: ``spyre-provenance compile SPEC --backend spyre
    --dtype float16 *ARGS --out DIR`` on torch-spyre main, once per session per argument
    list; read-only for the callers."""
    done: dict[tuple[str, ...], CompiledCase] = {}

    def run(spec: str, *args: str) -> SpyreCompiledCase:
        key = (spec, *args)
        if key not in done:
            out = tmp_path_factory.mktemp("spyre_main")
            stdout, stderr = out.parent / f"{out.name}.stdout", out.parent / f"{out.name}.stderr"
            cache = out.parent / f"{out.name}.inductor-cache"
            command = ["compile", spec, "--backend", "spyre", "--dtype", "float16", *args, "--out", str(out)]
            code = spyre_main_server.run(command, stdout, stderr, env={"TORCHINDUCTOR_CACHE_DIR": str(cache)})
            done[key] = SpyreCompiledCase(
                out, code, stdout.read_text(errors="replace"), stderr.read_text(errors="replace"), cache
            )
        return done[key]

    return run


@pytest.fixture(scope="session")
def spyre_main_untracked(
    tmp_path_factory: pytest.TempPathFactory, spyre_main_server: CompileServer
) -> Callable[[str], SpyreCompiledCase]:
    """``spyre_main_untracked(SPEC)``: the same compile on torch-spyre main with tracking
    off (``untracked.py``): its stdout is ``compiled`` or ``refused: <reason>``, its
    ``bundle_dirs()`` torch-spyre's bundles. Once per session per spec."""
    done: dict[str, SpyreCompiledCase] = {}

    def run(spec: str) -> SpyreCompiledCase:
        if spec not in done:
            out = tmp_path_factory.mktemp("spyre_main_untracked")
            stdout, stderr = out.parent / f"{out.name}.stdout", out.parent / f"{out.name}.stderr"
            cache = out.parent / f"{out.name}.inductor-cache"
            code = spyre_main_server.run(
                ["compile", "untracked", spec], stdout, stderr, env={"TORCHINDUCTOR_CACHE_DIR": str(cache)}
            )
            done[spec] = SpyreCompiledCase(
                out, code, stdout.read_text(errors="replace"), stderr.read_text(errors="replace"), cache
            )
        return done[spec]

    return run


@pytest.fixture(scope="session")
def spyre_main_unrouted_case(
    tmp_path_factory: pytest.TempPathFactory, torch_spyre_env: dict[str, str]
) -> Iterator[Callable[..., SpyreCompiledCase]]:
    """``spyre_main_unrouted_case(*ARGS)``: ``spyre-provenance compile *ARGS --out DIR`` in a
    process where torch-spyre is booted but the route is not installed: the product's own
    placement (``SpyreBackend.place``) puts the model on ``spyre``, where the stand-in
    backs its tensors with CPU values, which Dynamo compiles as it finds them."""
    server = CompileServer(script=SERVER, env={**torch_spyre_env, "SPYRE_PROVENANCE_ROUTE": "0"})
    done: dict[tuple[str, ...], SpyreCompiledCase] = {}

    def run(*args: str) -> SpyreCompiledCase:
        if args not in done:
            out = tmp_path_factory.mktemp("spyre_main_unrouted")
            stdout, stderr = out.parent / f"{out.name}.stdout", out.parent / f"{out.name}.stderr"
            cache = out.parent / f"{out.name}.inductor-cache"
            code = server.run(
                ["compile", *args, "--out", str(out)], stdout, stderr, env={"TORCHINDUCTOR_CACHE_DIR": str(cache)}
            )
            done[args] = SpyreCompiledCase(
                out, code, stdout.read_text(errors="replace"), stderr.read_text(errors="replace"), cache
            )
        return done[args]

    yield run
    server.close()
