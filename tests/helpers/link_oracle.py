"""An oracle for pre-grad links that is not the project's own inference (issue 37).

A link from a kernel to a pre-grad node is true when that node's source line is among the
source lines of the kernel's own post-grad nodes. Both sides are read from the TORCH_TRACE
log as torch printed them, never from what the hook inferred:

- a kernel's post-grad nodes are the mapping's ``cppCodeToPost``, nodes of the graph's top
  level; each node's line is the ``# File: PATH:LINE`` comment torch prints above it in
  the logged post-grad graph (AOTAutograd copies a forward op's stack trace onto its gradient
  nodes, so backward nodes carry the line they differentiate);
- a claimed pre-grad node is read as the page reads it: tlparse lights the last line of
  the logged pre-grad graph (``before_pre_grad_graph``) naming it, and that line's
  ``# File:`` comment is its source line. A higher-order op (``torch.ops.higher_order.*``)
  is checked another way: it computes what its subgraphs compute, so its lines are its
  own and every line of the subgraphs it names, nested ones included.

A kernel whose post-grad nodes carry no line (a weight's layout copy, a seed draw) cannot be
judged this way: its links are counted apart (``unjudged``), never as true.

Pure: reads text, imports no torch.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from spyre_provenance.logs import tracelog
from spyre_provenance.logs.graphs import LoggedGraph

_FILE = re.compile(r"^\s*# (?:[^\n]*? )?File: (?P<where>\S+:\d+) in ")
_ASSIGN = re.compile(r"^\s*(?P<name>[A-Za-z_]\w*)\s*(?::\s*\"[^\"]*\")?\s*=\s*(?P<rhs>.*)$")
_CLASS = re.compile(r"^(?P<indent>\s*)class (?P<name>\w+)\(torch\.nn\.Module\):")
_HOP = re.compile(r"^torch\.ops\.higher_order\.\w+\((?P<args>.*)$")
_WORD = re.compile(r"[A-Za-z_]\w*")
#: print_readable's indent of a graph's own nodes (its subgraphs' classes go deeper)
TOP_INDENT = 8


def node_lines(text: str, top_only: bool = False) -> dict[str, str]:
    """Node name -> the source line of the last printed line naming it (tlparse's rule
    for the page: the last line wins), from a ``print_readable`` graph; ``top_only``: the
    graph's own nodes, not its subgraphs' (printed deeper, as nested classes)."""
    lines: dict[str, str] = {}
    where: str | None = None
    for line in text.splitlines():
        if top_only and line.strip() and len(line) - len(line.lstrip()) != TOP_INDENT:
            continue
        comment = _FILE.match(line)
        if comment:
            where = comment["where"]
            continue
        if not line.strip():
            where = None  # print_readable separates the nodes of one trace with a blank line
            continue
        for assigned in _assignments(line):
            lines.pop(assigned["name"], None)
            if where is not None:
                lines[assigned["name"]] = where
    return lines


def _assignments(line: str) -> list[re.Match[str]]:
    """The assignments of one printed line: an in-place op prints two statements
    (``w /= sum_1;  w_1: "f32[...]" = w``), the second naming the node."""
    parts = line.split(";  ")
    found = [m for m in [_ASSIGN.match(parts[0])] if m is not None]
    # later statements: the annotated one an in-place op adds, not the ``a = b = None`` cleanup
    return found + [m for part in parts[1:] if (m := _ASSIGN.match(part)) is not None and ":" in part.split("=")[0]]


_COPY = re.compile(r"torch\.ops\.aten\.copy_\.default\((?P<args>[^)]*)\)")


def copies(text: str) -> dict[str, list[str]]:
    """A post-grad graph's ``copy_`` nodes -> the values they copy (their later arguments)."""
    found: dict[str, list[str]] = {}
    for line in text.splitlines():
        assigned = _ASSIGN.match(line.split(";  ")[0])
        call = _COPY.search(assigned["rhs"]) if assigned else None
        if assigned and call:
            found[assigned["name"]] = _WORD.findall(call["args"])[1:]
    return found


@dataclass
class PreGrad:
    """A logged pre-grad graph, read for the oracle."""

    lines: dict[str, str]  # node -> its source line, as the page lights it
    held: dict[str, set[str]]  # higher-order op node -> every line of the subgraphs it names

    def of(self, name: str) -> set[str]:
        own = {self.lines[name]} if name in self.lines else set()
        return own | self.held.get(name, set())


def read_pre_grad(text: str) -> PreGrad:
    """Source lines of the pre-grad nodes and of every subgraph class the graph prints."""
    class_lines: dict[str, set[str]] = {}
    class_words: dict[str, set[str]] = {}  # names each class's body mentions (nested classes)
    stack: list[tuple[int, str]] = []
    hops: dict[str, set[str]] = {}  # HOP node -> the words of its arguments
    where: str | None = None
    for line in text.splitlines():
        indent = len(line) - len(line.lstrip())
        while stack and line.strip() and indent <= stack[-1][0]:
            stack.pop()
        opened = _CLASS.match(line)
        if opened:
            if stack:
                class_words[stack[-1][1]].add(opened["name"])
            stack.append((len(opened["indent"]), opened["name"]))
            class_lines.setdefault(opened["name"], set())
            class_words.setdefault(opened["name"], set())
            continue
        comment = _FILE.match(line)
        if comment:
            where = comment["where"]
            continue
        if not line.strip():
            where = None
        assigned = _ASSIGN.match(line.split(";  ")[0])
        if assigned is None:
            continue
        for _, name in stack[1:]:  # the outermost class is the graph itself
            if where is not None:
                class_lines[name].add(where)
        if stack:
            class_words[stack[-1][1]].update(_WORD.findall(assigned["rhs"]))
        hop = _HOP.match(assigned["rhs"])
        if hop:
            hops[assigned["name"]] = set(_WORD.findall(hop["args"]))

    def lines_of(cls: str, seen: set[str]) -> set[str]:
        found = set(class_lines.get(cls, ()))
        for inner in class_words.get(cls, ()):
            if inner in class_lines and inner not in seen:
                found |= lines_of(inner, seen | {inner})
        return found

    held = {
        node: set().union(*(lines_of(w, {w}) for w in words if w in class_lines)) if words else set()
        for node, words in hops.items()
    }
    return PreGrad(node_lines(text), held)


@dataclass
class Verdict:
    """What the oracle found on a compile: links checked, false ones, unjudged ones."""

    true: int = 0
    false: list[str] = field(default_factory=list)
    unjudged: int = 0
    kernels: int = 0
    linked_kernels: int = 0


def pre_grad_texts(log) -> dict[str, str]:
    """Compile id -> its logged pre-grad graph (the backward's is the forward's)."""
    return {cid: text for cid, _, text in tracelog.artifact_payloads(log, {"before_pre_grad_graph"})}


def judge(graphs: list[LoggedGraph], pre_grad: dict[str, str], verdict: Verdict | None = None) -> Verdict:
    """Every claimed pre-grad node of every kernel of ``graphs`` against the kernel's own lines."""
    verdict = verdict or Verdict()
    for graph in graphs:
        if graph.output_code is None or graph.node_mappings is None or graph.post_grad_graph is None:
            continue
        # the mapping's post-grad nodes are the graph's own: a cond branch's nodes repeat
        # their names (the page's view of those is ``compiled_checks``' concern)
        post_lines = node_lines(graph.post_grad_graph, top_only=True)
        pre = read_pre_grad(pre_grad.get(graph.compile_id, ""))
        copied = copies(graph.post_grad_graph)
        post_to_pre = graph.node_mappings.get("postToPre", {})
        for key, nodes in graph.node_mappings["cppCodeToPost"].items():
            verdict.kernels += 1
            claimed = list(dict.fromkeys(p for n in nodes for p in post_to_pre.get(n, ())))
            if not claimed:
                continue
            verdict.linked_kernels += 1
            # a write-back (functionalization's copy_, no trace of its own) is checked by the
            # value it copies: BatchNorm's running statistics are the norm's, in whichever
            # kernel the write-back runs (graph order puts write-backs last, beside other lines)
            own = {post_lines[n] for n in nodes if n in post_lines} | {
                post_lines[v] for n in nodes if n not in post_lines for v in copied.get(n, ()) if v in post_lines
            }
            for name in claimed:
                if not own:
                    verdict.unjudged += 1
                elif pre.of(name) & own:
                    verdict.true += 1
                else:
                    verdict.false.append(
                        f"{graph.compile_id} {key} -> {name} ({sorted(pre.of(name))} not among {sorted(own)})"
                    )
    return verdict
