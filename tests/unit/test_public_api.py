"""Two modules are the public API: ``spyre_provenance`` (the verbs, their outcomes, the
errors) and ``spyre_provenance.types`` (the records inside the outcomes), each by its ``__all__``.

The package's folders are internal (docs/contributing.md). What holds the line: the API
page documents exactly the two ``__all__`` and nothing else, the pages and the README show
code that imports only the two modules, every public name resolves without loading torch
up front, and the lazy names' static imports (read by the API pages and mypy) agree with
where they are loaded from. The names the top level also had before still resolve, each with a
DeprecationWarning naming its new home; the package's own code never reads them there.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys

import pytest

import spyre_provenance
import spyre_provenance.types
from helpers.where import PACKAGE, REPO

DOCS = REPO / "docs"
DIRECTIVE = re.compile(r"^::: (\S+)$", re.MULTILINE)
#: the two public modules, and each one's file
MODULES = {spyre_provenance: PACKAGE / "__init__.py", spyre_provenance.types: PACKAGE / "types.py"}
#: every public name, as the pages spell it: ``spyre_provenance.enable``, ``spyre_provenance.types.GraphResult``
PUBLIC = {f"{module.__name__}.{name}" for module in MODULES for name in module.__all__ if name != "__version__"}


def test_the_top_level_is_verbs_outcomes_and_errors():
    """What a user holds in their head: about twenty names, no internal seam among them."""
    assert len(spyre_provenance.__all__) <= 22
    assert not {"Layout", "Inductor"} & {*spyre_provenance.__all__, *spyre_provenance.types.__all__}
    assert not set(spyre_provenance.__all__) & set(spyre_provenance.types.__all__)  # each name has one home


def test_the_api_page_documents_exactly_the_public_names():
    documented = DIRECTIVE.findall((DOCS / "api.md").read_text())
    assert sorted(documented) == sorted(PUBLIC)


def test_no_page_documents_an_internal_module():
    found = {page.name: DIRECTIVE.findall(page.read_text()) for page in DOCS.glob("*.md")}
    internal = {page: [d for d in names if d not in PUBLIC] for page, names in found.items()}
    assert {page: names for page, names in internal.items() if names} == {}


def _code_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, re.DOTALL)


def test_the_pages_show_code_that_imports_only_the_public_module():
    wrong = []
    for page in [*DOCS.glob("*.md"), REPO / "README.md"]:
        for block in _code_blocks(page.read_text()):
            for node in ast.walk(ast.parse(block)):
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("spyre_provenance"):
                    if any(f"{node.module}.{a.name}" not in PUBLIC for a in node.names):
                        wrong.append(f"{page.name}: from {node.module} import ...")
                elif isinstance(node, ast.Import):
                    wrong += [
                        f"{page.name}: import {a.name}"
                        for a in node.names
                        if a.name.startswith("spyre_provenance.") and a.name != "spyre_provenance.types"
                    ]
    assert wrong == []


def test_a_code_block_reader_finds_an_internal_import():
    # the rule above reads the blocks; an internal import must fail it, not slip past
    (block,) = _code_blocks("```python\nfrom spyre_provenance.capture import hook\n```\n")
    (node,) = ast.parse(block).body
    assert isinstance(node, ast.ImportFrom) and f"{node.module}.hook" not in PUBLIC


@pytest.mark.parametrize("module", list(MODULES), ids=lambda m: m.__name__)
def test_the_lazy_names_are_imported_statically_from_where_they_load(module):
    """``if TYPE_CHECKING:`` in each public module (the API pages and mypy read it) names the
    same home for each lazy name as ``_LAZY`` (what runs)."""
    tree = ast.parse(MODULES[module].read_text())
    (block,) = [n for n in tree.body if isinstance(n, ast.If) and "TYPE_CHECKING" in ast.unparse(n.test)]
    static = {
        a.name: node.module
        for node in block.body
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("spyre_provenance")
        for a in node.names
    }
    assert static == module._LAZY
    assert {f"{module.__name__}.{name}" for name in static} <= PUBLIC


@pytest.mark.parametrize("module", list(MODULES), ids=lambda m: m.__name__)
def test_every_public_name_resolves_to_its_home(module):
    import importlib

    for name, home in module._LAZY.items():
        assert getattr(module, name) is getattr(importlib.import_module(home), name), name
    assert all(getattr(module, name, None) is not None for name in module.__all__)


@pytest.mark.parametrize("name", sorted(spyre_provenance._DEPRECATED))
def test_a_name_the_top_level_had_still_resolves_and_says_where_it_went(name):
    home, instead = spyre_provenance._DEPRECATED[name]
    with pytest.warns(DeprecationWarning, match=f"spyre_provenance.{name} is deprecated: use ") as caught:
        got = getattr(spyre_provenance, name)
    assert got is getattr(__import__(home, fromlist=[name]), name)
    assert instead in str(caught[0].message)
    if home == "spyre_provenance.types":
        assert got is getattr(spyre_provenance.types, name)


def test_the_package_reads_no_deprecated_name_of_its_own():
    """A strict suite (``filterwarnings = error``) meets a deprecation only where it reads
    one: the package, the fixture and the command never do."""
    code = (
        "import warnings; warnings.simplefilter('error')\n"
        "import spyre_provenance, spyre_provenance.types\n"
        "from spyre_provenance import cli, enable, tracking, compile_request, CompileOutcome\n"
        "from spyre_provenance.plugin import pytest_fixture\n"
        "from spyre_provenance.types import GraphResult, Backend\n"
        "import spyre_provenance.capture.attach, spyre_provenance.compile.job\n"
    )
    done = subprocess.run([sys.executable, "-W", "error", "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    wrong = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == "spyre_provenance":
                wrong += [f"{path.name}: {a.name}" for a in node.names if a.name in spyre_provenance._DEPRECATED]
            elif (
                isinstance(node, ast.Attribute)
                and ast.unparse(node.value) == "spyre_provenance"
                and node.attr in spyre_provenance._DEPRECATED
            ):
                wrong.append(f"{path.name}: spyre_provenance.{node.attr}")
    assert wrong == []


def test_importing_the_api_loads_no_torch_and_none_of_the_compile():
    code = (
        "import sys, spyre_provenance, spyre_provenance.types\n"
        "loaded = [m for m in sys.modules if m in ('torch', 'pytest', 'jsonschema')"
        " or m.startswith(('spyre_provenance.capture', 'spyre_provenance.compile', 'spyre_provenance.plugin'))]\n"
        "assert not loaded, loaded\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
