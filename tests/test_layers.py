"""The package's layers: imports point one way, and the pure core never loads torch.

The import graph is read from the source (``ast``), function-local imports included,
``if TYPE_CHECKING:`` blocks left out (they never run). Purity is checked by importing in a
fresh interpreter and looking at ``sys.modules``.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parents[1] / "src" / "spyre_provenance"

#: Modules that read and judge artifacts: no torch, and nothing above them.
CORE = (
    "errors", "fsutil", "records", "mapping", "redact", "rules", "fastpath", "schemas",
    "path_validation", "folders", "tracelog", "wrapper_code", "coverage", "invariants", "golden",
    "tlparse_page", "tlparse_run", "summary",
)
#: What sits above the core: capture (hook, emit), backends, entry points.
ABOVE_CORE = ("hook", "emit", "backends", "compile_run", "examples", "commands", "cli", "pytest_plugin", "bench")
#: Entry points and adapters that must stay cheap to import (torch only once they run).
TORCH_FREE_ON_IMPORT = (*CORE, "cli", "commands.validate", "commands.diff", "commands.golden", "hook", "emit")


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        if parts[-1] == "__main__":
            continue
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def _imports(path: Path, known: set[str]) -> set[str]:
    """Our modules ``path`` imports anywhere (function bodies too), TYPE_CHECKING aside."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue
            if isinstance(child, ast.Import):
                names = [a.name for a in child.names]
            elif isinstance(child, ast.ImportFrom) and child.module and child.level == 0:
                # ``from pkg import mod`` imports pkg.mod; ``from mod import name`` imports mod
                names = [
                    f"{child.module}.{a.name}" if f"{child.module}.{a.name}".removeprefix("spyre_provenance.") in known
                    else child.module
                    for a in child.names
                ]
            else:
                names = []
            for name in names:
                if name.startswith("spyre_provenance."):
                    short = name.removeprefix("spyre_provenance.")
                    if short in known:
                        found.add(short)
            visit(child)

    visit(ast.parse(path.read_text()))
    return found


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules) - {""}
    return {name: _imports(path, known) - {name} for name, path in modules.items() if name}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def strong(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                strong(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            strong(node)
    return found


def test_the_graph_is_read(graph):
    # a reader that found nothing would pass every rule below
    assert "records" in graph["mapping"] and "coverage" in graph["hook"]
    assert "path_validation" in graph["commands.validate"]


def test_no_import_cycle(graph):
    assert _cycles(graph) == []


def test_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


@pytest.mark.parametrize("module", CORE)
def test_core_imports_nothing_above_it(graph, module):
    above = sorted(m for m in graph[module] if m.split(".")[0] in ABOVE_CORE)
    assert above == [], f"{module} imports {above}"


def test_torch_free_modules_import_without_torch():
    code = "\n".join(
        [
            "import importlib, sys",
            f"for name in {list(TORCH_FREE_ON_IMPORT)!r}:",
            "    importlib.import_module('spyre_provenance.' + name)",
            "    assert 'torch' not in sys.modules, name + ' imported torch'",
        ]
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
