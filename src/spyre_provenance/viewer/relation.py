"""What a click lights: for every element of a graph, the elements the evidence relates to
it, element by element, and the call sites that hold them (their *containers*).

The page only follows this (``lights`` in each graph of the document); the rule is here once:

- a **post-grad node**: its pre-grad nodes (the mapping), the OpSpecs whose debug handle
  names it (``ir_chain``, fused-from children's included), and those OpSpecs' source lines
  and bundles;
- a **pre-grad node**: its post-grad nodes, the OpSpecs naming them, their bundles and
  their source lines (exactly the lines that light the node: the two light each other);
- an **OpSpec**: its handle's source lines, the post-grad nodes its handle names, its bundle;
- a **bundle**: its OpSpecs (a kernel called from several call sites has one set) and
  what each of them lights;
- a **source line**: the OpSpecs whose handle holds it, the post-grad nodes they name, those
  nodes' pre-grad nodes, and the OpSpecs' bundles;
- a **call site**: everything it holds (post-grad nodes, OpSpecs, bundles, its lines) and the
  pre-grad nodes of its post-grad nodes.

A post-grad node's call sites (the mapping) and a line's (the kernel's stack traces) are
kernel-wide evidence: such a call site lights itself only when none of the lit OpSpecs is
one of its own (a backend with no OpSpecs, a line only an outer frame names); otherwise the
OpSpecs say which part of it, and it is marked as their container. Every call site holding
a lit OpSpec or post-grad node and not lit itself is marked as a container.

Pure: plain data in (the graph as ``viewer.data`` builds it, positions into its lists), plain
data out.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

KINDS = ("line", "pre", "post", "call", "spec", "bundle")
#: the entry key of the call sites marked as containers
BOX = "box"


class _Index:
    """A graph's edges, both ways, by position."""

    def __init__(self, g: dict[str, Any]) -> None:
        self.g = g
        self.post_pre: list[list[int]] = [[] for _ in g["post"]]
        for q, posts in enumerate(g["pre_to_post"]):
            for p in posts:
                self.post_pre[p].append(q)
        self.post_calls: list[list[int]] = [[] for _ in g["post"]]
        for c, call in enumerate(g["calls"]):
            for p in call["post_nodes"]:
                self.post_calls[p].append(c)
        self.post_specs: list[list[int]] = [[] for _ in g["post"]]
        self.line_specs: dict[int, list[int]] = {}
        for s, spec in enumerate(g["opspecs"]):
            for p in spec["post_nodes"]:
                self.post_specs[p].append(s)
            for line in spec["lines"]:
                self.line_specs.setdefault(line, []).append(s)
        self.line_calls: dict[int, list[int]] = {}
        for c, call in enumerate(g["calls"]):
            for line in call["lines"]:
                self.line_calls.setdefault(line, []).append(c)

    def lines(self) -> list[int]:
        return sorted(set(self.line_calls) | set(self.line_specs))


class _Lit:
    """One click's lit set, built up by the rules above."""

    def __init__(self, ix: _Index) -> None:
        self.ix = ix
        self.sets: dict[str, set[int]] = {k: set() for k in KINDS}
        self.wide: set[int] = set()  # call sites related only kernel-wide

    def specs(self, specs: Iterable[int], posts: bool = True, lines: bool = True) -> None:
        """OpSpecs lit with their bundles, their lines and the post-grad nodes they name."""
        for s in specs:
            spec = self.ix.g["opspecs"][s]
            self.sets["spec"].add(s)
            if lines:
                self.sets["line"].update(spec["lines"])
            if spec["bundle"] is not None:
                self.sets["bundle"].add(spec["bundle"])
            if posts:
                self.sets["post"].update(spec["post_nodes"])

    def entry(self) -> dict[str, list[int]]:
        g, sets = self.ix.g, self.sets
        held = {g["opspecs"][s]["call"] for s in sets["spec"]}
        # a kernel-wide relative lights unless one of its OpSpecs already says which part
        sets["call"].update(self.wide - held)
        boxes = held | {c for p in sets["post"] for c in self.ix.post_calls[p]}
        out = {k: sorted(v) for k, v in sets.items() if v}
        box = sorted(boxes - sets["call"])
        if box:
            out[BOX] = box
        return out


def _post(ix: _Index, p: int) -> dict[str, list[int]]:
    lit = _Lit(ix)
    lit.sets["post"].add(p)
    lit.sets["pre"].update(ix.post_pre[p])
    lit.specs(ix.post_specs[p], posts=False)
    lit.wide.update(ix.post_calls[p])
    return lit.entry()


def _pre(ix: _Index, q: int) -> dict[str, list[int]]:
    lit = _Lit(ix)
    lit.sets["pre"].add(q)
    for p in ix.g["pre_to_post"][q]:
        lit.sets["post"].add(p)
        # its nodes, their OpSpecs and those OpSpecs' lines: exactly the lines that light this
        # node (``_line``), so the relation is the same both ways
        lit.specs(ix.post_specs[p], posts=False)
        lit.wide.update(ix.post_calls[p])
    return lit.entry()


def _spec(ix: _Index, s: int) -> dict[str, list[int]]:
    lit = _Lit(ix)
    lit.specs([s])
    return lit.entry()


def _bundle(ix: _Index, b: int) -> dict[str, list[int]]:
    lit = _Lit(ix)
    lit.sets["bundle"].add(b)
    lit.specs(ix.g["bundles"][b]["opspecs"])
    return lit.entry()


def _line(ix: _Index, line: int) -> dict[str, list[int]]:
    lit = _Lit(ix)
    lit.sets["line"].add(line)
    lit.specs(ix.line_specs.get(line, ()), lines=False)  # not the other lines of a handle's span
    for p in lit.sets["post"]:
        lit.sets["pre"].update(ix.post_pre[p])
    lit.wide.update(ix.line_calls.get(line, ()))
    return lit.entry()


def _call(ix: _Index, c: int) -> dict[str, list[int]]:
    call = ix.g["calls"][c]
    lit = _Lit(ix)
    lit.sets["call"].add(c)
    lit.sets["line"].update(call["lines"])
    lit.specs(call["opspecs"], posts=False)
    lit.sets["post"].update(call["post_nodes"])
    for p in call["post_nodes"]:
        lit.sets["pre"].update(ix.post_pre[p])
    return lit.entry()


#: an entry's lists, in this order (the page reads them by position)
ENTRY = (*KINDS, BOX)


def _compact(entry: dict[str, list[int]], kind: str, i: int) -> list[list[int]]:
    """``entry`` as the page reads it: its lists in ``ENTRY`` order, the clicked element left
    out (the page lights it), empty lists at the end left out. A page of 10k kernels holds
    ~100k entries: keys and the element itself were a third of its bytes."""
    lists = [[j for j in entry.get(k, ()) if not (k == kind and j == i)] for k in ENTRY]
    while lists and not lists[-1]:
        lists.pop()
    return lists


def relation(g: dict[str, Any]) -> dict[str, Any]:
    """``lights``: per kind, each element's lit set and containers (``_compact``: positions per
    kind of ``ENTRY``); source lines keyed by their position in the document's ``lines`` (as
    text, JSON's keys)."""
    ix = _Index(g)
    rules = {"pre": _pre, "post": _post, "call": _call, "spec": _spec, "bundle": _bundle}
    sizes = {"pre": len(g["pre"]), "post": len(g["post"]), "call": len(g["calls"])}
    sizes |= {"spec": len(g["opspecs"]), "bundle": len(g["bundles"])}
    rel: dict[str, Any] = {"line": {str(line): _compact(_line(ix, line), "line", line) for line in ix.lines()}}
    for kind, rule in rules.items():
        rel[kind] = [_compact(rule(ix, i), kind, i) for i in range(sizes[kind])]
    return rel
