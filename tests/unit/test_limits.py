"""The package's limits: no module over 600 lines, no function over 60, no basename twice.

A newcomer reads a module in one sitting and a function in one screen; a basename says one
job, so two files of one name in ``src/`` would name two jobs alike. Counted as
``tests/unit/test_layers.py`` reads the package: from the source, with ``ast``.
"""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

from helpers.where import PACKAGE  # tests/ is on sys.path

MODULE_LINES = 600
FUNCTION_LINES = 60


def _sources() -> list[Path]:
    """The package's modules, and the top-level ones beside it in ``src/`` (the start-up hook's)."""
    return sorted([*PACKAGE.rglob("*.py"), *PACKAGE.parent.glob("*.py")])


def _name(path: Path) -> str:
    return str(path.relative_to(PACKAGE.parent))


def test_no_module_over_the_limit() -> None:
    over = {_name(p): n for p in _sources() if (n := len(p.read_text().splitlines())) > MODULE_LINES}
    assert over == {}, f"modules over {MODULE_LINES} lines: split them by job"


def test_no_function_over_the_limit() -> None:
    over = {}
    for path in _sources():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > FUNCTION_LINES:
                    over[f"{_name(path)}:{node.lineno} {node.name}"] = length
    assert over == {}, f"functions over {FUNCTION_LINES} lines: make them named steps"


def test_no_basename_twice() -> None:
    names = Counter(p.name for p in _sources() if p.name != "__init__.py")
    twice = {name: sorted(_name(p) for p in _sources() if p.name == name) for name, n in names.items() if n > 1}
    assert twice == {}, "one basename, one job"


def test_the_limits_see_the_whole_package() -> None:
    """The walk reads every folder of the package (a test that read nothing would pass)."""
    folders = {p.parent.relative_to(PACKAGE.parent).parts[:2] for p in _sources()}
    assert (
        len(_sources()) > 100 and ("spyre_provenance", "capture") in folders and ("spyre_provenance", "cli") in folders
    )
    assert "spyre_provenance_startup.py" in {_name(p) for p in _sources()}
