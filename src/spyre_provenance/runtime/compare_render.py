"""A comparison by source line (``runtime.compare``) as text, CSV or JSON (``compare --format``).
A module (no frame is the user's) is printed as the time summary prints one, marked as
module evidence (``model.modules.module_text``); CSV's ``evidence`` column says which.

``render_text`` is ``compare --all``: every pair of lines, with what each became (a kernel
called once per layer named once, with its count); the default text is ``runtime.compare_screen``,
one screen. CSV and JSON always hold every pair and every call site.

The JSON document is validated against ``schemas/provenance_compare`` before it is
returned: what the command prints always is what the schema says.

Pure: no torch.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable

import msgspec

from spyre_provenance.model.compare_records import Comparison, KernelUse, LinePair, LineUse, Side
from spyre_provenance.model.modules import MODULE_EVIDENCE, module_text
from spyre_provenance.model.names import COMPARE
from spyre_provenance.runtime.time_summary import NO_LINE

LISTED_GRAPHS = 4  # text: graphs named per side
TITLES = {"changed": "changed", "only_a": "only in A", "only_b": "only in B", "regrouped": "regrouped", "same": "same"}


def render_text(comparison: Comparison) -> str:
    """Every pair of lines (``compare --all``)."""
    out = header(comparison)
    for pair in comparison.lines:
        out.append(f"{TITLES[pair.status]:<10}  {place(pair)}{time_text(pair)}")
        if pair.status != "same":
            if pair.changes:
                out.append(f"    differs in: {', '.join(pair.changes)}")
            for label, line in (("A", pair.a), ("B", pair.b)):
                if line is not None:
                    out.append(f"    {label}  {_became(line)}")
    return "\n".join(out) + "\n"


def header(comparison: Comparison) -> list[str]:
    """What both texts begin with: the two sides and the count of lines per status."""
    counts = ", ".join(f"{n} {TITLES[s]}" for s, n in comparison.counts.items())
    verdict = "the compiles are the same" if comparison.same else "the compiles differ"
    what = places_word([is_module(p) for p in comparison.lines])
    return [_side("A", comparison.a), _side("B", comparison.b), f"{what}: {counts}: {verdict}"]


def places_word(modules: list[bool]) -> str:
    """What places are called together, each a module or not: ``lines``, ``modules``, or
    ``lines and modules`` (a module is never called a line)."""
    if not any(modules):
        return "lines"
    return "modules" if all(modules) else "lines and modules"


def _side(label: str, side: Side) -> str:
    graphs = ", ".join(side.graphs[:LISTED_GRAPHS]) + (
        f" and {len(side.graphs) - LISTED_GRAPHS} more" if len(side.graphs) > LISTED_GRAPHS else ""
    )
    timed = f"time from {', '.join(side.traces)}" if side.traces else "no profiler trace"
    unplaced = f", {_us(side.unplaced_us)} of it in no call site of these graphs" if side.unplaced_us else ""
    return f"{label}  {side.name}  ({len(side.graphs)} graph{'s' if len(side.graphs) != 1 else ''}: {graphs}; {timed}{unplaced})"


def place(pair: LinePair) -> str:
    """A pair's place and code (``model.py:12 -> 13  h = self.fc(x)``); a module's name,
    marked as module evidence (``model.modules``), never as a line."""
    if is_module(pair):
        return module_text(code_text(pair))
    return f"{_where(pair)}  {code_text(pair)}"


def is_module(pair: LinePair) -> bool:
    """Whether a pair's place is a module (both sides alike: modules pair only with modules)."""
    return any(u is not None and u.evidence == MODULE_EVIDENCE for u in (pair.a, pair.b))


def _where(pair: LinePair) -> str:
    if pair.file == NO_LINE:
        return NO_LINE
    if pair.a is None or pair.b is None:  # one side only: where it is there
        line = pair.a or pair.b
        assert line is not None
        return f"{line.file}:{line.line}"
    file_b = f"{pair.b.file}:" if pair.b.file != pair.a.file else ""
    return f"{pair.a.file}:{pair.a.line} -> {file_b}{pair.b.line}"


def code_text(pair: LinePair) -> str:
    codes = [u.code.strip() for u in (pair.a, pair.b) if u is not None]
    return codes[0] if len(set(codes)) == 1 else " -> ".join(codes)


def time_text(pair: LinePair) -> str:
    times = [u.time_us for u in (pair.a, pair.b) if u is not None and u.time_us is not None]
    if not times:
        return ""
    if pair.time_change_us is None:
        return f"  [{_us(times[0])}]"
    return f"  [{_us(times[0])} -> {_us(times[1])}, {'+' if pair.time_change_us >= 0 else '-'}{_us(abs(pair.time_change_us))}]"


def kernel_groups(kernels: Iterable[KernelUse], width: int | None = None, graphs: bool = True) -> str:
    """Kernels as a line's text names them, once per graph: a kernel called once per layer
    once with its count (``cpp_fused_add_3 ×5``), kernels alike but for their per-graph suffix
    together (``cpp_fused_add_{3,7}``); ``width``: a name longer is cut in its middle;
    ``graphs``: each graph's kernels followed by its name."""
    stems: dict[str, dict[str, list[str]]] = {}
    for k in kernels:
        stem, suffix = _split_suffix(k.kernel)
        stems.setdefault(k.graph, {}).setdefault(stem, []).append(suffix)
    return "; ".join(
        ", ".join(_named(stem, suffixes, width) for stem, suffixes in named.items()) + (f" ({graph})" if graphs else "")
        for graph, named in stems.items()
    )


def _split_suffix(name: str) -> tuple[str, str]:
    """``cpp_fused_add_3`` -> (``cpp_fused_add``, ``3``); a name without a suffix, itself and ''."""
    stem, underscore, suffix = name.rpartition("_")
    return (stem, suffix) if underscore and stem and suffix.isdigit() else (name, "")


def _named(stem: str, suffixes: list[str], width: int | None) -> str:
    distinct = list(dict.fromkeys(suffixes))
    if distinct == [""]:
        name = stem
    elif len(distinct) == 1:
        name = f"{stem}_{distinct[0]}"
    else:
        name = f"{stem}_{{{','.join(distinct)}}}"
    if width is not None and len(name) > width:
        tail = max(12, width // 3)
        name = name[: width - tail - 1] + "…" + name[-tail:]
    # the count of call sites, where the name does not list each of them
    return name + (f" ×{len(suffixes)}" if len(suffixes) > len(distinct) else "")


def _became(line: LineUse) -> str:
    parts = [f"kernels {kernel_groups(line.kernels) or 'no kernel'}"]
    if line.opspecs:
        parts.append(f"OpSpecs {'; '.join(line.opspecs)}")
    if line.ops:
        parts.append(ops_text(line))
    return " · ".join(parts)


def ops_text(line: LineUse) -> str:
    """A line's ops, and whether they are its own or, nothing telling them apart, its kernels' all."""
    whose = "ops of its kernels" if line.ops_from == "kernels" else "ops"
    return f"{whose} {' '.join(line.ops)}"


def _us(us: float) -> str:
    return f"{us / 1000:.3f} ms" if us >= 1000 else f"{us:.1f} us"


CSV_COLUMNS = (
    "status",
    "changes",
    "file",
    "evidence",
    "line_a",
    "line_b",
    "code_a",
    "code_b",
    "kernels_a",
    "kernels_b",
    "opspecs_a",
    "opspecs_b",
    "ops_a",
    "ops_b",
    "ops_from_a",
    "ops_from_b",
    "time_a_us",
    "time_b_us",
    "time_change_us",
)


def render_csv(comparison: Comparison) -> str:
    """One row per pair of lines, in the comparison's order; lists joined by ``; ``."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for pair in comparison.lines:
        a, b = pair.a, pair.b
        cells: list[str | int] = [pair.status, "; ".join(pair.changes), pair.file]
        cells.append(MODULE_EVIDENCE if is_module(pair) else "line")
        cells += [u.line if u is not None else "" for u in (a, b)]
        cells += [u.code if u is not None else "" for u in (a, b)]
        cells += ["; ".join(k.call_site for k in u.kernels) if u is not None else "" for u in (a, b)]
        cells += ["; ".join(u.opspecs) if u is not None else "" for u in (a, b)]
        cells += ["; ".join(u.ops) if u is not None else "" for u in (a, b)]
        cells += [(u.ops_from or "") if u is not None else "" for u in (a, b)]
        cells += [_number(u.time_us if u is not None else None) for u in (a, b)]
        cells.append(_number(pair.time_change_us))
        writer.writerow(cells)
    return buffer.getvalue()


def _number(value: float | None) -> str:
    return "" if value is None else f"{value:.3f}"


def render_json(comparison: Comparison) -> str:
    """The document, checked against its schema first (a failure is this tool's bug): the
    strict records always (msgspec), jsonschema too up to ``schemas.AUTO_FULL_BYTES``
    (above it, as for artifacts, jsonschema's time is the check's whole cost)."""
    from spyre_provenance.validate import schemas  # only --format json needs it (and its import time)

    data = msgspec.json.encode(comparison)
    try:
        msgspec.json.decode(data, type=Comparison)
    except msgspec.ValidationError as exc:
        raise AssertionError(f"{COMPARE} document breaks its schema: {exc}") from None
    if len(data) <= schemas.AUTO_FULL_BYTES:
        import jsonschema  # only --format json needs it

        validator = jsonschema.Draft202012Validator(schemas.load_schema(COMPARE, comparison.version))
        error = next(validator.iter_errors(msgspec.json.decode(data)), None)
        if error is not None:
            where = "".join(f"[{p!r}]" for p in error.absolute_path)
            raise AssertionError(f"{COMPARE} document breaks its schema at ${where}: {error.message}")
    return data.decode() + "\n"
