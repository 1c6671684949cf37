"""The front door holds: a short README whose every example is backed, links that land,
a docs site that lists what exists, a schema page that lists every schema, a changelog
whose newest release is the package's version. No MkDocs needed: ``make docs`` builds the
site in strict mode; these are the checks a reader would otherwise make by hand."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import re
import sys
from pathlib import Path

import spyre_provenance
from helpers.where import REPO

ROOT = REPO
README = ROOT / "README.md"
DOCS = ROOT / "docs"
OUTPUTS = DOCS / "outputs"
MAX_README_LINES = 220
#: a transcript's exit status: part of the output of the command above it, not a command
ECHO_STATUS = "$ echo $?"


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(name, module)
    spec.loader.exec_module(module)
    return module


regen = _load(DOCS / "scripts" / "regen_outputs.py", "regen_outputs")
schema_page = _load(DOCS / "hooks" / "schemas.py", "docs_schema_page")


def code_blocks(text: str) -> list[tuple[str, list[str]]]:
    """(info string, lines) of every fenced block."""
    return [
        (m.group(1), m.group(2).splitlines())
        for m in re.finditer(r"^```(\w*)\n(.*?)^```", text, re.MULTILINE | re.DOTALL)
    ]


def links(text: str) -> list[str]:
    return re.findall(r"\]\(([^)\s]+)\)", text)


def documented() -> dict[str, list[str]]:
    """Documented command line -> its output lines (normalized)."""
    found = {}
    for path in OUTPUTS.glob("*.txt"):
        first, *rest = regen.normalize(path.read_text()).splitlines()
        found[first.removeprefix("$ ")] = rest
    return found


def nav_pages() -> list[str]:
    return re.findall(r":\s*([\w./-]+\.md)\s*$", (ROOT / "mkdocs.yml").read_text(), re.MULTILINE)


def test_readme_is_short():
    lines = README.read_text().count("\n")
    assert lines < MAX_README_LINES, f"README.md has {lines} lines; move detail into docs/"


def test_every_readme_command_is_a_documented_output():
    outputs = documented()
    seen = 0
    for info, lines in code_blocks(README.read_text()):
        if info in ("python", "yaml"):
            continue
        for i, line in enumerate(lines):
            if not line.startswith("$ ") or line == ECHO_STATUS:
                continue
            command = line[2:]
            assert command in outputs, f"README runs `{command}`, which no docs/outputs file shows"
            shown = []
            for after in lines[i + 1 :]:
                if after.startswith("$ ") and after != ECHO_STATUS:
                    break
                shown.append(after)
            if shown:  # what the README prints under it is the real output, whole
                assert regen.normalize("\n".join(shown)).splitlines() == outputs[command], command
            seen += 1
    assert seen >= 3


def test_every_other_readme_command_is_one_the_suite_runs():
    """Shell blocks without a ``$`` transcript hold commands only: make targets of the
    Makefile, pip installs of extras pyproject declares."""
    targets = set(re.findall(r"^([\w-]+):", (ROOT / "Makefile").read_text(), re.MULTILINE))
    extras = set(importlib.metadata.metadata("spyre-provenance").get_all("Provides-Extra"))
    for info, lines in code_blocks(README.read_text()):
        if info in ("python", "yaml") or any(line.startswith("$ ") for line in lines):
            continue
        for line in filter(str.strip, lines):
            command = line.split("#")[0].split()
            if command[0] == "make":
                assert command[1] in targets, line
            else:
                assert command[:2] == ["pip", "install"], f"README shows `{line}` without a documented output"
                extra = re.fullmatch(r"'?spyre-provenance(?:\[(\w+)\])?'?", command[2])
                assert extra and (extra.group(1) is None or extra.group(1) in extras), line


def test_readme_links_land_on_existing_pages():
    pages = set(nav_pages())
    local = [link for link in links(README.read_text()) if "://" not in link]
    assert local
    for link in local:
        path = link.split("#")[0]
        assert (ROOT / path).exists(), f"README links to {link}, which does not exist"
        if path.startswith("docs/") and path.endswith(".md"):
            assert path.removeprefix("docs/") in pages, f"README links to {link}, which the site's nav leaves out"


def test_the_site_lists_every_page_and_only_pages_that_exist():
    pages = nav_pages()
    written = {p.relative_to(DOCS).as_posix() for p in DOCS.glob("*.md")}
    assert written | {schema_page.PAGE} == set(pages)


def test_the_home_page_sends_a_reader_to_every_page():
    """docs/index.md's "Where to go next" links every page of the nav, so a page added to
    the site is added there too."""
    home = (DOCS / "index.md").read_text()
    table = home.split("## Where to go next", 1)[1].split("\n## ", 1)[0]
    linked = {link.split("#")[0] for link in links(table)}
    missing = [page for page in nav_pages() if page != "index.md" and page not in linked]
    assert missing == [], f"docs/index.md's Where to go next leaves out {missing}"


def test_every_documented_output_is_shown_on_a_page():
    included = set()
    for page in DOCS.glob("*.md"):
        included |= set(re.findall(r'--8<-- "outputs/([\w-]+)\.txt"', page.read_text()))
    assert included == {p.stem for p in OUTPUTS.glob("*.txt")}


def test_schema_page_lists_every_schema_file():
    page = schema_page.render()
    files = sorted((ROOT / "schemas").rglob("*.schema.json"))
    assert files
    for path in files:
        assert f"`{path.relative_to(ROOT).as_posix()}`" in page, path


def test_changelog_starts_at_the_package_version():
    text = (ROOT / "CHANGELOG.md").read_text()
    headings = re.findall(r"^## \[([^\]]+)\](?: - (\d{4}-\d{2}-\d{2}))?$", text, re.MULTILINE)
    assert headings[0] == ("Unreleased", "")
    version, date = headings[1]
    assert version == spyre_provenance.__version__ and date, headings[1]
