"""A torch.profiler Chrome trace with each kernel event's provenance in its ``args``
(``spyre-provenance annotate``).

Field names: ``stack`` is upstream's. torch 2.14's ``torch/_inductor/profiler.py``
(``_InductorTraceProcessor.add_to_chrome_trace``) sets ``event["args"]["stack"]`` to the
kernel's ``stack_traces`` (a list of stack-trace strings, as in ``kernel_information``), so
a tool reading upstream's annotated traces reads ours. What upstream does not write goes
under one prefix, ``provenance_``; ``provenance_key`` is also torch-spyre's event field:

``provenance_key``              the mapping key ``name:N`` of the call site
``provenance_post_grad_nodes``  its post-grad nodes (``cppCodeToPost``)
``provenance_pre_grad_nodes``   their pre-grad nodes (``postToPre``)
``provenance_aten_ops``         Original ATen ops (see ``lookup``)
``provenance_source``           ``file:line`` of each frame, the user's first
``provenance_graph``            ``<model> <compile id> <graph kind>``

A kernel event is a complete event (``ph`` ``X``) of a GPU kernel (``cat`` ``kernel``),
one named by Inductor's C++ kernel profiling (``graph_<i>_<kernel>``), or one whose name
resolves to a kernel the provenance knows (``runtime.names.resolve``), ``sdsc_*`` included.
Events of a kernel that has several call sites (or one name in forward and backward) take
them in turn, in call order: the n-th event of a name gets its n-th call site, cyclically,
which is how one profiled step runs them. Kernel events the provenance does not know are
counted and listed, and passed through unchanged; no event is ever dropped.

Pure: no torch.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Any

import msgspec

from spyre_provenance.errors import UnusableInput
from spyre_provenance.runtime import names, trace_stream
from spyre_provenance.runtime.index import KernelIndex
from spyre_provenance.runtime.lookup import GraphView

PREFIX = "provenance_"
LISTED = 20  # unknown kernel names the summary line lists by name
_KERNEL_PREFIXES = ("sdsc_", "triton_", "cpp_fused", "ktir_", "spyre_kernel_")


class Summary(msgspec.Struct):
    output: str
    events: int
    kernel_events: int
    annotated: int
    unknown: dict[str, int]  # kernel event name -> how many events, for names not known

    def line(self) -> str:
        text = f"annotated {self.annotated} of {self.kernel_events} kernel events ({self.events} events in all): {self.output}"
        if self.unknown:
            names = sorted(self.unknown.items())
            listed = ", ".join(f"{n} x{c}" for n, c in names[:LISTED])
            more = f", and {len(names) - LISTED} more names" if len(names) > LISTED else ""
            text += f"\n  unknown kernel events ({sum(self.unknown.values())}): {listed}{more}"
        return text


class _Annotator:
    def __init__(self, index: KernelIndex) -> None:
        self.index = index
        self.sites: dict[str, list[tuple[int, str]]] = {}  # event name -> call sites
        self.fields: dict[tuple[int, str], dict[str, Any]] = {}
        self.seen: Counter[str] = Counter()

    def call_sites(self, name: str) -> list[tuple[int, str]]:
        sites = self.sites.get(name)
        if sites is None:
            resolved = names.resolve(names.parse(name).name, self.index.by_name)
            sites = self.sites[name] = [s for k in resolved for s in self.index.by_name[k]]
        return sites

    def fields_of(self, site: tuple[int, str]) -> dict[str, Any]:
        found = self.fields.get(site)
        if found is None:
            graph = self.index.graphs[site[0]]
            call = GraphView.of(graph).call_site(site[1])
            found = self.fields[site] = {
                "stack": [s for s in graph.stack_traces.get(site[1]) or [] if isinstance(s, str)],
                f"{PREFIX}key": call.key,
                f"{PREFIX}post_grad_nodes": call.post_grad_nodes,
                f"{PREFIX}pre_grad_nodes": call.pre_grad_nodes,
                f"{PREFIX}aten_ops": call.aten_ops,
                f"{PREFIX}source": [f"{s.file}:{s.line}" for s in call.source],
                f"{PREFIX}graph": f"{graph.model} {graph.compile_id} {graph.graph}",
            }
        return found

    def event(self, event: dict[str, Any]) -> str | None:
        """Annotate ``event`` when it is a known kernel's: "annotated", "unknown" (a kernel
        event the provenance does not know) or None (no kernel event)."""
        if event.get("ph") != "X":
            return None
        name = event["name"]
        sites = self.call_sites(name)
        if not sites:
            is_kernel = (
                event.get("cat") == "kernel" or names.has_profiler_prefix(name) or name.startswith(_KERNEL_PREFIXES)
            )
            return "unknown" if is_kernel else None
        site = sites[self.seen[name] % len(sites)]
        self.seen[name] += 1
        args = event.get("args")
        if not isinstance(args, dict):
            args = event["args"] = {}
        args.update(self.fields_of(site))
        return "annotated"


def annotate(trace: str | os.PathLike[str], index: KernelIndex, output: str | os.PathLike[str]) -> Summary:
    """Write ``trace`` with provenance to ``output`` (atomically; may be ``trace`` itself).
    Raises UnusableInput, and leaves no output file, for a trace that is not one."""
    trace, output = Path(trace), Path(output)
    if not trace.is_file():
        raise UnusableInput(str(trace), "no such file")
    annotator = _Annotator(index)
    counts: Counter[str | None] = Counter()
    unknown: Counter[str] = Counter()
    writer = trace_stream.TraceWriter(output)
    events = 0
    try:
        for kind, key, value in trace_stream.read_trace(trace):
            if kind == "member":
                writer.member(key, value)
                continue
            verdict = annotator.event(value)
            counts[verdict] += 1
            if verdict == "unknown":
                unknown[value["name"]] += 1
            writer.event(value)
            events += 1
        writer.commit()
    except BaseException:
        writer.discard()
        raise
    return Summary(str(output), events, counts["annotated"] + counts["unknown"], counts["annotated"], dict(unknown))
