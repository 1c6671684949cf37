"""Which call site of which compiled graph ran a profiler event, from evidence, never by guess.

A kernel name alone is no identity: torch-spyre restarts kernel suffixes per graph, and a
model that recompiles has the same kernel names in every compile. What an event carries:

- torch-spyre's ``provenance_key`` (the ``args`` field, or the key in the event's name):
  the kernel bundle, recorded per call site by the compile (OpSpec artifact v2);
- ``graph_<i>_``, the prefix Inductor's C++ kernel profiling gives an event: ``i`` is the
  graph's id in the compiling process, which the graph's own code holds
  (``RAIIAtenRecordFunctionHandle ...("graph_<i>_<kernel>", ...)``);
- ``args.debug_handles`` (torch-spyre's OpSpec handle ids of the kernel): where the
  artifacts record no kernel key (OpSpec artifact v1), the call sites whose OpSpecs carry
  exactly those ids;
- the region around it on its thread: torch.profiler's ``Torch-Compiled Region: <compile
  id>`` (a forward or inference graph of that compile) or ``CompiledFunctionBackward`` (a
  backward graph).

Each narrows the call sites the name resolves to. When what is left is one graph, its
call sites of that kernel take the events in turn (the n-th event its n-th call site,
cyclically: one run calls them in that order). When it is several graphs, or none, the
event is not attributed, and the reason says why. ``args.debug_handles`` (torch-spyre's
handle ids) must equal the call site's: otherwise the trace is from another build.

Pure: no torch.
"""

from __future__ import annotations

import bisect
import re
from collections import Counter
from collections.abc import Iterable
from typing import Any

import msgspec

from spyre_provenance.model.detect import split_key
from spyre_provenance.model.kernel_keys import KEY_RE, MalformedHandles, event_handle_ids, key_of_event
from spyre_provenance.runtime import kernel_names
from spyre_provenance.runtime.index import KernelIndex, Site
from spyre_provenance.runtime.lookup import sites_of_name

COMPILED_REGION = "Torch-Compiled Region: "
BACKWARD_REGION = "CompiledFunctionBackward"
_GRAPH_RECORD = re.compile(r'RAIIAtenRecordFunctionHandle\s+\w+\("graph_(?P<id>[0-9]+)_(?P<kernel>[A-Za-z0-9_]+)"')
_PREFIX = re.compile(r"graph_(?P<id>[0-9]+)_(?=.)")
#: kernel-looking names that are no kernel of ours still count as kernel events (unknown)
_KERNEL_PREFIXES = ("sdsc_", "triton_", "cpp_fused", "ktir_", "spyre_kernel_")


class Verdict(msgspec.Struct, frozen=True):
    """What one event is: ``annotated`` (``site``), ``unknown`` (a kernel event these
    artifacts do not hold), ``ambiguous`` (more than one graph could have run it),
    ``mismatch`` (its torch-spyre fields contradict the artifacts: another build),
    ``malformed`` (its ``debug_handles`` is no list of handle ids), or None (no kernel
    event). ``evidence`` says what placed it; ``why`` what did not."""

    status: str | None
    site: Site | None = None
    evidence: str = ""
    why: str = ""


NOT_KERNEL = Verdict(None)


class Regions:
    """The compiled-graph regions of a trace, per (pid, tid), sorted by start."""

    def __init__(self) -> None:
        self._open: dict[tuple[Any, Any], list[tuple[float, float, str, str | None]]] = {}
        self._starts: dict[tuple[Any, Any], list[float]] = {}

    def add(self, event: dict[str, Any]) -> None:
        """Note ``event`` when it is a region (a complete event with ``ts`` and ``dur``)."""
        name = event["name"]
        if name.startswith(COMPILED_REGION):
            kind, compile_id = "forward", name[len(COMPILED_REGION) :].strip()
        elif name == BACKWARD_REGION:
            kind, compile_id = "backward", None
        else:
            return
        ts, dur = event.get("ts"), event.get("dur")
        if event.get("ph") != "X" or not isinstance(ts, (int, float)) or not isinstance(dur, (int, float)):
            return
        self._open.setdefault((event.get("pid"), event.get("tid")), []).append((ts, ts + dur, kind, compile_id))

    def done(self) -> None:
        for thread, regions in self._open.items():
            regions.sort()
            self._starts[thread] = [r[0] for r in regions]

    def around(self, pid: Any, tid: Any, ts: Any) -> tuple[str, str | None] | None:
        """(``forward`` with its compile id | ``backward`` with None) of the innermost region
        holding ``ts`` on that thread; None outside every region."""
        if not isinstance(ts, (int, float)):
            return None
        starts = self._starts.get((pid, tid))
        if not starts:
            return None
        regions = self._open[(pid, tid)]
        for i in range(bisect.bisect_right(starts, ts) - 1, -1, -1):
            start, end, kind, compile_id = regions[i]
            if start <= ts <= end:
                return kind, compile_id
        return None


class Attributor:
    """Verdicts for the events of one trace against one index (``Regions`` read first)."""

    def __init__(self, index: KernelIndex, regions: Regions | None = None) -> None:
        self.index = index
        self.regions = regions or Regions()
        self._turns: Counter[tuple[int, str]] = Counter()
        self._by_name: dict[str, list[Site]] = {}
        self._graph_ids = [_graph_ids(g.output_code) for g in index.graphs]  # kernel -> ids, per graph
        self._handles: dict[Site, list[str] | None] = {}
        self._by_handles: dict[tuple[str, ...], list[Site]] | None = None  # made on first use

    def verdict(self, event: dict[str, Any]) -> Verdict:
        if event.get("ph") != "X":
            return NOT_KERNEL
        name = event["name"]
        args = event.get("args")
        args = args if isinstance(args, dict) else {}
        key = args.get("provenance_key")  # torch-spyre's; an older annotate wrote "name:N" there
        key = key if isinstance(key, str) and KEY_RE.fullmatch(key) else key_of_event(name)
        try:  # read once, here: every rule below compares ids, never the field as written
            handles = event_handle_ids(args.get("debug_handles"))
        except MalformedHandles as exc:
            return Verdict("malformed", why=str(exc))
        if key is not None:
            sites = self.index.by_provenance_key.get(key, [])
            if sites:
                return self._place(sites, event, handles, f"provenance key {key}")
            if self.index.by_provenance_key:  # the artifacts record keys, and not this one
                return self._foreign(key, handles)
        # artifacts that record no kernel key (OpSpec artifact v1): the handles are the evidence
        sites = self._handle_sites(handles)
        if sites:
            return self._place(sites, event, handles, "debug handles")
        if key is not None:
            return self._foreign(key, handles)
        prefix = _PREFIX.match(name)
        query = kernel_names.parse(name[prefix.end() :] if prefix else name)
        if query.renamed_event is not None:  # renamed by acelyzer, and no provenance_key left
            sites = self.index.sites_of_renamed_event(query.renamed_event)
            if not sites:
                return Verdict("unknown", why="no recorded provenance key ends it, as acelyzer renames")
            return self._place(sites, event, handles, "provenance key, as acelyzer renamed it")
        if query.form not in ("kernel", "cpu_span", "device_timeline"):
            return NOT_KERNEL
        sites = self._sites(query.name)
        if not sites:
            is_kernel = (
                event.get("cat") == "kernel"
                or prefix is not None
                or query.form != "kernel"
                or query.name.startswith(_KERNEL_PREFIXES)
            )
            return Verdict("unknown", why="no kernel of that name in the artifacts") if is_kernel else NOT_KERNEL
        evidence = []
        if prefix is not None:
            graph_id = int(prefix["id"])
            recorded = [s for s in sites if self._graph_ids[s[0]].get(split_key(s[1])[0])]
            if recorded:  # the graphs were compiled with kernel profiling: the id decides
                sites = [s for s in recorded if graph_id in self._graph_ids[s[0]][split_key(s[1])[0]]]
                if not sites:
                    return Verdict("unknown", why=f"no graph of the artifacts is graph_{graph_id}")
                evidence.append(f"graph_{graph_id}_ prefix")
        return self._place(sites, event, handles, ", ".join(evidence) or "kernel name")

    def _handle_sites(self, given: list[str] | None) -> list[Site]:
        """The call sites whose OpSpecs' handle ids are exactly the event's ``debug_handles``
        (torch-spyre's list for a kernel: its OpSpecs' direct ids, in order, each once)."""
        if not given:
            return []
        if self._by_handles is None:
            self._by_handles = {}
            for position, graph in enumerate(self.index.graphs):
                for key in graph.keys:
                    ids = self._handle_ids((position, key))
                    if ids:
                        self._by_handles.setdefault(tuple(ids), []).append((position, key))
        return list(self._by_handles.get(tuple(given), ()))

    def _sites(self, name: str) -> list[Site]:
        found = self._by_name.get(name)
        if found is None:
            found = self._by_name[name] = sites_of_name(name, self.index)
        return found

    def _place(self, sites: list[Site], event: dict[str, Any], given: list[str] | None, evidence: str) -> Verdict:
        region = self.regions.around(event.get("pid"), event.get("tid"), event.get("ts"))
        if region is not None:
            kind, compile_id = region
            where = f"{COMPILED_REGION}{compile_id}" if compile_id else BACKWARD_REGION
            sites = [s for s in sites if _in_region(self.index.graphs[s[0]], kind, compile_id)]
            if not sites:  # it ran in a graph the artifacts do not hold (a compile not read?)
                return Verdict("unknown", why=f"it ran in {where}, and no such graph of the artifacts has it")
            evidence += f", {where}"
        graphs = {s[0] for s in sites}
        if len(graphs) > 1:
            which = sorted(f"{self.index.graphs[g].compile_id} {self.index.graphs[g].graph}" for g in graphs)
            return Verdict("ambiguous", why=f"{len(graphs)} graphs could have run it ({', '.join(which)})")
        position = sites[0][0]
        kernel = split_key(sites[0][1])[0]
        turn = self._turns[(position, kernel)]
        self._turns[(position, kernel)] += 1
        site = sites[turn % len(sites)]
        if given is not None:
            expected = self._handle_ids(site)
            if expected is not None and given != expected:
                return Verdict(
                    "mismatch",
                    why=f"its debug_handles {given} are not the compile's {expected} for {site[1]}: another build?",
                )
        return Verdict("annotated", site, evidence)

    def _handle_ids(self, site: Site) -> list[str] | None:
        """torch-spyre's ``debug_handles`` for a call site: its OpSpecs' direct handle ids,
        in order, each once (None: the artifacts have no OpSpecs for it)."""
        if site not in self._handles:
            opspecs = (self.index.graphs[site[0]].opspecs or {}).get("kernels", {}).get(site[1])
            self._handles[site] = (
                None
                if not isinstance(opspecs, list)
                else list(
                    dict.fromkeys(o["debug_handle"] for o in opspecs if isinstance(o, dict) and o.get("debug_handle"))
                )
            )
        return self._handles[site]

    def _foreign(self, key: str, given: list[str] | None) -> Verdict:
        """An event whose provenance key the artifacts do not hold."""
        if given:
            known = {h for g in self.index.graphs for h in ((g.opspecs or {}).get("handles") or {})}
            if all(h in known for h in given):
                return Verdict(
                    "mismatch",
                    why=f"provenance key {key} is no kernel of this compile, though its debug_handles are: another build",
                )
        return Verdict("unknown", why=f"provenance key {key} is not in the artifacts")


def _in_region(graph: Any, kind: str, compile_id: str | None) -> bool:
    if kind == "backward":
        return graph.graph == "backward"
    return graph.graph in ("forward", "inference") and (compile_id is None or graph.compile_id == compile_id)


def _graph_ids(code: str | None) -> dict[str, set[int]]:
    """Kernel name -> the ``graph_<i>_`` ids its profiler records carry in this graph's code."""
    found: dict[str, set[int]] = {}
    for match in _GRAPH_RECORD.finditer(code or ""):
        found.setdefault(match["kernel"], set()).add(int(match["id"]))
    return found


def read_regions(events: Iterable[dict[str, Any]]) -> Regions:
    regions = Regions()
    for event in events:
        regions.add(event)
    regions.done()
    return regions
