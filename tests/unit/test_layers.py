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

from helpers.where import PACKAGE  # tests/ is on sys.path

#: The layers, lowest first, as the package's folders: a module imports only from its own
#: layer or lower ones. Folders on one line are one layer. Every module of the package lives
#: in one of these folders but the package root's two (``ROOT``).
LAYERS = (
    ("base",),  # exit codes and errors; atomic files, gc pause; patching torch and undoing it
    ("model",),  # records, wire form, names, detection, folder names, frames; strict JSON reading
    ("links",),  # records -> artifacts; links beyond origins; two runs paired; paths redacted
    ("logs",),  # TORCH_TRACE reading, call sites
    ("validate",),  # the two engines, path walking, the one coverage judge (reads logs; logs never imports it)
    ("golden", "audit"),  # cases, normalize, store, diff, the regression check; the provenance audit
    ("runtime",),  # run-time names -> provenance: lookup, profiler-trace annotation
    ("capture", "backends", "viewer"),  # the only code that touches torch._inductor; the viewer's page
    ("launch",),  # running programs: the launcher, the early end, the run's summary and report
    ("compile",),  # one compile: request, run against eager, checks, profile, ranks, summary; the built-in models
    ("cli", "plugin"),  # entry points: imported by nothing
)
#: The package root's modules, a layer above ``cli``/``plugin``: ``__init__`` and ``types``
#: (the public API) and ``__main__`` (``python -m``) import from the folders; nothing in them
#: imports these.
ROOT = ("__init__", "__main__", "types")
#: The only modules that may load torch when imported; every other one must not.
TORCH_ON_IMPORT = (
    "backends.reference.backend",
    "backends.reference.lowering",
    "backends.reference.ops",
    "backends.reference.opspecs_from_nodes",
    "backends.reference.scratchpad",
    "compile.examples",
)


def layer(module: str) -> int:
    if module in ROOT:
        return len(LAYERS)
    folder = module.split(".")[0]
    for rank, folders in enumerate(LAYERS):
        if folder in folders:
            return rank
    raise AssertionError(f"{module} is in no layer folder: put it in one of LAYERS")


def _modules() -> dict[str, Path]:
    """Module name (``capture.hook``, ``cli`` for ``cli/__init__.py``, ``__init__`` and
    ``__main__`` for the root's two) -> its file."""
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        if len(parts) > 1 and parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _imports(path: Path, known: set[str]) -> set[str]:
    """Our modules ``path`` imports anywhere (function bodies too), TYPE_CHECKING aside.

    ``import spyre_provenance`` and ``from spyre_provenance import NAME`` (NAME not a
    module of ours) import the root's ``__init__``."""
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
                if name == "spyre_provenance":
                    found.add("__init__")
                elif name.startswith("spyre_provenance."):
                    short = name.removeprefix("spyre_provenance.")
                    if short in known:
                        found.add(short)
            visit(child)

    visit(ast.parse(path.read_text()))
    return found


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    return {name: _imports(path, known) - {name} for name, path in modules.items()}


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
    assert "model.records" in graph["links.mapping"] and "logs.wrapper_code" in graph["validate.coverage"]
    assert "validate.paths" in graph["cli.validate_command"]
    assert graph["__main__"] == {"cli"}  # the root's modules are read too


def test_an_import_of_the_root_is_read(tmp_path):
    # the rule below must see an arrow up to the root: ``from spyre_provenance import NAME``
    # where NAME is no module (``__version__``), and a plain ``import spyre_provenance``
    known = set(_modules())
    for line in ("from spyre_provenance import __version__", "import spyre_provenance"):
        (tmp_path / "probe.py").write_text(f"def f():\n    {line}\n")
        assert _imports(tmp_path / "probe.py", known) == {"__init__"}, line
    (tmp_path / "probe.py").write_text("from spyre_provenance import golden\n")
    assert _imports(tmp_path / "probe.py", known) == {"golden"}


def test_every_module_has_a_layer(graph):
    for module in graph:
        layer(module)
    assert {layer(module) for module in ROOT} == {len(LAYERS)}  # above every folder


def test_the_top_level_is_the_layer_folders():
    """Nothing loose at the top: the public API (``__init__``, ``types``), ``__main__`` and a folder per layer."""
    top = {p.name for p in PACKAGE.iterdir() if p.name != "__pycache__"}
    folders = {folder for folders in LAYERS for folder in folders}
    assert top - {f"{module}.py" for module in ROOT} == folders
    assert all((PACKAGE / folder / "__init__.py").is_file() for folder in folders)


def test_a_module_outside_the_layer_folders_is_found():
    # the rule above reads the folders; a loose module must fail it, not slip past
    with pytest.raises(AssertionError, match="in no layer folder"):
        layer("loose")


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
    # but by the root above them (``__main__`` runs ``cli.main``); the root itself is
    # imported by nothing, which ``test_imports_point_down`` holds (it is the top layer)
    top = len(LAYERS) - 1
    importers = sorted(
        f"{module} imports {target}"
        for module, targets in graph.items()
        for target in targets
        if layer(target) == top and target.split(".")[0] != module.split(".")[0] and module not in ROOT
    )
    assert importers == []


def test_no_command_module_imports_another(graph):
    """A subcommand's module (``cli.<name>_command``) reaches what another command does
    through the layers below, never through that command's module."""
    commands = [module for module in graph if module.startswith("cli.") and module.endswith("_command")]
    assert [f"{m} imports {t}" for m in commands for t in sorted(graph[m]) if t in commands] == []


def test_the_torch_list_names_real_modules(graph):
    assert [m for m in TORCH_ON_IMPORT if m not in graph] == []


@pytest.mark.parametrize("module", sorted(set(_modules()) - set(ROOT) - set(TORCH_ON_IMPORT)))
def test_module_imports_without_torch(module):
    """Each in a fresh interpreter: nothing imported before it hides what it loads."""
    code = (
        "import importlib, sys\n"
        f"importlib.import_module('spyre_provenance.{module}')\n"
        "assert 'torch' not in sys.modules, 'imported torch'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]


#: torch's internals a compile touches only through ``capture/`` (``capture.trace_log``,
#: ``capture.inductor``): its trace logger and handler, Inductor's config and modules
TORCH_INTERNALS = ("torch._inductor", "torch._logging", "torch.__trace")


def test_compile_touches_torch_internals_only_through_capture():
    touching = sorted(
        f"{path.relative_to(PACKAGE)}: {name}"
        for path in sorted((PACKAGE / "compile").rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        for name in _internals(node)
    )
    assert touching == []


def _internals(node: ast.AST) -> list[str]:
    """The torch internals an import or a string (a logger's name) of ``node`` names."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    elif isinstance(node, ast.ImportFrom) and node.module:
        names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
    elif isinstance(node, ast.Constant) and isinstance(node.value, str):
        names = [node.value]
    else:
        return []
    return [n for n in names if any(n == t or n.startswith(t + ".") for t in TORCH_INTERNALS)]


def test_the_internals_check_finds_a_touch():
    found = [
        n
        for node in ast.walk(ast.parse("from torch._inductor import config\nlog = 'torch.__trace'"))
        for n in _internals(node)
    ]
    assert found == ["torch._inductor", "torch._inductor.config", "torch.__trace"]
