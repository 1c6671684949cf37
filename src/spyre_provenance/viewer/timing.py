"""A profiled run's Chrome trace as each call site's time and calls, for the viewer.

Three kinds of kernel event are read (complete events, ``ph`` ``X``, with a ``dur``):

- one ``annotate`` (and so ``compile --profile``) gave its provenance:
  ``args.spyre_provenance_call_site`` and ``args.spyre_provenance_graph`` (``<model> <compile
  id> <graph kind>``) name the call site (annotate of 0.1.0 wrote them as
  ``provenance_key`` and ``provenance_graph``; torch-spyre's own ``provenance_key``, its
  kernel key, holds no ``:``);
- torch-spyre's device event ``spyre_kernel_v1_<summary>_<key>#<step>``: its
  ``args.debug_handles`` (OpSpec handle ids) name the call sites whose OpSpecs carry them,
  so it is read without the kernel provenance key in any artifact;
- any other event whose name resolves to a kernel name of the folder (``runtime.names``:
  ``graph_0_cpp_fused_x_0``, ``sdsc_fused_x_0_ab12cd34``, ``launch_jobplan:<kernel>``).

An event matching several call sites (one kernel called from several, or the same name in
forward and backward) takes them in turn, in call order, as ``annotate`` does. Events that
match no call site are counted, never attributed.

Pure: no torch.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from typing import Any

from spyre_provenance.errors import UnusableInput
from spyre_provenance.model.detect import split_key
from spyre_provenance.runtime import names, trace_stream

SPYRE_EVENT = re.compile(r"\Aspyre_kernel_v(?P<version>[0-9]+)_[A-Za-z0-9_]+?_(?P<key>[a-z2-7]+)(?:#[0-9]+)?\Z")
_CPU_SPANS = ("launch_jobplan:", "prepare_kernel:", "dxp_standalone:")


class Timing:
    """Durations (microseconds, as the trace says) and counts per (graph position, call key)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = str(path)
        self.events: list[tuple[str, dict[str, Any], float]] = []
        for kind, _, event in trace_stream.read_trace(path):
            if kind != "event" or not isinstance(event, dict) or event.get("ph") != "X":
                continue
            dur = event.get("dur")
            name = event.get("name")
            if isinstance(name, str) and isinstance(dur, (int, float)) and not isinstance(dur, bool):
                args = event.get("args")
                self.events.append((name, args if isinstance(args, dict) else {}, float(dur)))
        self.matched = 0
        self.unmatched: Counter[str] = Counter()
        self.total = 0.0

    def apply(self, graphs: list[dict[str, Any]]) -> None:
        """Add ``t`` (total duration) and ``n`` (calls) to each call site of ``graphs`` that an
        event names."""
        by_label = {
            g["label"].replace(f"rank{g['rank']} ", "") if g["rank"] is not None else g["label"]: g for g in graphs
        }
        by_key: dict[tuple[int, str], dict[str, Any]] = {}
        by_name: dict[str, list[tuple[int, str]]] = {}
        by_handle: dict[str, list[tuple[int, str]]] = {}
        for gi, g in enumerate(graphs):
            for call in g["calls"]:
                by_key[(gi, call["k"])] = call
                name, _ = split_key(call["k"])
                by_name.setdefault(name or call["k"], []).append((gi, call["k"]))
                for s in call["s"]:
                    hid = g["specs"][s]["h"]
                    if isinstance(hid, str):
                        by_handle.setdefault(hid, []).append((gi, call["k"]))
        turns: Counter[str] = Counter()
        resolved: dict[str, list[tuple[int, str]]] = {}
        # a device event times the kernel itself; its CPU launch span beside it is not counted again
        device = any(SPYRE_EVENT.match(name) for name, _, _ in self.events)
        for name, args, dur in self.events:
            if device and name.startswith(_CPU_SPANS):
                continue
            sites = self._sites(name, args, graphs, by_label, by_name, by_handle, resolved)
            if not sites:
                if name.startswith(("spyre_kernel_", "sdsc_", "cpp_fused", "triton_", "graph_")) or name.startswith(
                    _CPU_SPANS
                ):
                    self.unmatched[name.split("#", 1)[0]] += 1
                continue
            turn_key = name.split("#", 1)[0]
            site = sites[turns[turn_key] % len(sites)]
            turns[turn_key] += 1
            call = by_key[site]
            call["t"] = call.get("t", 0.0) + dur
            call["n"] = call.get("n", 0) + 1
            self.matched += 1
            self.total += dur

    def _sites(
        self,
        name: str,
        args: dict[str, Any],
        graphs: list[dict[str, Any]],
        by_label: dict[str, dict[str, Any]],
        by_name: dict[str, list[tuple[int, str]]],
        by_handle: dict[str, list[tuple[int, str]]],
        resolved: dict[str, list[tuple[int, str]]],
    ) -> list[tuple[int, str]]:
        key, graph = args.get("spyre_provenance_call_site"), args.get("spyre_provenance_graph")
        if key is None and ":" in str(args.get("provenance_key", "")):  # as annotate of 0.1.0 wrote them
            key, graph = args.get("provenance_key"), args.get("provenance_graph")
        if isinstance(key, str) and isinstance(graph, str) and graph in by_label:
            gi = graphs.index(by_label[graph])
            return [(gi, key)] if any(c["k"] == key for c in by_label[graph]["calls"]) else []
        handles = args.get("debug_handles")
        if SPYRE_EVENT.match(name) and isinstance(handles, list) and handles:
            # the call sites whose OpSpecs carry every handle of the event
            found = None
            for hid in handles:
                sites = set(by_handle.get(str(hid), ()))
                found = sites if found is None else found & sites
            return sorted(found or ())
        for span in _CPU_SPANS:
            if name.startswith(span):
                name = name[len(span) :]
        if name not in resolved:
            kernels = names.resolve(names.parse(name).name, by_name)
            resolved[name] = [s for k in kernels for s in by_name[k]]
        return resolved[name]

    def summary(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "matched": self.matched,
            "total": self.total,
            "unmatched": sum(self.unmatched.values()),
            "unmatched_names": sorted(self.unmatched)[:20],
        }


def read(path: str | os.PathLike[str]) -> Timing:
    timing = Timing(path)
    if not timing.events:
        raise UnusableInput(str(path), "no complete event (ph X with a dur) in traceEvents: nothing to time")
    return timing
