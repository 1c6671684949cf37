"""The one map of the package's modules: docs/contributing.md, *What each folder holds*.

Each layer folder has its entry there, naming every module the folder holds (a subfolder's
too), and every module an entry names exists in its folder. The packages' own docstrings
say what their folder is for and point here; a second map there fell out of step unheld.
"""

from __future__ import annotations

import re

from test_layers import LAYERS  # tests/unit/test_layers.py

from helpers.where import PACKAGE, REPO

CONTRIBUTING = REPO / "docs" / "contributing.md"
#: ``cli``'s subcommands are named by their pattern, one module per subcommand
PATTERNS = {"cli": re.compile(r"\w+_command$")}
#: a module named in an entry: ``layout.py``, not a path (``tests/unit/test_layout.py``)
MODULE = re.compile(r"(?<![/\w.>])(\w+)\.py\b")


def folder_map(text: str) -> dict[str, str]:
    """Folder -> its entry's words, from the map's code block."""
    block = text.split("What each folder holds:\n\n```\n", 1)[1].split("```", 1)[0]
    entries: dict[str, str] = {}
    current = None
    for line in block.splitlines():
        head = re.match(r"^(\w+)/\s+", line)
        if head:
            current = head.group(1)
            entries[current] = line[head.end() :]
        elif line.startswith(" ") and current is not None:
            entries[current] += " " + line.strip()
        else:
            current = None
    return entries


def _unnamed(folder: str, entry: str) -> list[str]:
    named = set(MODULE.findall(entry))
    pattern = PATTERNS.get(folder)
    return sorted(
        path.relative_to(PACKAGE).as_posix()
        for path in (PACKAGE / folder).rglob("*.py")
        if path.stem != "__init__"
        and path.stem not in named
        and not (pattern is not None and pattern.fullmatch(path.stem))
    )


def test_every_layer_folder_has_its_entry():
    entries = folder_map(CONTRIBUTING.read_text())
    assert sorted(f for folders in LAYERS for f in folders if f not in entries) == []


def test_every_module_is_on_the_map():
    entries = folder_map(CONTRIBUTING.read_text())
    folders = [f for folders in LAYERS for f in folders]
    assert [m for f in folders for m in _unnamed(f, entries.get(f, ""))] == []


def test_every_module_on_the_map_exists():
    entries = folder_map(CONTRIBUTING.read_text())
    stems = {f: {p.stem for p in (PACKAGE / f).rglob("*.py")} for folders in LAYERS for f in folders}
    gone = [
        f"{f}/{m}.py" for f, entry in entries.items() if f in stems for m in MODULE.findall(entry) if m not in stems[f]
    ]
    assert gone == []


def test_the_map_reader_finds_a_module_left_off():
    # the rules above read the block; a module missing from its entry must fail them
    text = (
        "What each folder holds:\n\n```\nlogs/       tracelog.py (reading), graphs.py\n            post_grad.py\n```\n"
    )
    entries = folder_map(text)
    assert set(MODULE.findall(entries["logs"])) == {"tracelog", "graphs", "post_grad"}
    assert "logs/wrapper_code.py" in _unnamed("logs", entries["logs"])
    assert MODULE.findall("tests/unit/test_layout.py holds that") == []
