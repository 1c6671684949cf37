"""A torch.profiler Chrome trace with each kernel event's provenance in its ``args``
(``spyre-provenance annotate``).

Field names: ``stack`` is upstream's. torch 2.14's ``torch/_inductor/profiler.py``
(``_InductorTraceProcessor.add_to_chrome_trace``) sets ``event["args"]["stack"]`` to the
kernel's ``stack_traces`` (a list of stack-trace strings, as in ``kernel_information``), so
a tool reading upstream's annotated traces reads ours; an event that has one keeps it.
torch-spyre's own fields (``provenance_key``, its kernel provenance key, and
``debug_handles``, its handle ids: REFERENCE.md section 6) are never touched. The
project's fields go under one prefix no one else writes, ``spyre_provenance_``:

``spyre_provenance_call_site``        the mapping key ``name:N`` of the call site
``spyre_provenance_post_grad_nodes``  its post-grad nodes (``cppCodeToPost``)
``spyre_provenance_pre_grad_nodes``   their pre-grad nodes (``postToPre``)
``spyre_provenance_aten_ops``         Original ATen ops (see ``lookup``)
``spyre_provenance_source``           ``file:line`` of each frame, the user's first
``spyre_provenance_graph``            ``<model> <compile id> <graph kind>``
``spyre_provenance_bundle``           the bundle's provenance key and folder, when recorded
``spyre_provenance_evidence``         what placed the event in that graph (``runtime.attribution``)

Which events are kernel events, and which call site each one ran, is
``runtime.attribution``'s: an event it cannot place in exactly one graph is left as it
is and reported (unknown, ambiguous, or from another build), never annotated with a
guess. No event is ever dropped.

Pure: no torch.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Any

import msgspec

from spyre_provenance.base.errors import UnusableInput
from spyre_provenance.runtime import attribution, trace_stream
from spyre_provenance.runtime.index import KernelIndex, Site
from spyre_provenance.runtime.lookup import GraphView

PREFIX = "spyre_provenance_"
LISTED = 20  # event names each report line lists


class Summary(msgspec.Struct):
    output: str
    events: int
    kernel_events: int
    annotated: int
    unknown: dict[str, int]  # kernel event name -> how many events, for names not known
    ambiguous: dict[str, int] = msgspec.field(default_factory=dict)  # "name: why" -> events
    mismatched: dict[str, int] = msgspec.field(default_factory=dict)  # "name: why" -> events
    malformed: dict[str, int] = msgspec.field(default_factory=dict)  # "name: why" -> events

    def line(self) -> str:
        text = f"annotated {self.annotated} of {self.kernel_events} kernel events ({self.events} events in all): {self.output}"
        for title, counts in (
            ("unknown kernel events", self.unknown),
            ("NOT ANNOTATED, more than one graph could have run them", self.ambiguous),
            ("NOT ANNOTATED, from another build of the model than these artifacts", self.mismatched),
            ("NOT ANNOTATED, their debug_handles are no list of handle ids", self.malformed),
        ):
            if counts:
                listed = sorted(counts.items())
                shown = ", ".join(f"{n} x{c}" for n, c in listed[:LISTED])
                more = f", and {len(listed) - LISTED} more" if len(listed) > LISTED else ""
                text += f"\n  {title} ({sum(counts.values())}): {shown}{more}"
        return text


def provenance_fields(index: KernelIndex, site: Site) -> dict[str, Any]:
    """The fields ``annotate`` adds for one call site (``stack`` upstream's, the rest ours)."""
    graph = index.graphs[site[0]]
    call = GraphView.of(graph).call_site(site[1])
    fields: dict[str, Any] = {
        "stack": [s for s in graph.stack_traces.get(site[1]) or [] if isinstance(s, str)],
        f"{PREFIX}call_site": call.key,
        f"{PREFIX}post_grad_nodes": call.post_grad_nodes,
        f"{PREFIX}pre_grad_nodes": call.pre_grad_nodes,
        f"{PREFIX}aten_ops": call.aten_ops,
        f"{PREFIX}source": [f"{s.file}:{s.line}" for s in call.source],
        f"{PREFIX}graph": f"{graph.model} {graph.compile_id} {graph.graph}",
    }
    if call.provenance_key or call.bundle_folder:
        fields[f"{PREFIX}bundle"] = {"provenance_key": call.provenance_key, "folder": call.bundle_folder}
    return fields


class _Annotator:
    def __init__(self, index: KernelIndex, regions: attribution.Regions) -> None:
        self.index = index
        self.attributor = attribution.Attributor(index, regions)
        self.fields: dict[Site, dict[str, Any]] = {}

    def event(self, event: dict[str, Any]) -> attribution.Verdict:
        """Annotate ``event`` when it is a kernel event placed in one call site."""
        verdict = self.attributor.verdict(event)
        if verdict.status != "annotated" or verdict.site is None:
            return verdict
        fields = self.fields.get(verdict.site)
        if fields is None:
            fields = self.fields[verdict.site] = provenance_fields(self.index, verdict.site)
        args = event.get("args")
        if not isinstance(args, dict):
            args = event["args"] = {}
        for name, value in fields.items():
            if name not in args:  # upstream's stack, where it wrote one, stays as it is
                args[name] = value
        args[f"{PREFIX}evidence"] = verdict.evidence
        return verdict


def annotate(trace: str | os.PathLike[str], index: KernelIndex, output: str | os.PathLike[str]) -> Summary:
    """Write ``trace`` with provenance to ``output`` (atomically; may be ``trace`` itself).
    Raises UnusableInput, and leaves no output file, for a trace that is not one. Reads the
    trace twice when the index holds several graphs: the compiled-graph regions first, then
    each event."""
    trace, output = Path(trace), Path(output)
    if not trace.is_file():
        raise UnusableInput(str(trace), "no such file")
    # the regions only tell graphs apart: with one graph there is nothing to tell, and no
    # second reading of the trace
    first = (v for kind, _, v in trace_stream.read_trace(trace) if kind == "event") if len(index.graphs) > 1 else ()
    regions = attribution.read_regions(first)
    annotator = _Annotator(index, regions)
    counts: Counter[str | None] = Counter()
    unknown: Counter[str] = Counter()
    ambiguous: Counter[str] = Counter()
    mismatched: Counter[str] = Counter()
    malformed: Counter[str] = Counter()
    writer = trace_stream.TraceWriter(output)
    events = 0
    try:
        for kind, key, value in trace_stream.read_trace(trace):
            if kind == "member":
                writer.member(key, value)
                continue
            verdict = annotator.event(value)
            counts[verdict.status] += 1
            if verdict.status == "unknown":
                unknown[value["name"]] += 1
            elif verdict.status == "ambiguous":
                ambiguous[f"{value['name']}: {verdict.why}"] += 1
            elif verdict.status == "mismatch":
                mismatched[f"{value['name']}: {verdict.why}"] += 1
            elif verdict.status == "malformed":
                malformed[f"{value['name']}: {verdict.why}"] += 1
            writer.event(value)
            events += 1
        writer.commit()
    except BaseException:
        writer.discard()
        raise
    kernel_events = events - counts[None]
    return Summary(
        str(output),
        events,
        kernel_events,
        counts["annotated"],
        dict(unknown),
        dict(ambiguous),
        dict(mismatched),
        dict(malformed),
    )
