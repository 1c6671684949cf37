"""MkDocs hook: the schema reference page, written at build time from ``schemas/``.

``schemas/<artifact>/v<N>.schema.json`` is the source of truth; ``schemas.md`` is never
edited by hand, so it cannot drift from the files. ``render()`` is importable without
MkDocs (tests/unit/test_docs.py checks that the page lists every schema file).
"""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT / "schemas"
PAGE = "schemas.md"


def schema_files() -> list[Path]:
    """Every schema file, artifact by artifact, newest version first."""
    files = sorted(SCHEMAS.glob("*/v*.schema.json"))
    return sorted(files, key=lambda p: (p.parent.name, -int(p.name[1:].split(".")[0])))


def _type(prop: dict) -> str:
    if "type" in prop:
        kinds = prop["type"] if isinstance(prop["type"], list) else [prop["type"]]
        return " or ".join(kinds)
    if "const" in prop:
        return f"const {json.dumps(prop['const'])}"
    if "enum" in prop:
        return "one of " + ", ".join(json.dumps(v) for v in prop["enum"])
    if "$ref" in prop:
        return prop["$ref"].rsplit("/", 1)[-1]
    for key in ("oneOf", "anyOf"):
        if key in prop:
            return " or ".join(_type(p) for p in prop[key])
    return "any"


def _cell(text: str) -> str:
    """One line of table or paragraph text; ``<kernel>:<N>`` must not read as an HTML tag."""
    text = " ".join(str(text).split())
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("|", "\\|")


def _section(path: Path) -> list[str]:
    schema = json.loads(path.read_text())
    rel = path.relative_to(ROOT).as_posix()
    lines = [f"### {schema.get('title', rel)}", "", f"`{rel}` · `$id` `{schema.get('$id', '-')}`", ""]
    if schema.get("description"):
        lines += [_cell(schema["description"]), ""]
    props = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    if props:
        lines += ["| key | type | required | what it holds |", "|---|---|---|---|"]
        for name, prop in props.items():
            prop = prop if isinstance(prop, dict) else {}
            lines.append(
                f"| `{name}` | {_cell(_type(prop))} | {'yes' if name in required else ''} | {_cell(prop.get('description', ''))} |"
            )
        lines.append("")
    elif "propertyNames" in schema:
        keys = schema["propertyNames"]
        ref = keys.get("$ref", "").rsplit("/", 1)[-1]
        what = (schema.get("$defs", {}).get(ref) or keys).get("description", "see the full schema")
        lines += [f"An object; each key: {_cell(what)}", ""]
    if schema.get("$comment"):
        lines += [f"Checked beyond the schema: {_cell(schema['$comment'])}", ""]
    lines += ['??? note "Full schema"', "", "    ```json"]
    lines += ["    " + line for line in json.dumps(schema, indent=2, ensure_ascii=False).splitlines()]
    lines += ["    ```", ""]
    return lines


def render() -> str:
    """The whole page, as Markdown."""
    lines = [
        "# Schemas",
        "",
        "Generated at build time from `schemas/<artifact>/v<N>.schema.json` (JSON Schema",
        "2020-12), the source of truth that `validate` checks against and the wheel ships.",
        "What a schema cannot say (inverse maps, unique handles, ...) is on",
        "[Artifacts and validation](artifacts.md).",
        "",
    ]
    current = None
    for path in schema_files():
        if path.parent.name != current:
            current = path.parent.name
            versions = ", ".join(p.name.split(".")[0] for p in schema_files() if p.parent.name == current)
            lines += [f"## `{current}`", "", f"Versions: {versions}.", ""]
        lines += _section(path)
    return "\n".join(lines)


def on_files(files, config):  # MkDocs calls it with these two
    """Add the generated page to the site's files."""
    from mkdocs.structure.files import File

    files.append(File.generated(config, PAGE, content=render()))
    return files
