"""A profiled run's Chrome trace as each call site's time and calls, for the viewer.

Kernel events are complete events (``ph`` ``X``) with a ``dur``. Each is placed in one call
site by evidence, never by guess:

- an event ``annotate`` (and so ``compile --profile``) placed names its call site itself:
  ``args.spyre_provenance_call_site`` and ``args.spyre_provenance_graph`` (``<model>
  <compile id> <graph kind>``; annotate of 0.1.0 wrote them as ``provenance_key`` and
  ``provenance_graph``, while torch-spyre's own ``provenance_key``, its kernel key, holds no
  ``:``);
- any other event is placed by ``runtime.attribution``, the rule ``annotate`` and
  ``annotate --summary`` follow: torch-spyre's kernel key (in ``args.provenance_key`` or the
  device event's name), its ``args.debug_handles``, the kernel name with its ``graph_<i>_``
  prefix, and the compiled-graph region around the event. An event it cannot place in one
  graph (ambiguous, another build, no such kernel) is counted, never attributed.

A device event times the kernel itself; where a trace has them, the CPU launch spans beside
them (``launch_jobplan:`` and the like) are not counted again.

Pure: no torch.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Any

from spyre_provenance.errors import UnusableInput
from spyre_provenance.model import folders
from spyre_provenance.model.kernel_keys import key_of_event
from spyre_provenance.runtime import attribution, names, trace_stream
from spyre_provenance.runtime import index as kernel_index

_KEPT_ARGS = (
    "spyre_provenance_call_site",
    "spyre_provenance_graph",
    "provenance_key",
    "provenance_graph",
    "debug_handles",
)


class Timing:
    """Durations (microseconds, as the trace says) and counts per (graph position, call key)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = str(path)
        self.events: list[dict[str, Any]] = []
        self.regions = attribution.Regions()
        for kind, _, event in trace_stream.read_trace(path):
            if kind != "event" or not isinstance(event, dict) or event.get("ph") != "X":
                continue
            self.regions.add(event)
            dur, name = event.get("dur"), event.get("name")
            if isinstance(name, str) and isinstance(dur, (int, float)) and not isinstance(dur, bool):
                args = event.get("args")
                args = args if isinstance(args, dict) else {}
                kept = {k: args[k] for k in _KEPT_ARGS if k in args}
                self.events.append(
                    {**{k: event.get(k) for k in ("ph", "name", "cat", "pid", "tid", "ts")}, "dur": dur, "args": kept}
                )
        self.regions.done()
        self.matched = 0
        self.unmatched: Counter[str] = Counter()
        self.reasons: Counter[str] = Counter()  # unplaced kernel events per verdict
        self.total = 0.0

    def apply(self, graphs: list[dict[str, Any]], out: Path) -> None:
        """Add ``t`` (total duration) and ``n`` (calls) to each call site of ``graphs`` (the
        viewer's, read from ``out``) that an event is placed in."""
        by_label = {
            g["label"].replace(f"rank{g['rank']} ", "") if g["rank"] is not None else g["label"]: g for g in graphs
        }
        calls = {(gi, call["k"]): call for gi, g in enumerate(graphs) for call in g["calls"]}
        attributor, position = _attributor(out, graphs, self.regions)
        device = any(key_of_event(e["name"]) for e in self.events)
        for event in self.events:
            name = event["name"]
            if device and name.startswith(names.CPU_SPANS):
                continue
            site = _annotated_site(event["args"], graphs, by_label)
            status = "annotated" if site is not None else None
            if site is None and attributor is not None:
                verdict = attributor.verdict(event)
                status = verdict.status
                if verdict.site is not None and verdict.site[0] in position:
                    site = (position[verdict.site[0]], verdict.site[1])
            call = calls.get(site) if site is not None else None
            if call is None:
                if status is not None:  # a kernel event: counted, never attributed
                    self.unmatched[name.split("#", 1)[0]] += 1
                    self.reasons[status] += 1
                continue
            call["t"] = call.get("t", 0.0) + event["dur"]
            call["n"] = call.get("n", 0) + 1
            self.matched += 1
            self.total += event["dur"]

    def summary(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "matched": self.matched,
            "total": self.total,
            "unmatched": sum(self.unmatched.values()),
            "unmatched_names": sorted(self.unmatched)[:20],
            "unmatched_reasons": dict(sorted(self.reasons.items())),
        }


def _annotated_site(
    args: dict[str, Any], graphs: list[dict[str, Any]], by_label: dict[str, dict[str, Any]]
) -> tuple[int, str] | None:
    """The call site ``annotate`` wrote into the event, when it names one of ``graphs``."""
    key, graph = args.get("spyre_provenance_call_site"), args.get("spyre_provenance_graph")
    if key is None and ":" in str(args.get("provenance_key", "")):  # as annotate of 0.1.0 wrote them
        key, graph = args.get("provenance_key"), args.get("provenance_graph")
    if isinstance(key, str) and isinstance(graph, str) and graph in by_label:
        return graphs.index(by_label[graph]), key
    return None


def _attributor(
    out: Path, graphs: list[dict[str, Any]], regions: attribution.Regions
) -> tuple[attribution.Attributor | None, dict[int, int]]:
    """``runtime.attribution``'s placer over ``out``'s index, and each index graph's position
    among the viewer's ``graphs`` (the same graph: model, rank, compile id and kind)."""
    try:
        index = kernel_index.build([out])
    except UnusableInput:  # graph folders without one call site: nothing to place events in
        return None, {}
    viewer = {(g["model"], g["rank"], g["compile_id"], g["kind"]): gi for gi, g in enumerate(graphs)}
    position = {}
    for p, graph in enumerate(index.graphs):
        origin = Path(graph.origin)
        parts = origin.relative_to(out).parts if origin.is_relative_to(out) else origin.parts
        found = viewer.get((graph.model, folders.rank_of_path(parts), graph.compile_id, graph.graph))
        if found is not None:
            position[p] = found
    return attribution.Attributor(index, regions), position


def read(path: str | os.PathLike[str]) -> Timing:
    timing = Timing(path)
    if not timing.events:
        raise UnusableInput(str(path), "no complete event (ph X with a dur) in traceEvents: nothing to time")
    return timing
