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
``spyre_provenance_source``           ``file:line`` of each frame, the fused lines first (lookup's order)
``spyre_provenance_graph``            ``<model> <compile id> <graph kind>``
``spyre_provenance_bundle``           the bundle's provenance key and folder, when recorded
``spyre_provenance_evidence``         what placed the event in that graph (``runtime.attribution``)
``spyre_provenance_launch``           with a Python stack in the trace: the user's frames that
                                      launched it (``file:line in function``, outermost first)
                                      and what tied it to them (``runtime.launches``); with a
                                      call site the tracked process recorded at launch, that
                                      line is the innermost frame (``by``: recorded at launch)

A per-op compile's kernel (``links.per_op``: torch-spyre's eager mode) ran from whichever
line called the op, not the line its compile recorded (the first call's): with stacks in the
trace, its ``stack`` is the launch's own (upstream's form, a list of one stack-trace string)
and ``spyre_provenance_source`` the user's frame that launched it; an event whose launch the
stacks do not hold gets neither, and is counted apart. A trace without stacks keeps the
compile's lines, and the report says how to take stacks.

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
from spyre_provenance.runtime import attribution, launches, trace_stream
from spyre_provenance.runtime.index import KernelIndex, Site
from spyre_provenance.runtime.lookup import GraphView

PREFIX = "spyre_provenance_"
LISTED = 20  # event names each report line lists


class AnnotateSummary(msgspec.Struct):
    """What ``annotate`` did to a trace: ``output`` written, its events counted by verdict
    (``runtime.attribution``), the kernel events not annotated named by why."""

    output: str
    events: int
    kernel_events: int
    annotated: int
    unknown: dict[str, int]  # kernel event name -> how many events, for names not known
    ambiguous: dict[str, int] = msgspec.field(default_factory=dict)  # "name: why" -> events
    mismatched: dict[str, int] = msgspec.field(default_factory=dict)  # "name: why" -> events
    malformed: dict[str, int] = msgspec.field(default_factory=dict)  # "name: why" -> events
    per_op_events: int = 0  # annotated events of per-op compiles
    stacks: bool = False  # the trace holds Python stacks
    unplaced: int = 0  # per-op events with stacks in the trace but no user frame launching them

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
        if self.per_op_events and not self.stacks:
            text += (
                f"\n  {self.per_op_events} events of per-op compiles keep their compile's line (the first call's"
                " only): the trace has no Python stacks; profile with torch.profiler.profile(..., with_stack=True)"
                " to give each launch its own"
            )
        elif self.unplaced:
            text += (
                f"\n  {self.unplaced} events of per-op compiles without a source: the trace's stacks hold no"
                " user frame launching them"
            )
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
        f"{PREFIX}graph": graph.label,
    }
    if call.provenance_key or call.bundle_folder:
        fields[f"{PREFIX}bundle"] = {"provenance_key": call.provenance_key, "folder": call.bundle_folder}
    return fields


class _Annotator:
    def __init__(self, index: KernelIndex, regions: attribution.Regions, stacks: launches.Launches) -> None:
        self.index = index
        self.attributor = attribution.Attributor(index, regions)
        self.fields: dict[Site, dict[str, Any]] = {}
        self.stacks = stacks
        self.places = launches.per_op_places(index, stacks) if stacks.has_stacks else None
        self.per_op_events = self.unplaced = 0

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
        per_op = launches.per_op(self.index, verdict.site[0]) is not None
        self.per_op_events += per_op
        recorded = launches.recorded_site(self.stacks, self.places, event, per_op)
        if recorded is not None:
            fields = self._recorded_fields(event, fields, recorded, per_op)
        elif per_op:
            if self.places is not None:
                fields = self._per_op_fields(event, fields)
        elif self.places is not None:
            launch = self.stacks.of(event)
            if launch is not None:
                fields = {**fields, f"{PREFIX}launch": _launch_field(launch, launches.user_frames(launch[0]))}
        for name, value in fields.items():
            if name not in args:  # upstream's stack, where it wrote one, stays as it is
                args[name] = value
        args[f"{PREFIX}evidence"] = verdict.evidence
        return verdict

    def _recorded_fields(
        self, event: dict[str, Any], fields: dict[str, Any], recorded: launches.LaunchFrame, per_op: bool
    ) -> dict[str, Any]:
        """An event's fields with the line its launch recorded: its launch frames (the stack's
        user frames around it, when the trace has stacks) and, for a per-op kernel, its
        source and stack (the compile's are the first call's only)."""
        launch = self.stacks.of(event) if self.places is not None else None
        frames = launches.with_recorded(launches.user_frames(launch[0]) if launch else [], recorded)
        mine = dict(fields)
        mine[f"{PREFIX}launch"] = {
            "by": launches.BY_RECORDED,
            "frames": [f"{f.file}:{f.line} in {f.function}" for f in frames],
        }
        if per_op:
            mine["stack"] = [launches.upstream_stack(tuple(frames))]
            mine[f"{PREFIX}source"] = [f"{recorded.file}:{recorded.line}"]
        return mine

    def _per_op_fields(self, event: dict[str, Any], fields: dict[str, Any]) -> dict[str, Any]:
        """A per-op event's fields: the stack and source of its own launch, or neither."""
        assert self.places is not None
        launch = self.stacks.of(event)
        placed = self.places.place(launch[0]) if launch else None
        mine = {k: v for k, v in fields.items() if k not in ("stack", f"{PREFIX}source")}
        if launch is None or placed is None:
            self.unplaced += 1
            return mine
        inner, outer = placed
        mine["stack"] = [launches.upstream_stack(launch[0])]
        mine[f"{PREFIX}source"] = [f"{inner.file}:{inner.line}"]
        mine[f"{PREFIX}launch"] = _launch_field(launch, [*outer, inner])
        return mine


def _launch_field(
    launch: tuple[tuple[launches.LaunchFrame, ...], str], user: list[launches.LaunchFrame]
) -> dict[str, Any]:
    return {"by": launch[1], "frames": [f"{f.file}:{f.line} in {f.function}" for f in user]}


def default_output(trace: Path) -> Path:
    """Where ``annotate`` writes ``trace`` annotated unless told: beside it, ``.annotated``
    before its ``.json`` (``.json.gz``): the command's and the API's one default."""
    name = trace.name
    for suffix in (".json.gz", ".json"):
        if name.endswith(suffix):
            return trace.with_name(name[: -len(suffix)] + ".annotated" + suffix)
    return trace.with_name(name + ".annotated.json")


def annotate(trace: str | os.PathLike[str], index: KernelIndex, output: str | os.PathLike[str]) -> AnnotateSummary:
    """Write ``trace`` with provenance to ``output`` (atomically; may be ``trace`` itself).
    Raises UnusableInput, and leaves no output file, for a trace that is not one. Reads the
    trace twice: the compiled-graph regions, stacks and call sites first, then each event."""
    trace, output = Path(trace), Path(output)
    if not trace.is_file():
        raise UnusableInput(str(trace), "no such file")
    regions, stacks = _first_reading(trace, index)
    annotator = _Annotator(index, regions, stacks)
    tally = _Tally()
    writer = trace_stream.TraceWriter(output)
    try:
        for kind, key, value in trace_stream.read_trace(trace):
            if kind == "member":
                writer.member(key, value)
                continue
            tally.add(value, annotator.event(value))
            writer.event(value)
        writer.commit()
    except BaseException:
        writer.discard()
        raise
    return tally.summary(str(output), annotator, stacks.has_stacks)


def _first_reading(trace: Path, index: KernelIndex) -> tuple[attribution.Regions, launches.Launches]:
    """The compiled-graph regions, the Python stacks and the recorded call sites of
    ``trace``; not read when no graph is indexed (nothing can be annotated then)."""
    regions, stacks = attribution.Regions(), launches.Launches()
    if index.graphs:  # one graph too: the call sites its launches recorded are read here
        for kind, _, value in trace_stream.read_trace(trace):
            if kind == "event":
                regions.add(value)
                stacks.add(value)
    regions.done()
    stacks.done()
    return regions, stacks


class _Tally:
    """Every event's verdict counted, and the names of those not annotated, by why."""

    def __init__(self) -> None:
        self.events = 0
        self.statuses: Counter[str | None] = Counter()
        self.unknown: Counter[str] = Counter()
        #: by status: the events not annotated though they are kernel events ("name: why")
        self.refused: dict[str, Counter[str]] = {s: Counter() for s in ("ambiguous", "mismatch", "malformed")}

    def add(self, event: dict[str, Any], verdict: attribution.Verdict) -> None:
        self.events += 1
        self.statuses[verdict.status] += 1
        if verdict.status == "unknown":
            self.unknown[event["name"]] += 1
        elif verdict.status in self.refused:
            self.refused[verdict.status][f"{event['name']}: {verdict.why}"] += 1

    def summary(self, output: str, annotator: _Annotator, stacks: bool) -> AnnotateSummary:
        return AnnotateSummary(
            output,
            self.events,
            self.events - self.statuses[None],
            self.statuses["annotated"],
            dict(self.unknown),
            dict(self.refused["ambiguous"]),
            dict(self.refused["mismatch"]),
            dict(self.refused["malformed"]),
            annotator.per_op_events,
            stacks,
            annotator.unplaced,
        )
