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

from where import PACKAGE  # tests/ is on sys.path

#: The layers, lowest first: a module imports only from its own layer or lower ones. A
#: layer is named by module or package prefix.
LAYERS = (
    ("errors", "support", "patches"),  # exceptions and warnings; atomic writes, gc pause; patching torch and undoing it
    ("model", "jsonio"),  # records, wire form, names, detection, folder names; strict JSON reading
    ("mapping", "redact", "inference", "pairing"),  # records -> artifacts; paths; links beyond origins; two runs paired
    ("logs",),  # TORCH_TRACE reading, call sites
    ("validate",),  # the two engines, path walking (reads logs; logs never imports it)
    ("coverage",),  # one judge, on a compile or on a log
    ("golden", "audit_report"),  # cases, normalize, store, diff, the regression check; the provenance audit
    ("runtime",),  # run-time names -> provenance: lookup, profiler-trace annotation, the profiled run
    ("capture", "backends", "examples", "viewer"),  # the only code that touches torch._inductor; the viewer's page
    ("compile",),  # one compile: request, run against eager, checks, profile, ranks, summary
    ("cli", "pytest_plugin", "bench"),  # entry points: imported by nothing
)
#: The only modules that may load torch when imported; every other one must not.
TORCH_ON_IMPORT = (
    "backends.reference.backend",
    "backends.reference.lowering",
    "backends.reference.ops",
    "backends.reference.opspecs",
    "examples",
    "bench.models",
)


def layer(module: str) -> int:
    for rank, prefixes in enumerate(LAYERS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return rank
    raise AssertionError(f"{module} is in no layer: add it to LAYERS")


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
                    f"{child.module}.{a.name}"
                    if f"{child.module}.{a.name}".removeprefix("spyre_provenance.") in known
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
    assert "model.records" in graph["mapping"] and "logs.wrapper_code" in graph["coverage"]
    assert "validate.paths" in graph["cli.validate"]


def test_every_module_has_a_layer(graph):
    for module in graph:
        layer(module)


def test_no_import_cycle(graph):
    assert _cycles(graph) == []


def test_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_imports_point_down(graph):
    upward = sorted(
        f"{module} (layer {layer(module)}) imports {target} (layer {layer(target)})"
        for module, targets in graph.items()
        for target in targets
        if layer(target) > layer(module)
    )
    assert upward == []


def test_entry_points_are_imported_by_nothing(graph):
    top = len(LAYERS) - 1
    importers = sorted(
        f"{module} imports {target}"
        for module, targets in graph.items()
        for target in targets
        if layer(target) == top and target.split(".")[0] != module.split(".")[0]
    )
    assert importers == []


def test_the_torch_list_names_real_modules(graph):
    assert [m for m in TORCH_ON_IMPORT if m not in graph] == []


@pytest.mark.parametrize("module", sorted(set(_modules()) - {""} - set(TORCH_ON_IMPORT)))
def test_module_imports_without_torch(module):
    """Each in a fresh interpreter: nothing imported before it hides what it loads."""
    code = (
        "import importlib, sys\n"
        f"importlib.import_module('spyre_provenance.{module}')\n"
        "assert 'torch' not in sys.modules, 'imported torch'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
