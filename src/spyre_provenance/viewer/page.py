"""The viewer's one HTML file: ``assets/viewer.html`` with the CSS, the JavaScript and the
document (``data.build``) put inline, so it opens from ``file://`` and asks no network for
anything (its Content-Security-Policy forbids every request).

Pure: no torch.
"""

from __future__ import annotations

import html
import json
from importlib import resources
from pathlib import Path
from typing import Any

from spyre_provenance.base.errors import UnusableInput
from spyre_provenance.base.files import atomic_write_bytes
from spyre_provenance.model.layout import VIEWER_PAGE, Layout

#: The page's name in an ``--out`` folder, where ``compile`` and ``open`` write it (``viewer.pages``).
PAGE = VIEWER_PAGE


def _asset(name: str) -> str:
    return resources.files("spyre_provenance.viewer").joinpath("assets").joinpath(name).read_text(encoding="utf-8")


def render(document: dict[str, Any]) -> str:
    """The page for ``document``. The JSON is embedded once, in a ``<script
    type="application/json">``: ``</`` and the line separators JavaScript dislikes are escaped."""
    data = json.dumps(document, ensure_ascii=False, separators=(",", ":"), sort_keys=False)
    data = data.replace("</", "<\\/").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    page = _asset("viewer.html")
    title = f"spyre-provenance view: {document['out']}"
    # one pass each, data last: the JSON may hold any of the placeholders as text
    page = page.replace("@TITLE@", html.escape(title)).replace("@CSS@", _asset("viewer.css"))
    page = page.replace("@JS@", _asset("viewer.js"))
    before, after = page.split("@DATA@", 1)
    return before + data + after


def write(document: dict[str, Any], target: Path) -> int:
    """Write the page atomically; its size in bytes."""
    data = render(document).encode("utf-8")
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(target, data)
    return len(data)


def write_page(
    out: Path,
    target: Path | None = None,
    trace: Path | None = None,
    bundles: list[Path] | None = None,
    compare: str | None = None,
) -> tuple[Path, int]:
    """Build and write the page of ``out`` (with ``compare``, of ``out`` and ``compare`` side
    by side, each ``PATH`` or ``PATH:COMPILE_ID``): (its path, its size in bytes). Raises
    UnusableInput before anything is written."""
    from spyre_provenance.viewer import compared, data, timing

    where = out if compare is None else _path_of(str(out))
    if target is None:  # a log's page goes beside it; a folder's into it
        name = PAGE if compare is None else f"compare.{PAGE}"
        layout = Layout(where)
        target = (
            where.with_name(f"{where.stem}.{name}")
            if where.is_file()
            else layout.viewer_page
            if compare is None
            else layout.compare_page
        )
    if target.is_dir():
        raise UnusableInput(str(target), "is a folder; name the page's file")
    timed = timing.read(trace) if trace is not None else None
    if compare is None:
        document = data.build(out, timed, bundles)
    else:
        document = compared.build(str(out), compare, timed, bundles, trace)
    return target, write(document, target)


def _path_of(name: str) -> Path:
    from spyre_provenance.runtime.compare_folders import split_name

    return split_name(name)[0]
