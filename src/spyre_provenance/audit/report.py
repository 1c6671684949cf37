"""The provenance audit: field coverage per stage, where each field drops, what changed.

The seed audit (``shared/seed/provenance_audit_analysis.txt``) was made by hand and went
stale whenever the compiler moved. Here it is data: ``capture.audit_probe`` counts, during
the tracked compile, which provenance fields the live objects of each stage carry
(``model.audit_records.Stage``); this module turns those counts into the audit document
(``make_audit``), finds where each field's coverage first falls (``find_drops``), compares
two audits (``changes_between``: exit 1 when a field's coverage fell or a kernel lost its mapping)
and renders the tables (``render_markdown``) and the short form ``audit`` prints
(``render_short``).

Pure: no torch import.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Sequence
from pathlib import Path

import msgspec

from spyre_provenance.base.errors import UnusableInput
from spyre_provenance.links.pairing import pair_graphs, pair_kernels
from spyre_provenance.model import jsonio
from spyre_provenance.model.audit_records import (
    FIELDS,
    RUN_DEPENDENT,
    STAGE_HEADS,
    STAGE_TITLES,
    AuditV1,
    Drop,
    FieldCount,
    GraphAudit,
    KernelAudit,
    Measured,
    Stage,
    Toolchain,
)
from spyre_provenance.model.names import AUDIT
from spyre_provenance.validate import schemas

JSON_FILE = f"{AUDIT}.json"
MARKDOWN_FILE = f"{AUDIT}.md"

#: The seed audit's legend: present on all, partial, reachable but empty, not applicable.
LEGEND = {"all": "✅", "partial": "◐", "empty": "❌", "n/a": "➖"}
LEGEND_TEXT = "✅ present on all · ◐ partial · ❌ reachable but empty · ➖ not applicable"


# --- building ---------------------------------------------------------------------------------


def count(nodes: Sequence[str], has: Iterable[bool]) -> FieldCount:
    """A field's count over ``nodes`` (``has[i]``: node i carries it)."""
    flags = list(has)
    return FieldCount(sum(flags), len(flags), [n for n, ok in zip(nodes, flags, strict=True) if not ok])


def _share_below(a: FieldCount, b: FieldCount) -> bool:
    """Whether a's share of nodes is below b's (exact: no floats)."""
    return a.present * b.total < b.present * a.total


def find_drops(stages: Sequence[Stage]) -> list[Drop]:
    """For each field, the first stage where its coverage falls below the stage before that
    counts it (or where it is already partial when first counted), with the nodes lacking it."""
    drops = []
    for field in FIELDS:
        previous: tuple[str, FieldCount] | None = None
        for stage in stages:
            here = stage.fields.get(field)
            if here is None:
                continue
            if previous is None and here.present < here.total:
                drops.append(Drop(field, stage.name, None, list(here.missing)))
                break
            if previous is not None and _share_below(here, previous[1]):
                drops.append(Drop(field, stage.name, previous[0], list(here.missing)))
                break
            previous = (stage.name, here)
    return drops


def make_graph(
    compile_id: str, kind: str, stages: list[Stage], kernels: list[KernelAudit], lost: list[str]
) -> GraphAudit:
    return GraphAudit(compile_id, kind, stages, find_drops(stages), kernels, lost)


def make_audit(
    graphs: Sequence[GraphAudit | None],
    *,
    model: str,
    dtype: str,
    backend: str,
    train: bool,
    toolchain: Toolchain,
    tracking_level: int,
    generated: str,
) -> AuditV1:
    """The audit document of one compile (graphs the probe did not see are left out)."""
    return AuditV1(
        generated=generated,
        model=model,
        dtype=dtype,
        backend=backend,
        train=train,
        toolchain=toolchain,
        measured=Measured(tracking_level, "bypassed", list(RUN_DEPENDENT)),
        graphs=[g for g in graphs if g is not None],
    )


def to_json_bytes(audit: AuditV1) -> bytes:
    """The file's bytes: 2-space JSON, key order as built, UTF-8 (the legend is not ASCII)."""
    return (json.dumps(msgspec.to_builtins(audit), indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def check(audit: AuditV1) -> list[str]:
    """Problems of a built audit, by the same validator ``validate`` runs (empty: write it)."""
    report = schemas.validate_bytes(to_json_bytes(audit), AUDIT)
    return [str(p) for p in report.problems]


def read(path: str | Path) -> AuditV1:
    """An audit file, validated; UnusableInput (one line) when it is not a valid audit."""
    path = Path(path)
    data = jsonio.read_file(path)
    report = schemas.validate_bytes(data, AUDIT, location=str(path))
    if not report.ok:
        raise UnusableInput(str(path), f"not a valid provenance audit: {report.problems[0]}")
    return from_document(jsonio.load_json(data, location=str(path)))


def from_document(doc: object) -> AuditV1:
    """A decoded, valid audit document as the record."""
    return msgspec.convert(doc, AuditV1)


# --- comparing two runs -----------------------------------------------------------------------


@dataclasses.dataclass
class Changes:
    """What moved from a previous audit to this one. ``failures`` are the lines that make
    ``audit --against`` exit 1 (a field's coverage fell, a kernel lost its mapping);
    ``lines`` all changes in order, those included; ``toolchains`` both runs' stacks."""

    lines: list[str]
    failures: list[str]
    toolchains: list[str]

    @property
    def fell(self) -> bool:
        return bool(self.failures)


def _commit(sha: str) -> str:
    # A commit id is shortened as git shortens it; anything else (a golden file's
    # placeholder) is shown whole.
    return sha[:12] if len(sha) == 40 and all(c in "0123456789abcdef" for c in sha) else sha


def toolchain_text(audit: AuditV1) -> str:
    t = audit.toolchain
    torch = f"torch {t.torch or 'unknown'}" + (f" (git {_commit(t.torch_git)})" if t.torch_git else "")
    spyre = (
        f"torch-spyre {t.torch_spyre}" + (f" (git {_commit(t.torch_spyre_git)})" if t.torch_spyre_git else "")
        if t.torch_spyre
        else "no torch-spyre"
    )
    return f"{torch}, {spyre}, spyre-provenance {t.spyre_provenance}"


def changes_between(old: AuditV1, new: AuditV1) -> Changes:
    """Everything that moved from ``old`` (the previous run) to ``new``."""
    lines: list[str] = []
    failures: list[str] = []
    for key in ("model", "dtype", "backend", "train"):
        if getattr(old, key) != getattr(new, key):
            lines.append(f"{key}: {json.dumps(getattr(old, key))} -> {json.dumps(getattr(new, key))}")
    for graph_old, graph_new in pair_graphs(old.graphs, new.graphs, lambda g: (g.compile_id, g.graph)):
        if graph_new is None:
            assert graph_old is not None  # pair_graphs never pairs None with None
            lines.append(f"graph {_graph_label(graph_old)}: only in the previous run")
            continue
        if graph_old is None:
            lines.append(f"graph {_graph_label(graph_new)}: new in this run")
            continue
        head = f"graph {_graph_label(graph_new)}"
        _compare_stages(head, graph_old, graph_new, lines, failures)
        _compare_kernels(head, graph_old.kernels, graph_new.kernels, lines, failures)
    toolchains = [f"previous run: {toolchain_text(old)}", f"this run: {toolchain_text(new)}"]
    return Changes(lines, failures, toolchains)


def _graph_label(graph: GraphAudit) -> str:
    return f"{graph.compile_id} {graph.graph}"


def _ratio(c: FieldCount) -> str:
    return f"{c.present}/{c.total}"


def _compare_stages(head: str, old: GraphAudit, new: GraphAudit, lines: list[str], failures: list[str]) -> None:
    stages_old = {s.name: s for s in old.stages}
    stages_new = {s.name: s for s in new.stages}
    for name in [*stages_new, *(n for n in stages_old if n not in stages_new)]:
        title = STAGE_TITLES.get(name, name)
        if name not in stages_old:
            lines.append(f"{head}: stage {title}: new in this run ({len(stages_new[name].nodes)} nodes)")
            continue
        if name not in stages_new:
            lines.append(f"{head}: stage {title}: only in the previous run ({len(stages_old[name].nodes)} nodes)")
            continue
        a, b = stages_old[name], stages_new[name]
        if len(a.nodes) != len(b.nodes):
            lines.append(
                f"{head}: stage {title}: {len(a.nodes)} -> {len(b.nodes)} nodes (an op count depends on"
                " the schedule and the compiler version: reported, not a regression)"
            )
        for field in FIELDS:
            ca, cb = a.fields.get(field), b.fields.get(field)
            if ca is None and cb is None:
                continue
            where = f"{head}: {field} at {title}"
            if ca is None:
                assert cb is not None
                lines.append(f"{where}: now counted, {_ratio(cb)}")
            elif cb is None:
                lines.append(f"{where}: no longer applies (was {_ratio(ca)})")
            elif _share_below(cb, ca):
                lost = [n for n in cb.missing if n not in ca.missing] or cb.missing
                line = f"{where}: coverage fell {_ratio(ca)} -> {_ratio(cb)}" + (
                    f", lacking on {', '.join(lost)}" if lost else ""
                )
                if field in RUN_DEPENDENT:
                    line += " (a run-dependent field: see how it was measured)"
                lines.append(line)
                failures.append(line)
            elif _share_below(ca, cb):
                lines.append(f"{where}: coverage rose {_ratio(ca)} -> {_ratio(cb)}")


def _compare_kernels(
    head: str, old: list[KernelAudit], new: list[KernelAudit], lines: list[str], failures: list[str]
) -> None:
    by_key_old, by_key_new = {k.key: k for k in old}, {k.key: k for k in new}
    paired = pair_kernels({k.key: k.nodes for k in old}, {k.key: k.nodes for k in new})
    pairs = [(k, by_key_new[k.key]) for k in old if k.key in by_key_new]
    for old_key, new_key in paired.renamed.items():
        lines.append(f"{head}: kernel renamed: {old_key} -> {new_key}")
        pairs.append((by_key_old[old_key], by_key_new[new_key]))
    for key in paired.removed:
        lines.append(f"{head}: kernel removed: {key} (was [{', '.join(by_key_old[key].nodes)}])")
    for key in paired.added:
        lines.append(f"{head}: kernel added: {key} -> [{', '.join(by_key_new[key].nodes)}]")
    for a, b in pairs:
        if a.mapped and not b.mapped:
            line = f"{head}: kernel {b.key} lost its mapping (was [{', '.join(a.nodes)}])"
            lines.append(line)
            failures.append(line)
            continue
        if b.mapped and not a.mapped:
            lines.append(f"{head}: kernel {b.key} is mapped now")
        if a.linked and not b.linked:
            # Still mapped, but the page no longer links it: what a user of tlparse loses.
            line = f"{head}: kernel {b.key} is no longer linked on the provenance page"
            lines.append(line)
            failures.append(line)
        elif b.linked and not a.linked:
            lines.append(f"{head}: kernel {b.key} is now linked on the provenance page")


# --- rendering --------------------------------------------------------------------------------


def cell(c: FieldCount | None) -> str:
    if c is None:
        return LEGEND["n/a"]
    mark = LEGEND["all"] if c.present == c.total else LEGEND["empty"] if c.present == 0 else LEGEND["partial"]
    return f"{mark} {c.present}/{c.total}"


#: Nodes a drop line names; the rest are counted (the JSON document lists every one): a
#: real model's backward lacks nn_module_stack on some 300 nodes.
SHOWN_NODES = 12


def drop_text(drop: Drop, stages: Sequence[Stage]) -> str:
    by_name = {s.name: s for s in stages}
    here = by_name[drop.stage].fields[drop.field]
    shown = ", ".join(drop.nodes[:SHOWN_NODES])
    more = f" and {len(drop.nodes) - SHOWN_NODES} more" if len(drop.nodes) > SHOWN_NODES else ""
    lacking = f": {shown}{more} lack it" if drop.nodes else ""
    if drop.since is None and here.present == 0:
        return f"{drop.field}: empty where first counted, {STAGE_TITLES[drop.stage]} ({_ratio(here)}): reachable, never set"
    if drop.since is None:
        return f"{drop.field}: partial where first counted, {STAGE_TITLES[drop.stage]} ({_ratio(here)}){lacking}"
    before = by_name[drop.since].fields[drop.field]
    return (
        f"{drop.field}: falls at {STAGE_TITLES[drop.stage]} ({_ratio(before)} {STAGE_HEADS[drop.since]}"
        f" -> {_ratio(here)}){lacking}"
    )


def measured_text(audit: AuditV1) -> str:
    m = audit.measured
    tracking = "on" if m.provenance_tracking_level else "off"
    return (
        f"Measured with provenance tracking {tracking} (provenance_tracking_level {m.provenance_tracking_level}) and the"
        f" FX-graph and AOTAutograd caches {m.graph_caches}. {', '.join(m.run_dependent)} vary with the pass schedule"
        " and with tracking on or off: their counts hold for this setting only (from_node rises when tracking is on)."
    )


def title(audit: AuditV1) -> str:
    mode = " (training)" if audit.train else ""
    return f"{audit.model} ({audit.dtype}){mode} on the {audit.backend} backend"


def render_markdown(audit: AuditV1, changes: Changes | None = None, against: str | None = None) -> str:
    """``provenance_audit.md``: the seed audit's tables, regenerated."""
    out = [f"# Provenance audit: {title(audit)}", ""]
    out += [
        f"- Generated: {audit.generated}",
        f"- Model: `{audit.model}`, dtype {audit.dtype}, {'forward and backward' if audit.train else 'inference'}",
        f"- Backend: {audit.backend}",
        f"- Toolchain: {toolchain_text(audit)}",
        f"- {measured_text(audit)}",
        "",
        f"Legend: {LEGEND_TEXT}. Counts are over the nodes of each stage the field applies to.",
        "",
    ]
    for graph in audit.graphs:
        out += _graph_markdown(graph)
    out += ["## Changes since the previous run", ""]
    if changes is None:
        out += ["No previous audit given (`--against PREVIOUS_AUDIT.json`).", ""]
    else:
        out += [f"Against `{against}`.", ""] + [f"- {t}" for t in changes.toolchains] + [""]
        out += [f"- {line}" for line in changes.lines] or ["- nothing moved"]
        out += [
            "",
            f"Verdict: {'coverage fell, or a kernel lost its mapping or link (exit 1)' if changes.fell else 'no coverage fell, no mapping or link lost'}.",
            "",
        ]
    return "\n".join(out)


def _graph_markdown(graph: GraphAudit) -> list[str]:
    out = [f"## Graph {graph.compile_id} {graph.graph}", "", "### 1. Field coverage per stage", ""]
    heads = [f"{STAGE_HEADS[s.name]} ({len(s.nodes)})" for s in graph.stages]
    out.append("| field | " + " | ".join(heads) + " |")
    out.append("|---|" + "---|" * len(heads))
    for field in FIELDS:
        if not any(field in s.fields for s in graph.stages):
            continue
        out.append(f"| `{field}` | " + " | ".join(cell(s.fields.get(field)) for s in graph.stages) + " |")
    named = [
        f"{STAGE_HEADS[s.name]} = {STAGE_TITLES[s.name]}"
        for s in graph.stages
        if STAGE_HEADS[s.name] != STAGE_TITLES[s.name]
    ]
    out += ["", "Stages: " + "; ".join(named) + ". Node counts are in brackets.", ""]
    out += ["### 2. Where each field is dropped", ""]
    out += [f"- {drop_text(d, graph.stages)}" for d in graph.drops] or ["- no field loses coverage at any stage"]
    out += [
        "",
        "### 3. Kernels",
        "",
        "| kernel | get_kernel_metadata | OpSpecs (debug handle) | mapped | linked |",
        "|---|---|---|---|---|",
    ]
    for k in graph.kernels:
        specs = (
            "➖"
            if k.opspecs is None
            else ", ".join(
                f"{s.buffer or '?'} {s.op} {LEGEND['all'] if s.handle else LEGEND['empty']}" for s in k.opspecs
            )
            or "none"
        )
        out.append(f"| `{k.key}` | {k.metadata or '(none)'} | {specs} | {_yes(k.mapped)} | {_yes(k.linked)} |")
    if graph.lost:
        out += ["", "What the audit could not read on this graph:", ""] + [f"- {line}" for line in graph.lost]
    out.append("")
    return out


def _yes(flag: bool) -> str:
    return "yes" if flag else "**no**"


def render_short(
    audit: AuditV1, written: Sequence[str] = (), changes: Changes | None = None, against: str | None = None
) -> str:
    """What ``audit`` prints: per graph, the stages' counts in one line, the drops, the kernels;
    then the changes since the previous run."""
    out = [f"audit of {title(audit)}: {len(audit.graphs)} graph(s); {toolchain_text(audit)}"]
    for graph in audit.graphs:
        out.append(
            f"  graph {graph.compile_id} {graph.graph}: "
            + ", ".join(f"{STAGE_HEADS[s.name]} {len(s.nodes)}" for s in graph.stages)
            + " node(s)"
        )
        full = [f for f in FIELDS if _full_everywhere(graph.stages, f)]
        if full:
            out.append(f"    present on all nodes wherever counted: {', '.join(full)}")
        out += [f"    drop: {drop_text(d, graph.stages)}" for d in graph.drops]
        mapped = sum(k.mapped for k in graph.kernels)
        linked = sum(k.linked for k in graph.kernels)
        specs = [s for k in graph.kernels for s in (k.opspecs or ())]
        handles = sum(s.handle for s in specs)
        line = f"    kernels: {len(graph.kernels)}, mapped {mapped}/{len(graph.kernels)}, linked {linked}/{len(graph.kernels)}"
        if any(k.opspecs is not None for k in graph.kernels):
            line += f"; OpSpecs {len(specs)}, with debug handle {handles}/{len(specs)}"
        out.append(line)
        out += [f"    could not read: {line}" for line in graph.lost]
    out.append(
        f"  {RUN_DEPENDENT[0]} and {RUN_DEPENDENT[1]} are run-dependent: measured with provenance_tracking_level"
        f" {audit.measured.provenance_tracking_level}, graph caches {audit.measured.graph_caches}"
    )
    if changes is not None:
        out.append(
            f"  changes since {against}: {len(changes.lines)}"
            + (f", {len(changes.failures)} of them LOST coverage, a mapping or a link" if changes.fell else "")
        )
        out += [f"    {line}" for line in changes.lines]
        out += [f"    {t}" for t in changes.toolchains]
    if written:
        out.append(f"  written: {', '.join(written)}")
    return "\n".join(out)


def _full_everywhere(stages: Sequence[Stage], field: str) -> bool:
    counted = [s.fields[field] for s in stages if field in s.fields]
    return bool(counted) and all(c.present == c.total for c in counted)
