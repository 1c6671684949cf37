"""Reading a logged post-grad graph (``GraphModule.print_readable``) into a ``PostGradGraph``.

The hook builds the same model from the FX graph itself; both readers give the same nodes
(tests/models/test_zoo.py checks it on every graph of the zoo). A node "has a line" by tlparse's
rule: the line tlparse would look it up by.

Pure: no torch.
"""

from __future__ import annotations

import re

from spyre_provenance.model.frames import Frame
from spyre_provenance.model.post_grad_graph import GraphNode, PostGradGraph

# ``name: "f32[8, 256]..." = rhs`` at the top level of the printed forward (8 spaces deep)
_ASSIGNMENT = re.compile(r"^ {8}(?P<name>[A-Za-z_]\w*)(?:\s*:\s*\"[^\"]*\")?\s*=\s*(?P<rhs>.*)$")
# a higher-order op's subgraph (``class true_graph_0(torch.nn.Module):``), 4 spaces deep
_SUBGRAPH_CLASS = re.compile(r"^ {4}class \w+\(torch\.nn\.Module\):\s*$")
_FORWARD = re.compile(r"^ {4}def forward\(self(?P<params>.*)\):\s*$")
_PARAM = re.compile(r"(?:^|,)\s*(?P<name>[A-Za-z_]\w*)\s*(?::|,|$)")
_TORCH_OP = re.compile(r"^torch\.ops\.(?P<ns>\w+)\.(?P<op>\w+)(?:\.\w+)?\((?P<args>.*)$")
_SUBSCRIPT = re.compile(r"^(?P<base>[A-Za-z_]\w*)\[")
_ATTRIBUTE = re.compile(r"^self\.[\w.]+$")
_NAME = re.compile(r"(?<![\w.])[A-Za-z_]\w*")
_STRING = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")
# FX's comment above the nodes a stack trace made (``_ParsedStackTrace.get_summary_str``),
# and the one it writes above nodes without one
_FRAME_COMMENT = re.compile(r"^ {8}# File: (?P<file>.+):(?P<line>\d+) in (?P<function>.+?), code: (?P<code>.*)$")
_NO_FRAME = "        # No stacktrace found for following nodes"


def parse_post_grad_graph(text: str) -> PostGradGraph:
    """The top-level nodes of a logged post-grad graph (``GraphModule.print_readable``).

    A node has a line when tlparse's rule finds its name on one: a line that is not a
    comment, cut at its first ``=`` and then at its first ``:`` (graph inputs, named only
    in the ``def forward(...)`` line, have none).
    """
    lines = text.splitlines()
    highlightable = {line_name(line) for line in lines} - {None}
    nodes: list[GraphNode] = []
    known: set[str] = set()
    outputs: tuple[str, ...] = ()
    in_subgraph = False  # print_readable writes each subgraph's class after the forward
    printed_later: set[str] = set()
    for line in lines:
        if nodes and _SUBGRAPH_CLASS.match(line):
            in_subgraph = True
        if in_subgraph:
            name = line_name(line)
            if name is not None:
                printed_later.add(name)
            continue
        forward = _FORWARD.match(line) if not nodes else None
        if forward:
            for match in _PARAM.finditer(_STRING.sub('""', forward["params"])):
                name = match["name"]
                nodes.append(GraphNode(name, "placeholder", line=name in highlightable))
                known.add(name)
            continue
        if line.startswith("        return "):
            outputs = tuple(_names_in(line[len("        return ") :], known))
            continue
        assigned = _ASSIGNMENT.match(line)
        if assigned is None:
            continue
        name, rhs = assigned["name"], assigned["rhs"].split(";", 1)[0].strip()
        kind, op, args = _classify(rhs)
        nodes.append(GraphNode(name, kind, op, tuple(_names_in(args, known)), name in highlightable))
        known.add(name)
    return PostGradGraph(nodes, outputs, shadowed=known & printed_later)


def node_frames(text: str) -> dict[str, Frame]:
    """Each top-level node of a logged post-grad graph that FX printed under a frame: the
    ``# File: PATH:LINE in FUNCTION, code: CODE`` comment above it, which FX writes from the
    node's own stack trace (its innermost frame) whenever it differs from the node before.
    A node under ``# No stacktrace found`` has none. What a line's own nodes are, where the
    compile recorded no OpSpecs (``runtime.compare_folders``)."""
    found: dict[str, Frame] = {}
    current: Frame | None = None
    for line in text.splitlines():
        if found and _SUBGRAPH_CLASS.match(line):  # a subgraph's class: the forward is over
            break
        comment = _FRAME_COMMENT.match(line)
        if comment:
            current = Frame(comment["file"], int(comment["line"]), comment["code"])
        elif line.startswith(_NO_FRAME):
            current = None
        elif current is not None:
            assigned = _ASSIGNMENT.match(line)
            if assigned:
                found[assigned["name"]] = current
    return found


def line_name(line: str) -> str | None:
    """tlparse's ``extract_node_name``: what it would look a node up by on this line."""
    stripped = line.strip()
    if not stripped or stripped.startswith("#"):
        return None
    name = stripped.split("=", 1)[0].split(":", 1)[0].strip()
    return name or None


def _classify(rhs: str) -> tuple[str, str, str]:
    """(kind, op, argument text) of a node's right-hand side."""
    call = _TORCH_OP.match(rhs)
    if call:
        return "call", f"{call['ns']}.{call['op']}", call["args"]
    if _ATTRIBUTE.match(rhs):
        return "get_attr", "", ""
    subscript = _SUBSCRIPT.match(rhs)
    if subscript:
        return "call", "getitem", subscript["base"]
    return "call", "python", rhs


def _names_in(text: str, known: set[str]) -> list[str]:
    """The graph nodes an argument text names, in order, once each."""
    found: list[str] = []
    for name in _NAME.findall(_STRING.sub('""', text)):
        if name in known and name not in found:
            found.append(name)
    return found
