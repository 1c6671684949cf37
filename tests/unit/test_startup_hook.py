"""The start-up hook's module (``src/spyre_provenance_startup.py``, issue 55): beside the package,
importing nothing of it, and marked for pytest as a module it must not rewrite."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from _pytest.assertion.rewrite import AssertionRewriter

import spyre_provenance_startup
from spyre_provenance.base import environment
from spyre_provenance.plugin import startup


def test_the_variable_is_the_one_the_package_reads() -> None:
    assert spyre_provenance_startup.OUT == environment.OUT


def test_it_imports_nothing_of_the_package() -> None:
    """At start-up, before pytest marks ``spyre_provenance`` for rewriting: the standard
    library only (the package is imported when torch is, by the watcher)."""
    tree = ast.parse(Path(spyre_provenance_startup.__file__).read_text(encoding="utf-8"))
    top = {alias.name.split(".")[0] for node in tree.body if isinstance(node, ast.Import) for alias in node.names} | {
        node.module.split(".")[0] for node in tree.body if isinstance(node, ast.ImportFrom) and node.module
    }
    assert top <= set(sys.stdlib_module_names) | {"__future__"}, top


def test_pytest_leaves_it_as_it_is() -> None:
    """A wheel's top-level modules are marked for rewriting too; this one is imported first,
    so pytest would warn unless its docstring says not to rewrite it."""
    assert AssertionRewriter.is_rewrite_disabled(spyre_provenance_startup.__doc__ or "")


def test_the_vllm_plugin_and_an_old_hook_start_the_same() -> None:
    """The vLLM entry point, and ``start`` for a ``.pth`` copied by an install from before the
    module moved out of the package."""
    assert startup.start is spyre_provenance_startup.start
