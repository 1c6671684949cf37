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
from spyre_main import boot, locate
from where import REPO

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
    """The environment a process needs to boot it (``boot.environment``), the current one included."""
    boot.install_dxp(torch_spyre.tools)
    return {**os.environ, **boot.environment(torch_spyre.source, torch_spyre.tools), "PYTHONPATH": _pythonpath()}


def _pythonpath() -> str:
    parts = [str(REPO / "tests"), os.environ.get("PYTHONPATH", "")]
    return os.pathsep.join(p for p in parts if p)


@pytest.fixture(scope="session")
def torch_spyre_python(torch_spyre_env: dict[str, str]) -> Callable[[str], Any]:
    """``torch_spyre_python(CODE)``: run CODE in a fresh interpreter where torch-spyre is
    booted on the stand-in (``boot.boot_from_env`` runs first), and return the JSON value
    it prints as its last line of stdout. For calling torch-spyre's own functions, e.g.
    ``build_kernel_provenance_descriptor`` or ``provenance._stable_id``, on data a test
    read from a compile's output."""

    def run(code: str, timeout: float = 300) -> Any:
        script = "from spyre_main import boot\nboot.boot_from_env()\n" + textwrap.dedent(code)
        done = subprocess.run(
            [sys.executable, "-c", script], env=torch_spyre_env, capture_output=True, text=True, timeout=timeout
        )
        if done.returncode != 0:
            raise AssertionError(f"torch_spyre_python failed ({done.returncode}):\n{done.stderr[-3000:]}")
        lines = done.stdout.strip().splitlines()
        return json.loads(lines[-1]) if lines else None

    return run


@pytest.fixture(scope="session")
def spyre_main_server(torch_spyre_env: dict[str, str]) -> Iterator[CompileServer]:
    saved = dict(os.environ)
    os.environ.update(torch_spyre_env)  # inherited by the worker when it starts
    server = CompileServer(script=SERVER)
    try:
        yield server
    finally:
        server.close()
        os.environ.clear()
        os.environ.update(saved)


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
