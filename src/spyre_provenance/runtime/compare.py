"""Two compiles side by side per source line: the one rule (``spyre-provenance compare``,
and the viewer's ``view A --compare B``).

``compare(a, b)`` takes what each source line became in two compiles (``CompileLines``,
read from folders by ``runtime.compare_folders``) and pairs the lines:

- **files** pair by path; a file left over pairs with the one file of the same name left
  over on the other side (two checkouts of one model: ``v1/model.py``, ``v2/model.py``);
- **lines** of a pair of files pair by their code, not their number: the two sides' lines
  (in line order) are aligned as a diff aligns two texts (``difflib.SequenceMatcher``), so
  a line inserted above shifts the numbers of the lines below it and changes nothing else.
  Between two stretches of equal lines, a line of A and one of B as far below the last
  equal pair are one line edited; the rest are only in A or only in B;
- **a pair is judged** by what the line itself became: its code, its own OpSpecs (their
  debug handle's source is the line; with their iteration space, so a shape counts) and
  its own ATen ops (its OpSpecs' handles', else the post-grad nodes carrying the line). One
  kernel holds many lines, so a kernel renamed because a fused neighbour changed leaves the
  line ``regrouped``, not ``changed``; only where nothing told a line's own ops from its
  kernels' (``ops_from`` ``kernels``: no OpSpecs and no logged post-grad graph) are the
  kernels the finest evidence, and count. Kernel names are compared without their per-graph
  suffix (``_0``), which a kernel added above renumbers.

Where no frame is the user's, a module names the place (``LineUse.evidence`` ``module``,
``model.modules``): modules pair by their module path, so a module whose class changed
(``1: GELU`` -> ``1: ReLU``) is one module ``changed`` in its ``code`` (its name); a path on
one side only is only in A or only in B, never paired by position. Their ops are their
kernels', so their kernels count.

The lines that changed (and those only in A or B) come first, then the regrouped, then the
same; in file order, each file's lines in order. Pure: no torch, no files.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from collections.abc import Iterable

from spyre_provenance.model.compare_records import (
    COMPARE_VERSION,
    STATUSES,
    Change,
    Comparison,
    CompileLines,
    FilePair,
    KernelUse,
    LinePair,
    LineUse,
    Status,
)
from spyre_provenance.model.modules import path_of

_SUFFIX = re.compile(r"_[0-9]+\Z")
#: the order lines are listed in: what changed first
_RANK = {"changed": 0, "only_a": 0, "only_b": 0, "regrouped": 1, "same": 2}


def compare(a: CompileLines, b: CompileLines) -> Comparison:
    """The comparison of ``a`` and ``b`` by source line (see the module's docstring)."""
    by_file_a = _by_file(a.lines)
    by_file_b = _by_file(b.lines)
    files = pair_files(list(by_file_a), list(by_file_b))
    ranked: list[tuple[int, int, int, LinePair]] = []
    for order, (file_a, file_b) in enumerate(files):
        lines_a = by_file_a.get(file_a, []) if file_a is not None else []
        lines_b = by_file_b.get(file_b, []) if file_b is not None else []
        for position, pair in enumerate(_align(lines_a, lines_b)):
            ranked.append((_RANK[pair.status], order, position, pair))
    ranked.sort(key=lambda r: r[:3])
    pairs = [r[3] for r in ranked]
    counts = Counter(p.status for p in pairs)
    return Comparison(
        version=COMPARE_VERSION,
        same=all(p.status == "same" for p in pairs),
        a=a.side,
        b=b.side,
        counts={s: counts.get(s, 0) for s in STATUSES},
        files=[FilePair(fa, fb) for fa, fb in files],
        lines=pairs,
    )


def _by_file(lines: Iterable[LineUse]) -> dict[str, list[LineUse]]:
    """Lines per file, files in name order, each file's lines in line order."""
    found: dict[str, list[LineUse]] = {}
    for line in lines:
        found.setdefault(line.file, []).append(line)
    return {f: sorted(found[f], key=_order) for f in sorted(found)}


def _order(line: LineUse) -> tuple[int, list[tuple[int, int | str]], str]:
    """A file's lines by number; modules (all line 0) by their path, ``layers.2`` before
    ``layers.10``."""
    if line.evidence != "module":
        return line.line, [], line.code
    path = [(0, int(p)) if p.isdigit() else (1, p) for p in re.split(r"[.]", path_of(line.code))]
    return 0, path, line.code


def pair_files(a: list[str], b: list[str]) -> list[tuple[str | None, str | None]]:
    """Files of A with files of B: the same path; then, of those left, the same file name
    when it is the only one of that name left on each side. In A's order, then B's rest."""
    in_b = set(b)
    paired: dict[str, str] = {f: f for f in a if f in in_b}
    left_a = [f for f in a if f not in paired]
    left_b = [f for f in b if f not in paired]
    names_a = Counter(_file_name(f) for f in left_a)
    names_b = Counter(_file_name(f) for f in left_b)
    by_name_b = {_file_name(f): f for f in left_b}
    for f in left_a:
        name = _file_name(f)
        if names_a[name] == 1 and names_b[name] == 1:
            paired[f] = by_name_b[name]
    taken = set(paired.values())
    pairs: list[tuple[str | None, str | None]] = [(f, paired.get(f)) for f in a]
    return pairs + [(None, f) for f in b if f not in taken]


def _file_name(path: str) -> str:
    return re.split(r"[/\\]", path)[-1]


def _align(a: list[LineUse], b: list[LineUse]) -> list[LinePair]:
    """The lines of one pair of files, paired by their code as a diff aligns two texts."""
    keys_a, keys_b = [_key(u) for u in a], [_key(u) for u in b]
    pairs: list[LinePair] = []
    anchor = (0, 0)  # the line numbers of the last pair of equal lines
    matcher = difflib.SequenceMatcher(None, keys_a, keys_b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            pairs += [judge(a[i1 + k], b[j1 + k]) for k in range(i2 - i1)]
            anchor = (a[i2 - 1].line, b[j2 - 1].line)
        elif a[i1:i2] and a[i1].evidence == "module" or b[j1:j2] and b[j1].evidence == "module":
            # a module's place is its path: one not on both sides is on one side only
            pairs += [_one_sided("only_a", u, None) for u in a[i1:i2]]
            pairs += [_one_sided("only_b", None, u) for u in b[j1:j2]]
        else:
            pairs += _edited(a[i1:i2], b[j1:j2], anchor)
    return pairs


def _edited(a: list[LineUse], b: list[LineUse], anchor: tuple[int, int]) -> list[LinePair]:
    """Lines that differ between two equal stretches: a line of A and one of B as far below
    the last equal lines are the line edited in place; the others are only in A or in B
    (prefill's branch and decode's, in one file, are two lines, not one line edited)."""
    by_offset = {u.line - anchor[1]: u for u in b}
    pairs: list[LinePair] = []
    for line in a:
        other = by_offset.pop(line.line - anchor[0], None)
        pairs.append(judge(line, other) if other is not None else _one_sided("only_a", line, None))
    left = {id(u) for u in by_offset.values()}
    return pairs + [_one_sided("only_b", None, u) for u in b if id(u) in left]


def _key(line: LineUse) -> str:
    """What aligns a line: its code, stripped; a line without code (a trace recorded
    without source text) by its number, the only thing known of it; a module by its path."""
    if line.evidence == "module":
        return f"\0module {path_of(line.code)}"
    code = line.code.strip()
    return code if code else f"\0{line.line}"


def _one_sided(status: Status, a: LineUse | None, b: LineUse | None) -> LinePair:
    line = a if a is not None else b
    assert line is not None
    return LinePair(status, [], line.file, a, b)


def judge(a: LineUse, b: LineUse) -> LinePair:
    """One pair of lines: what differs, and its status."""
    changes: list[Change] = []
    if a.code.strip() != b.code.strip():
        changes.append("code")
    if a.opspecs != b.opspecs and sorted(a.opspecs) != sorted(b.opspecs):  # equal lists: the common case, cheap
        changes.append("opspecs")
    if a.ops != b.ops and sorted(a.ops) != sorted(b.ops):
        changes.append("ops")
    if kernel_shape(a) != kernel_shape(b):
        changes.append("kernels")
    status: Status
    if not changes:
        status = "same"
    elif changes == ["kernels"] and own_work_known(a) and own_work_known(b):
        status = "regrouped"
    else:
        status = "changed"
    timed = a.time_us is not None and b.time_us is not None
    delta = b.time_us - a.time_us if timed else None  # type: ignore[operator]
    return LinePair(status, changes, a.file, a, b, delta)


def own_work_known(line: LineUse) -> bool:
    """Whether a line's OpSpecs and ops are its own, told apart from its kernels' others."""
    return line.ops_from in ("opspecs", "post-grad nodes") or bool(line.opspecs)


def kernel_shape(line: LineUse) -> list[tuple[str, str]]:
    """The kernels a line went into, as compared: (graph kind, name without its per-graph
    suffix), sorted. Compile ids and handle numbers differ between compiles by nature."""
    return sorted(kernel_key(k) for k in line.kernels)


def kernel_key(kernel: KernelUse) -> tuple[str, str]:
    """A kernel as compared: (graph kind, name without its per-graph suffix)."""
    return kernel.graph.rpartition(" ")[2], _SUFFIX.sub("", kernel.kernel)
