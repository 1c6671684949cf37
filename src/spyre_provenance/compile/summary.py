"""After a compile: its summary, from what was written, re-read and checked
(``compile.output_check``), so it describes what tlparse and a CI job will actually see."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from spyre_provenance.base.errors import UNUSABLE
from spyre_provenance.compile.outcome import NO_TORCH_SPYRE_KERNEL, CompileOutcome
from spyre_provenance.compile.output_check import GraphCheck, OutputCheck
from spyre_provenance.links import misnamed as misnamed_rule
from spyre_provenance.model.names import COMPARED_FALLBACK_RANDOM
from spyre_provenance.model.records import (
    CACHE_STATES,
    BundleHandlesV4,
    GraphResult,
    MisnamedHandle,
    UpstreamComparison,
)
from spyre_provenance.runtime.lookup import graph_per_op
from spyre_provenance.validate import coverage
from spyre_provenance.viewer.pages import Page, Profiled

if TYPE_CHECKING:
    from spyre_provenance.compile.tracked import CompileReport

#: Below this, every output of a model is so small that any output would match eager.
TINY_OUTPUTS = 1e-6
#: marks the place of an op kind's line among the graphs' (no summary line starts with it)
_HOLE = "\0"
#: Violations listed per graph; the rest are counted.
SHOWN_VIOLATIONS = 10


def render(outcome: CompileOutcome) -> str:
    """The summary of a compile into an ``--out`` folder (the command line's); the viewer
    page's line comes after tlparse's pages."""
    report, checked, pages, out, viewer = outcome.report, outcome.checked, outcome.pages, outcome.out, outcome.viewer
    assert checked is not None and out is not None  # the command always compiles into an --out folder
    calls = f", {report.calls} calls" if report.calls > 1 else ""
    where = f"on the {report.backend} backend"
    if report.graphs and report.torch_spyre_kernels == 0:  # asked for spyre, compiled by Inductor alone
        where = (
            "by Inductor's own CPU kernels, NOT by torch-spyre (backend spyre asked for; no kernel is torch-spyre's)"
        )
    lines = [
        f"compiled {report.model} ({report.dtype}{', train' if report.train else ''}{calls}) "
        f"{where}: {len(report.graphs)} graph(s)",
        *_eager_lines(report),
    ]
    if not report.graphs:
        lines.append("  NO GRAPH RECORDED: the hook saw no kernel code generation")
    elif report.torch_spyre_kernels == 0:
        lines.append(f"  NOT TORCH-SPYRE: {NO_TORCH_SPYRE_KERNEL}")
    lines += _graphs_lines(report.graphs, checked.paired)
    lines += _unrecorded_lines(checked)
    lines.append(
        f"  artifacts: {checked.artifacts} validated, "
        + ("all valid" if checked.all_valid else f"{len(checked.invalid)} INVALID")
    )
    lines += [f"    {problem}" for problem in checked.invalid]
    lines.append(f"  written to {out}")
    for page in pages:
        lines.append(f"  provenance page: {page}")
    if viewer is not None or outcome.viewer_problem is not None:
        lines.append(f"  viewer page: {Page(viewer, outcome.viewer_problem).shown}")
    lines += verdict_lines(outcome)
    return "\n".join(lines)


def _unrecorded_lines(checked: OutputCheck) -> list[str]:
    """A block for each graph the log holds code for but the hook recorded no graph of (a
    compile made outside tracking, or one the hook lost): the verdict judges its coverage
    too, so the screen shows it."""
    paired = {id(logged) for logged in checked.paired if logged is not None}
    lines = []
    for logged in checked.graphs:
        if id(logged) in paired or logged.coverage is None:
            continue
        lines.append(
            f"  graph {logged.compile_id} on the log, recorded by no hook of this compile:"
            f" {logged.coverage.counts.call_sites} kernel call site(s)"
        )
        lines += _coverage_lines(logged.coverage, [])
        lines += [f"    INCONSISTENT: {problem}" for problem in logged.inconsistent]
    return lines


def verdict_lines(outcome: CompileOutcome) -> list[str]:
    """What the exit status stands for, with each of the verdict's reasons about the compile
    (the audit's are ``tail``'s): an exit status saying something is wanting always comes
    with its reasons on the screen, from the count it came from. Nothing when ok."""
    verdict = outcome.verdict
    if verdict.ok:
        return []
    state = "UNUSABLE" if verdict.state == UNUSABLE else "FOUND WANTING"
    reasons = outcome.compile_reasons
    if not reasons:  # the audit files' problems alone: tail prints each
        return [f"  {state} (exit {verdict.exit_code}): the audit files' problems, below"]
    return [f"  {state} (exit {verdict.exit_code}): {len(reasons)} reason(s)"] + [f"    {r}" for r in reasons]


def _eager_lines(report: CompileReport) -> list[str]:
    """How the compiled output compared with eager, and what qualifies the comparison."""
    if report.run_error is not None:
        return [f"  output vs eager: NOT CHECKED: the compiled code failed as it ran ({report.run_error})"]
    precision = report.precision
    verdict = "match" if report.matches_eager else "MISMATCH"
    if precision is not None:
        verdict = "match within float32 precision" if precision.within else "MISMATCH"
    lines = [f"  output vs eager: {verdict} (max abs error {report.max_abs_error:.3g})"]
    if precision is not None:
        lines.append(
            f"    past the tolerance, so compared with a float64 run of eager (Dynamo's accuracy rule): eager"
            f" float32 itself is {precision.eager_max_error:.3g} off it"
            + (", so the model amplifies rounding" if precision.eager_max_error > report.max_abs_error / 10 else "")
            + f"; at worst the compiled output's RMSE from it is {precision.compiled_rmse:.3g} where eager's is"
            f" {precision.eager_rmse:.3g}"
            + (
                f" (within {precision.multiplier:g}x eager's own)"
                if precision.within
                else f" (more than {precision.multiplier:g}x eager's own)"
            )
        )
    if report.graphs and 0 < report.output_scale < TINY_OUTPUTS:
        lines.append(
            f"    note: every output is below {TINY_OUTPUTS:g} in magnitude ({report.output_scale:.3g}): the"
            " comparison says little about the kernels"
        )
    if report.compared == COMPARED_FALLBACK_RANDOM:
        ops = report.random_ops
        shown = ", ".join(map(str, ops[:3])) + (f" and {len(ops) - 3} more" if len(ops) > 3 else "")
        lines.append(
            f"    compared on a second compile with fallback_random, which draws random numbers as eager does:"
            f" the model draws them ({shown}); the artifacts and pages are the first compile's, with"
            " Inductor's own random numbers"
        )
    return lines


def _graphs_lines(graphs: list[GraphResult], paired: list[GraphCheck | None]) -> list[str]:
    """Each graph's block, but per-op compiles (``links.per_op``: torch-spyre's eager mode)
    whose block would say nothing amiss: one line per op kind for those, where its first
    graph stands. A per-op graph with anything amiss keeps its own block."""
    folds: dict[str, list[tuple[GraphResult, GraphCheck]]] = {}
    lines: list[str] = []
    for graph, logged in zip(graphs, paired, strict=True):
        op = _foldable(graph, logged)
        if op is None:
            lines += _graph_lines(graph, logged)
            continue
        assert logged is not None  # _foldable: a graph the log judged
        if op not in folds:
            lines.append(_HOLE + op)  # where its line goes, filled in below
        folds.setdefault(op, []).append((graph, logged))
    return [_fold_line(line[1:], folds[line[1:]]) if line.startswith(_HOLE) else line for line in lines]


def _foldable(graph: GraphResult, logged: GraphCheck | None) -> str | None:
    """The ATen op when ``graph`` is a per-op compile whose block would say nothing amiss."""
    d = graph.diagnostics
    if logged is None or not logged.complete or d.faults or logged.spyre_disagreements:
        return None
    if d.disagreements or d.handleless_opspecs:
        return None
    if d.bundle_handles is not None and (d.bundle_handles.stale or d.bundle_handles.missing):
        return None
    if d.matches_upstream is not None and d.matches_upstream.relation not in ("equal", "extends"):
        return None
    if graph.node_mappings is None:  # the hook's mapping was left out: a fault, never here
        return None
    mapping = msgspec.to_builtins(graph.node_mappings)
    return graph_per_op(mapping, graph.stack_traces or {}, graph.opspec_handles)


def _fold_line(op: str, group: list[tuple[GraphResult, GraphCheck]]) -> str:
    """One op kind's per-op compiles: how many graphs (their compile ids) and call sites."""
    ids = ", ".join(graph.compile_id for graph, _ in group)
    sites = sum(len(graph.records) for graph, _ in group)
    linked = sum(logged.coverage.counts.linked_call_sites for _, logged in group if logged.coverage is not None)
    judged = sum(logged.coverage.counts.call_sites for _, logged in group if logged.coverage is not None)
    return (
        f"  per-op compiles of {op} (eager mode): {len(group)} graph(s) ({ids}), {sites} kernel call site(s);"
        f" call sites linked on the page: {linked}/{judged}; coverage complete"
    )


def _graph_lines(graph: GraphResult, logged: GraphCheck | None) -> list[str]:
    """One graph's block: its call sites, coverage, OpSpecs and what is amiss."""
    d = graph.diagnostics
    lines = []
    cached = "" if d.cache == CACHE_STATES[0] else f" ({d.cache}: from Inductor's cache)"
    lines.append(f"  graph {graph.compile_id} {graph.kind}: {len(graph.records)} kernel call site(s){cached}")
    cov = logged.coverage if logged is not None else None
    if cov is None:
        lines.append("    coverage: NOT JUDGED (the log holds no code for this graph)")
    else:
        lines += _coverage_lines(cov, d.inferred, d)
    if d.opspecs:
        lines.append(
            f"    OpSpecs: {d.opspecs}, without handle: {d.handleless_opspecs}, "
            f"handle/origin disagreements: {len(d.disagreements)}"
            + (f" ({', '.join(d.disagreements)})" if d.disagreements else "")
        )
        lines += misnamed_lines(d.misnamed_handles)
    lines += spyre_provenance_lines(logged)
    lines += _upstream_lines(d.matches_upstream)
    lines += _bundle_lines(d.bundle_handles)
    if d.faults:
        lines.append("    PARTIAL: " + "; ".join(d.faults))
        if d.mapping == "upstream":
            lines.append("    mapping left out: the log holds Inductor's own mapping for this graph")
    for problem in logged.inconsistent if logged is not None else ():
        lines.append(f"    INCONSISTENT: {problem}")
    return lines


def misnamed_lines(misnamed: list[MisnamedHandle]) -> list[str]:
    """The OpSpecs whose torch-spyre handle names another op or line than its node, each
    with both, and why (``links.misnamed``); nothing where there are none."""
    if not misnamed:
        return []
    lines = [
        f"      torch-spyre handles naming another op or line than their node: {len(misnamed)}"
        f" ({misnamed_rule.ORIGIN_NODE_RULE})"
    ]
    lines += [f"        {misnamed_rule.describe(m)}" for m in misnamed[:SHOWN_VIOLATIONS]]
    if len(misnamed) > SHOWN_VIOLATIONS:
        lines.append(f"        ... and {len(misnamed) - SHOWN_VIOLATIONS} more")
    return lines


def tail(outcome: CompileOutcome) -> list[str]:
    """After the summary: what became of the audit files, then the profile's line."""
    lines = []
    if outcome.audit is not None:
        lines += [f"  AUDIT NOT WRITTEN: {line}" for line in outcome.audit.problems]
        if outcome.audit.written:
            lines.append(f"  audit: {', '.join(map(str, outcome.audit.written))}")
    if outcome.profile_summary is not None or outcome.profile_problem is not None:  # --profile: last
        lines += Profiled(outcome.profile, outcome.profile_problem, outcome.profile_summary).lines
    return lines


def spyre_provenance_lines(logged: GraphCheck | None) -> list[str]:
    """Where torch-spyre logged its own provenance for the graph: how many call sites the
    hook's handles disagree with it on, and each; nothing where it logged none."""
    if logged is None or not logged.spyre_provenance:
        return []
    against = logged.spyre_disagreements
    head = (
        f"    torch-spyre's own provenance (spyre_provenance): {len(against)} disagreement(s) with the hook's handles"
    )
    return [head] + [f"      {line}" for line in against]


def _upstream_lines(compared: UpstreamComparison | None) -> list[str]:
    """How the mapping relates to the one Inductor builds for the graph (none: nothing to compare)."""
    if compared is None:
        return []
    if compared.relation == "equal":
        return ["    beside Inductor's own mapping: equal"]
    if compared.relation == "extends":
        return [f"    beside Inductor's own mapping: extends it, {compared.added} link(s) more"]
    shown = ", ".join(f"{d.map} {d.key} -> {d.value}" for d in compared.differences[:3])
    more = f" and {compared.missing - 3} more" if compared.missing > 3 else ""
    return [
        f"    beside Inductor's own mapping: DIFFERS, {compared.missing} of its link(s) not in this one"
        f" ({shown}{more}), {compared.added} link(s) it lacks"
    ]


def _bundle_lines(bundles: BundleHandlesV4 | None) -> list[str]:
    """What the check of the SuperDSC bundles found: stale handles are an earlier compile's
    (a kernel-cache hit), shared ones another call site's of the same kernel (its bundles
    are written once, from its first call site): only the first is a warning."""
    if bundles is None:
        return []
    shared = (
        f" ({bundles.shared} of another call site of the same kernel: a kernel called from several call"
        " sites has one set of bundles, made at its first)"
        if bundles.shared
        else ""
    )
    if not (bundles.stale or bundles.missing):
        return [f"    SuperDSC bundles: {bundles.checked}, every debug_handle_ this compile's{shared}"]
    return [
        f"    STALE BUNDLES: {bundles.stale} of {bundles.checked} SuperDSC bundles carry the debug_handle_ of no call"
        f" site of this compile, {bundles.missing} carry none (served from the kernel cache, keyed without"
        f" handles); the mapping and the OpSpec artifact hold this compile's handles{shared}"
    ]


def _gap_lines(label: str, count: int, total: int, keys: list[str], gaps: list) -> list[str]:
    """``label: count/total`` and, for the kernels short of it, why (from the diagnostics)."""
    lines = [f"    {label}: {count}/{total}"]
    why = {gap.kernel: gap.why for gap in gaps}
    for key in keys[:SHOWN_VIOLATIONS]:
        lines.append(f"      {key}: {why.get(key, 'no reason recorded')}")
    if len(keys) > SHOWN_VIOLATIONS:
        lines.append(f"      ... and {len(keys) - SHOWN_VIOLATIONS} more")
    return lines


def _coverage_lines(cov: coverage.GraphCoverage, inferred: list, diag: Any = None) -> list[str]:
    c, exempt = cov.counts, cov.counts.exempt_nodes
    consumers = len({link.kernel for link in inferred if link.why == "consumer"})
    inlined = len({link.node for link in inferred if link.why == "inlined"})
    lines = [
        f"    call sites linked on the page: {c.linked_call_sites}/{c.call_sites}"
        + (f" ({consumers} graph-input copies through the nodes that read them)" if consumers else ""),
        f"    post-grad compute nodes reached: {c.reached_nodes}/{c.compute_nodes}"
        + (f" ({inlined} inlined into their users' kernels)" if inlined else "")
        + f"; no kernel needed: {exempt.view} view/metadata, {exempt.dead} dead, {exempt.constant} constant",
    ]
    lines += _gap_lines(
        "kernels with a source line",
        c.kernels_with_source,
        c.kernels,
        cov.without_source,
        diag.without_source if diag is not None else [],
    )
    lines += _gap_lines(
        "kernels reaching a pre-grad node",
        c.kernels_with_pre_grad,
        c.kernels,
        cov.without_pre_grad,
        diag.without_pre_grad if diag is not None else [],
    )
    lines += [f"    VIOLATION: {v}" for v in cov.violations[:SHOWN_VIOLATIONS]]
    if len(cov.violations) > SHOWN_VIOLATIONS:
        lines.append(f"    ... and {len(cov.violations) - SHOWN_VIOLATIONS} more violations")
    lines += [f"    hint: {h}" for h in cov.hints[:SHOWN_VIOLATIONS]]
    if len(cov.hints) > SHOWN_VIOLATIONS:
        lines.append(f"    ... and {len(cov.hints) - SHOWN_VIOLATIONS} more hints")
    return lines
