"""One module is the public API: ``spyre_provenance`` and its ``__all__``.

The package's folders are internal (docs/contributing.md). What holds the line: the API
page documents exactly ``__all__`` and nothing else, the pages and the README show code
that imports only the top-level module, every public name resolves without loading torch
up front, and the lazy names' static imports (read by the API pages and mypy) agree with
where they are loaded from.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys

import spyre_provenance
from helpers.where import PACKAGE, REPO

DOCS = REPO / "docs"
DIRECTIVE = re.compile(r"^::: (\S+)$", re.MULTILINE)
PUBLIC = set(spyre_provenance.__all__) - {"__version__"}


def test_the_api_page_documents_exactly_the_public_names():
    documented = DIRECTIVE.findall((DOCS / "api.md").read_text())
    assert sorted(documented) == sorted(f"spyre_provenance.{name}" for name in PUBLIC)


def test_no_page_documents_an_internal_module():
    found = {page.name: DIRECTIVE.findall(page.read_text()) for page in DOCS.glob("*.md")}
    internal = {
        page: [d for d in names if d.removeprefix("spyre_provenance.") not in PUBLIC] for page, names in found.items()
    }
    assert {page: names for page, names in internal.items() if names} == {}


def _code_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, re.DOTALL)


def test_the_pages_show_code_that_imports_only_the_public_module():
    wrong = []
    for page in [*DOCS.glob("*.md"), REPO / "README.md"]:
        for block in _code_blocks(page.read_text()):
            for node in ast.walk(ast.parse(block)):
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("spyre_provenance"):
                    if node.module != "spyre_provenance" or any(a.name not in PUBLIC for a in node.names):
                        wrong.append(f"{page.name}: from {node.module} import ...")
                elif isinstance(node, ast.Import):
                    wrong += [
                        f"{page.name}: import {a.name}" for a in node.names if a.name.startswith("spyre_provenance.")
                    ]
    assert wrong == []


def test_a_code_block_reader_finds_an_internal_import():
    # the rule above reads the blocks; an internal import must fail it, not slip past
    (block,) = _code_blocks("```python\nfrom spyre_provenance.capture import hook\n```\n")
    (node,) = ast.parse(block).body
    assert isinstance(node, ast.ImportFrom) and node.module != "spyre_provenance"


def test_the_lazy_names_are_imported_statically_from_where_they_load():
    """``if TYPE_CHECKING:`` in ``__init__`` (the API pages and mypy read it) names the same
    home for each lazy name as ``_LAZY`` (what runs)."""
    tree = ast.parse((PACKAGE / "__init__.py").read_text())
    (block,) = [n for n in tree.body if isinstance(n, ast.If) and "TYPE_CHECKING" in ast.unparse(n.test)]
    static = {
        a.name: node.module
        for node in block.body
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("spyre_provenance")
        for a in node.names
    }
    assert static == spyre_provenance._LAZY
    assert set(static) <= PUBLIC


def test_every_public_name_resolves_to_its_home():
    import importlib

    for name, home in spyre_provenance._LAZY.items():
        assert getattr(spyre_provenance, name) is getattr(importlib.import_module(home), name), name
    assert all(getattr(spyre_provenance, name, None) is not None for name in PUBLIC)


def test_importing_the_api_loads_no_torch_and_none_of_the_compile():
    code = (
        "import sys, spyre_provenance\n"
        "loaded = [m for m in sys.modules if m in ('torch', 'pytest', 'jsonschema')"
        " or m.startswith(('spyre_provenance.capture', 'spyre_provenance.compile', 'spyre_provenance.plugin'))]\n"
        "assert not loaded, loaded\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
