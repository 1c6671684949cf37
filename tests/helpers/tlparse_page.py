"""Read a tlparse ``provenance_tracking_*.html`` page the way its script does (pure).

The page embeds its line links as ``<script id="lineMappings">`` JSON (line numbers of the
three panels: pre-grad graph, post-grad graph, generated code) and shows each panel's text
in a ``<pre>``; the script numbers lines of each panel's ``textContent``. Parsing the same
way lets a test check, without a browser, which code lines a user can click.
"""

from __future__ import annotations

import html
import json
import re

import msgspec

from spyre_provenance.logs import wrapper_code

_PANEL = r'<div id="{id}" class="editor">\s*<pre>(?P<body>.*?)</div>'
_MAPPINGS = re.compile(r'<script id="lineMappings" type="application/json">(.*?)</script>', re.S)
_TAG = re.compile(r"<[^>]+>")
_PRE_NEWLINE = re.compile(r"(<pre[^>]*>)\r?\n")


class Page(msgspec.Struct):
    pre_grad: list[str]
    post_grad: list[str]
    code: list[str]
    #: lineMappings: {"preToPost": {"10": [4, 5]}, "pyCodeToPost": {...}, ...}
    links: dict[str, dict[str, list[int]]]

    def code_links(self) -> dict[int, list[int]]:
        """Generated-code line -> post-grad graph lines (Python or C++ wrapper)."""
        merged = {**self.links.get("cppCodeToPost", {}), **self.links.get("pyCodeToPost", {})}
        return {int(k): v for k, v in merged.items()}


def _panel_text(page: str, panel_id: str) -> list[str]:
    match = re.search(_PANEL.format(id=panel_id), page, re.S)
    if match is None:
        return []
    body = match["body"]
    body = body[: body.rfind("</pre>")] if "</pre>" in body else body
    # An HTML parser drops one newline right after a <pre> start tag; so must we, or every
    # line number is off by one against the page's own links.
    body = _PRE_NEWLINE.sub(r"\1", body)
    return html.unescape(_TAG.sub("", body)).split("\n")


def parse_page(page: str) -> Page:
    mappings = _MAPPINGS.search(page)
    return Page(
        pre_grad=_panel_text(page, "preGradGraph"),
        post_grad=_panel_text(page, "postGradGraph"),
        code=_panel_text(page, "generatedCode"),
        links=json.loads(mappings.group(1)) if mappings else {},
    )


class KernelLine(msgspec.Struct, frozen=True):
    key: str  # name:N from the handle comment
    line: int  # 1-based line of the call in the code panel
    post_grad_lines: list[int]
    post_grad_nodes: list[str]


def kernel_lines(page: Page) -> list[KernelLine]:
    """Every call line a handle comment announces, with the post-grad lines it links to."""
    links = page.code_links()
    found: list[KernelLine] = []
    for index, text in enumerate(page.code):
        comment = wrapper_code.HANDLE_COMMENT.match(text)
        if not comment:
            continue
        # tlparse highlights the next line naming the kernel after the comment
        for offset, candidate in enumerate(page.code[index + 1 :], start=index + 2):
            if comment["name"] in candidate:
                targets = links.get(offset, [])
                found.append(
                    KernelLine(
                        comment["key"],
                        offset,
                        targets,
                        [_node_name(page.post_grad, t) for t in targets],
                    )
                )
                break
    return found


def _node_name(lines: list[str], line: int) -> str:
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    match = re.match(r"\s*([A-Za-z_]\w*)\s*[:=]", text)
    return match.group(1) if match else text.strip()
