"""``compare``'s default text: a ``Comparison`` on one screen (``--all`` prints
``compare_render.render_text``, every pair; JSON and CSV are always complete).

On a real model prefill against decode differs in a few lines, and a screen of every line
buries them: each kernel is called once per layer, each line is held by several kernels
whose names change whenever any line fused into them does (FMS's llama ``micro``: 107 lines,
72 KB). So the screen shows

- the lines only in A or only in B, and those whose **own** work differs (``changed``: their
  code, own OpSpecs or own ATen ops), each once with what differs: the ops or OpSpecs one
  side has and the other lacks, and the kernels when they differ too. A file's one-sided
  lines beyond ``GROUPED_AT`` are one row (prefill's mask building, say). One-sided lines
  come first, then changes of code or ops, then of OpSpecs alone (``_rank``);
- the **regrouped** lines (their own work the same, the kernels holding them not), one row
  per change of kernels, naming the first few lines and a count;
- how many lines are the same;

kernels named once per graph with the count of their call sites (``cpp_fused_add_3 ×5``),
within ``CHANGED_ROWS`` and ``REGROUPED_SHOWN``, and a last line saying what was left out.
About 60 lines in all. Pure: no torch.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field

from spyre_provenance.model.compare_records import Comparison, KernelUse, LinePair, LineUse
from spyre_provenance.model.modules import MODULE_EVIDENCE
from spyre_provenance.runtime.compare import kernel_key, kernel_shape
from spyre_provenance.runtime.compare_render import (
    TITLES,
    code_text,
    header,
    is_module,
    kernel_groups,
    ops_text,
    place,
    places_word,
    time_text,
)
from spyre_provenance.runtime.time_summary import NO_LINE

#: printed lines for the lines that changed or are on one side (a line takes one to three)
CHANGED_ROWS = 40
#: rows of regrouped lines (one per change of kernels)
REGROUPED_SHOWN = 8
#: a file's lines only in A (or B) beyond this many are one row
GROUPED_AT = 4
#: lines a grouped row names before it gives a count; differing ops or OpSpecs a row names
NAMED = 3
#: a kernel name longer is cut in its middle (``--all`` names it whole)
KERNEL_WIDTH = 60


@dataclass
class _Entry:
    """One row of the changed lines: a pair, or a file's lines only in one compile."""

    status: str
    pairs: list[LinePair] = field(default_factory=list)


def render(comparison: Comparison) -> str:
    """The comparison on one screen; ``compare_render.render_text`` prints every pair."""
    out = header(comparison)
    # kernels are named with their graph only where a side holds several (the header names them)
    graphs = len(comparison.a.graphs) > 1 or len(comparison.b.graphs) > 1
    changed = _changed_entries(comparison.lines)
    printed, shown_pairs = 0, 0
    blocks = [_entry_text(e, graphs) for e in changed]
    if blocks:
        what = places_word([is_module(p) for e in changed for p in e.pairs])
        out.append(f"{what} on one side only, and {what} whose own work differs (code, own OpSpecs or ATen ops):")
    for block, entry in zip(blocks, changed, strict=True):
        if printed + len(block) > CHANGED_ROWS:
            break
        out += block
        printed += len(block)
        shown_pairs += len(entry.pairs)
    regrouped = _regrouped_rows(comparison.lines, graphs)
    if regrouped:
        out.append("regrouped: each line's own work the same, the kernels holding it not (a fused neighbour changed):")
        out += [text for text, _ in regrouped[:REGROUPED_SHOWN]]
    same = comparison.counts.get("same", 0)
    if same:
        counted = _count([_one(p) for p in comparison.lines if p.status == "same"])
        out.append(f"same: {counted} (code, own OpSpecs and ops, kernels)")
    left = [
        (sum(len(e.pairs) for e in changed) - shown_pairs, "changed or one-sided lines"),
        (sum(n for _, n in regrouped[REGROUPED_SHOWN:]), "regrouped lines"),
    ]
    left_out = [f"{n} {what}" for n, what in left if n > 0]
    if left_out:
        out.append(
            f"not shown: {', '.join(left_out)}; --all lists every line, kernels named in full (--format json and csv always do)"
        )
    return "\n".join(out) + "\n"


def _changed_entries(pairs: list[LinePair]) -> list[_Entry]:
    """The changed and one-sided pairs, by ``_rank`` and then in the comparison's order; a
    file's one-sided lines of one status beyond ``GROUPED_AT``, one entry where the first of
    them is."""
    one_sided: Counter[tuple[str, str]] = Counter((p.status, p.file) for p in pairs if p.status in ("only_a", "only_b"))
    entries: list[_Entry] = []
    groups: dict[tuple[str, str], _Entry] = {}
    for pair in pairs:
        if pair.status not in ("changed", "only_a", "only_b"):
            continue
        key = (pair.status, pair.file)
        if one_sided.get(key, 0) > GROUPED_AT:
            if key not in groups:
                groups[key] = _Entry(pair.status)
                entries.append(groups[key])
            groups[key].pairs.append(pair)
        else:
            entries.append(_Entry(pair.status, [pair]))
    return sorted(entries, key=_rank)  # stable: each rank in the comparison's order


def _rank(entry: _Entry) -> int:
    """What the screen shows first, when not all fits: lines on one side only (decode's KV
    cache), then lines whose code or own ops changed, then those whose OpSpecs alone did
    (prefill against decode: every OpSpec's iteration space differs)."""
    if entry.status != "changed":
        return 0
    return 1 if {"code", "ops"} & set(entry.pairs[0].changes) else 2


def _entry_text(entry: _Entry, graphs: bool) -> list[str]:
    title = f"{TITLES[entry.status]:<10}"
    if len(entry.pairs) > 1:
        lines = [_one(p) for p in entry.pairs]
        if is_module(entry.pairs[0]):
            return [f"{title}  {len(lines)} modules: {_named_lines(lines[:NAMED])}{_more(lines)}"]
        named = ", ".join(f"{u.line}" for u in lines[:NAMED]) + _more(lines)
        return [f"{title}  {_short(lines[0])}  {len(lines)} lines: {named}"]
    pair = entry.pairs[0]
    if pair.a is None or pair.b is None:
        return [f"{title}  {_place(pair)}{time_text(pair)}", f"    {_became(_one(pair), graphs)}"]
    rows = [f"{title}  {_place(pair)}{time_text(pair)}"]
    differs = []
    if "opspecs" in pair.changes:
        differs.append(f"OpSpecs {_difference(pair.a.opspecs, pair.b.opspecs)}")
    if "ops" in pair.changes:
        differs.append(f"ops {_difference(pair.a.ops, pair.b.ops)}")
    if differs:
        rows.append(f"    {' · '.join(differs)}")
    if "kernels" in pair.changes:
        rows.append(f"    kernels {_kernel_change(pair.a, pair.b, graphs)}")
    return rows


def _place(pair: LinePair) -> str:
    """A pair as a row names it: the line's file name and number (moved: its new one) and its
    code; a module as ``compare_render.place`` marks it."""
    if is_module(pair):
        return place(pair)
    line = _one(pair)
    moved = _moved(pair) if pair.a is not None and pair.b is not None else ""
    return f"{_short(line)}{moved}  {code_text(pair)}"


def _more(lines: list[LineUse]) -> str:
    return f" +{len(lines) - NAMED} more" if len(lines) > NAMED else ""


def _regrouped_rows(pairs: list[LinePair], graphs: bool) -> list[tuple[str, int]]:
    """One row per change of kernels (those of A's lines B lacks, those B has instead),
    most lines first: its text and how many lines it holds."""
    groups: dict[str, list[LineUse]] = {}
    for pair in pairs:
        if pair.status == "regrouped" and pair.a is not None and pair.b is not None:
            groups.setdefault(_kernel_change(pair.a, pair.b, graphs), []).append(pair.a)
    rows = []
    for change, lines in sorted(groups.items(), key=lambda g: (-len(g[1]), _short(g[1][0]))):
        named = _named_lines(lines[:NAMED]) + _more(lines)
        count = _count(lines)
        rows.append((f"  {count}: {named}  kernels {change}", len(lines)))
    return rows


def _kernel_change(a: LineUse, b: LineUse, graphs: bool) -> str:
    """The kernels of A's line that B's lacks, then those B's has instead (as compared:
    without their per-graph suffix), each once with its count."""
    shape_a, shape_b = Counter(kernel_shape(a)), Counter(kernel_shape(b))
    gone = _without(a.kernels, shape_a - shape_b)
    new = _without(b.kernels, shape_b - shape_a)
    return (
        f"{kernel_groups(gone, KERNEL_WIDTH, graphs) or 'none'} -> {kernel_groups(new, KERNEL_WIDTH, graphs) or 'none'}"
    )


def _without(kernels: list[KernelUse], kept: Counter[tuple[str, str]]) -> list[KernelUse]:
    """The call sites of ``kernels`` whose compared shape ``kept`` still counts."""
    left = Counter(kept)
    found = []
    for k in kernels:
        if left[kernel_key(k)] > 0:
            left[kernel_key(k)] -= 1
            found.append(k)
    return found


def _difference(a: list[str], b: list[str]) -> str:
    """What only A has (``-``) and what only B has (``+``), the first few of each."""
    gone, new = [x for x in a if x not in b], [x for x in b if x not in a]
    if not gone and not new:  # the same, in another number: name them both
        return f"{'; '.join(a)} -> {'; '.join(b)}"
    shown = [f"-{x}" for x in gone[:NAMED]] + [f"+{x}" for x in new[:NAMED]]
    more = max(0, len(gone) - NAMED) + max(0, len(new) - NAMED)
    return "  ".join(shown) + (f"  (+{more} more)" if more else "")


def _became(line: LineUse, graphs: bool) -> str:
    parts = []
    if line.opspecs:
        parts.append(f"OpSpecs {'; '.join(line.opspecs[:NAMED])}" + (" ..." if len(line.opspecs) > NAMED else ""))
    if line.ops:
        parts.append(ops_text(line))
    parts.append(f"in {kernel_groups(line.kernels, KERNEL_WIDTH, graphs) or 'no kernel'}")
    return " · ".join(parts)


def _named_lines(lines: list[LineUse]) -> str:
    """Lines in a row: ``model.py:46, :47, util.py:3`` (a line of the file before, its number)."""
    named, previous = [], None
    for line in lines:
        one_file = line.file == previous and line.file != NO_LINE and line.evidence != MODULE_EVIDENCE
        named.append(f":{line.line}" if one_file else _short(line))
        previous = line.file
    return ", ".join(named)


def _count(lines: list[LineUse]) -> str:
    """``3 lines``, ``2 modules``, ``4 lines and modules``, ``1 line``: modules are never
    called lines."""
    what = places_word([u.evidence == MODULE_EVIDENCE for u in lines])
    return f"{len(lines)} {what if len(lines) != 1 else what[:-1]}"


def _one(pair: LinePair) -> LineUse:
    line = pair.a if pair.a is not None else pair.b
    assert line is not None
    return line


def _short(line: LineUse) -> str:
    """A line as the screen names it: its file's name and number (the path is in --all); a
    module by its name (``runtime.time_screen``'s form)."""
    if line.evidence == MODULE_EVIDENCE:
        return f"{MODULE_EVIDENCE} {line.code}"
    return NO_LINE if line.file == NO_LINE else f"{os.path.basename(line.file)}:{line.line}"


def _moved(pair: LinePair) -> str:
    assert pair.a is not None and pair.b is not None
    if pair.a.line == pair.b.line and pair.a.file == pair.b.file:
        return ""
    return f" -> {pair.b.line}" if pair.a.file == pair.b.file else f" -> {_short(pair.b)}"
