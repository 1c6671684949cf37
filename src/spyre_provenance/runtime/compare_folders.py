"""What each source line of a compile became, read from its folder: the thin adapter in
front of ``runtime.compare`` (``spyre-provenance compare A B``, the viewer's ``--compare``).

A side is named ``PATH`` or ``PATH:COMPILE_ID``. ``PATH`` is anything ``runtime.index``
reads: an ``--out`` folder, a folder of them (a ``run`` folder of per-process folders), a
TORCH_TRACE log, a copied tree of graph folders. ``:COMPILE_ID`` keeps the graphs of one
compile (``0/1``, also written ``[0/1]`` or as a graph folder spells it, ``0-1``): prefill
against decode in one folder. What a line became:

- the kernels whose stack traces have it as their innermost user frame (the rule of
  ``runtime.time_summary``, so a line's time and its kernels agree), and those holding one
  of its OpSpecs;
- its own OpSpecs: those whose debug handle's source is the line (a fused handle's, its
  children's), each with its iteration space, and their handles' ATen ops;
- where the compile recorded no OpSpecs (stock Inductor), the ATen ops of its own post-grad
  nodes: those the logged post-grad graph prints under the line's frame, apart from the
  rest of the kernel they were fused into (``_NodeLines``); without that graph (no log
  beside the folder), its kernels' ATen ops, every op of theirs. ``LineUse.ops_from`` says which;
- its time, from the profiler traces given, or found beside the logs (``compile --profile``
  writes ``profile/<model>.trace.json``): ``time_summary.summarize``'s rows, the kernels of the
  named graphs only. A line the trace places that no stack trace of the compile names (an
  eager per-op kernel, placed by the profiler's own stacks) is one more line.

Where no frame of a kernel's stack traces is the user's (a model built of torch's own modules),
its modules name it instead (``model.modules``, the rule of ``lookup`` and the time summary):
each of its own modules is one place, keyed by its name (``0: Linear``), module evidence
(``LineUse.evidence``), never a line of torch's; its ops are its kernels' (the module stacks
are recorded per kernel, not per node), and its OpSpecs' handles, whose sources are torch's
frames, name no line of it. Kernels that neither a user frame nor a module names are one
line, ``(no source line)``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, NamedTuple

from spyre_provenance.base.errors import UnusableInput
from spyre_provenance.base.process import gc_paused
from spyre_provenance.logs.post_grad import node_frames
from spyre_provenance.model.compare_records import (
    OPS_FROM,
    Comparison,
    CompileLines,
    Evidence,
    KernelUse,
    LineUse,
    OpsFrom,
    Side,
)
from spyre_provenance.model.detect import split_key
from spyre_provenance.model.frames import Frame, is_user_frame
from spyre_provenance.model.frames import frames as stack_frames
from spyre_provenance.model.layout import Layout
from spyre_provenance.model.modules import MODULE_FILE, module_names, read_module_stacks
from spyre_provenance.runtime import index as kernel_index
from spyre_provenance.runtime import time_summary
from spyre_provenance.runtime.compare import compare
from spyre_provenance.runtime.index import IndexedGraph, KernelIndex
from spyre_provenance.runtime.lookup import GraphView

Where = tuple[str, int]  # (file, line)
NOWHERE: Where = (time_summary.NO_LINE, 0)  # kernels no user frame names
PathLike = str | os.PathLike[str]


def compare_folders(
    a: str, b: str, *, trace_a: PathLike | None = None, trace_b: PathLike | None = None, find_traces: bool = True
) -> Comparison:
    """``compare A B``: the two named compiles (``PATH`` or ``PATH:COMPILE_ID``) side by side
    per source line, timed from ``trace_a``/``trace_b`` or (``find_traces``) the traces
    found beside their logs. Raises UnusableInput for a side that cannot be read. Two
    compiles of one folder (prefill, decode) read it, and its trace, once."""
    reads = _Reads()
    with gc_paused():  # tens of thousands of fresh records, no cycles: the cyclic GC would rescan them all
        return compare(read_compile(a, trace_a, find_traces, reads), read_compile(b, trace_b, find_traces, reads))


class _Reads:
    """What both sides of a comparison may share: a folder's index, a trace's summary."""

    def __init__(self) -> None:
        self.indexes: dict[Path, KernelIndex] = {}
        self.summaries: dict[tuple[Path, Path], time_summary.TimeSummary] = {}

    def index(self, path: Path) -> KernelIndex:
        key = path.resolve()
        if key not in self.indexes:
            self.indexes[key] = kernel_index.build([path])
        return self.indexes[key]

    def summary(self, trace: Path, path: Path) -> time_summary.TimeSummary:
        key = (trace.resolve(), path.resolve())
        if key not in self.summaries:
            self.summaries[key] = time_summary.summarize(trace, self.index(path))
        return self.summaries[key]


def read_compile(
    name: str, trace: PathLike | None = None, find_traces: bool = True, reads: _Reads | None = None
) -> CompileLines:
    """One side: what each source line of the compile ``name`` became (the module's docstring)."""
    reads = reads or _Reads()
    path, compile_id = split_name(name)
    chosen = select(reads.index(path), compile_id, name)
    lines = _Lines()
    for graph in chosen:
        lines.add_graph(graph)
    labels = [g.label for g in chosen]
    traces = [Path(trace)] if trace is not None else (traces_beside(chosen) if find_traces else [])
    unplaced = 0.0
    for found in traces:
        unplaced += lines.add_times(reads.summary(found, path), set(labels))
    side = Side(name, labels, [str(t) for t in traces], unplaced)
    return CompileLines(side, lines.done(timed=bool(traces)))


def split_name(name: str) -> tuple[Path, str | None]:
    """``PATH`` or ``PATH:COMPILE_ID`` as (path, compile id as ``0/1``, or None). A path
    that exists is a path, colons and all."""
    if Path(name).exists():
        return Path(name), None
    head, colon, tail = name.rpartition(":")
    if colon and head and Path(head).exists():
        compile_id = tail.strip().strip("[]").replace("-", "/")
        if not compile_id:
            raise UnusableInput(name, "no compile id after the colon (PATH:COMPILE_ID, e.g. out:0/1)")
        return Path(head), compile_id
    raise UnusableInput(name, "no such file or folder")


def select(index: KernelIndex, compile_id: str | None, name: str) -> list[IndexedGraph]:
    """The graphs of ``compile_id`` (all of them for None), in the index's order."""
    if compile_id is None:
        return list(index.graphs)
    chosen = [g for g in index.graphs if g.compile_id == compile_id]
    if not chosen:
        held = ", ".join(dict.fromkeys(g.compile_id for g in index.graphs))
        raise UnusableInput(name, f"no compile {compile_id} there (it holds {held})")
    return chosen


def traces_beside(graphs: list[IndexedGraph]) -> list[Path]:
    """The annotated profiler traces ``compile --profile`` wrote for these graphs' models,
    beside their logs (or their graph folders), in path order."""
    found = set()
    for graph in graphs:
        origin = Path(graph.origin)
        layout = Layout.of_log(origin, graph.model) if origin.is_file() else Layout(origin.parent, graph.model)
        if layout is not None and layout.profile_trace.is_file():
            found.add(layout.profile_trace)
    return sorted(found)


class _Line:
    __slots__ = ("code", "kernels", "opspecs", "ops", "ops_from", "time")

    def __init__(self, code: str) -> None:
        self.code = code
        self.kernels: dict[KernelUse, None] = {}
        self.opspecs: list[str] = []
        self.ops: list[str] = []
        self.ops_from: OpsFrom | None = None
        self.time = 0.0

    def went_into(self, use: KernelUse, ops: list[str], ops_from: OpsFrom) -> None:
        """The line went into the kernel ``use`` with ``ops`` of its own, known from ``ops_from``
        (of several, the coarsest is what the line's ops are)."""
        self.kernels[use] = None
        self.ops += ops
        if self.ops_from is None or OPS_FROM.index(ops_from) > OPS_FROM.index(self.ops_from):
            self.ops_from = ops_from


class _Lines:
    """The lines of one side, built graph by graph, then timed."""

    def __init__(self) -> None:
        self._lines: dict[Where, _Line] = {}
        self._modules: dict[str, _Line] = {}  # by the module's name: each would be (MODULE_FILE, 0)

    def _module(self, name: str) -> _Line:
        line = self._modules.get(name)
        if line is None:
            line = self._modules[name] = _Line(name)
        return line

    def _at(self, where: Where, code: str) -> _Line:
        line = self._lines.get(where)
        if line is None:
            line = self._lines[where] = _Line(code)
        elif not line.code and code:
            line.code = code
        return line

    def add_graph(self, graph: IndexedGraph) -> None:
        label = graph.label
        codes: dict[Where, str] = {}
        users: dict[str, bool] = {}
        own = {key: _user_lines(graph.stack_traces.get(key), codes, users) for key in graph.keys}
        opspecs = graph.opspecs if isinstance(graph.opspecs, dict) else {}
        kernel_specs = _object(opspecs.get("kernels"))
        handles = _object(opspecs.get("handles"))
        nodes = _NodeLines(graph, users, codes)
        module_stacks = read_module_stacks(graph.diagnostics)
        for key in graph.keys:
            use = KernelUse(split_key(key)[0] or key, key, label)
            named = module_names(graph.stack_traces.get(key) or [], module_stacks.get(key))
            if named is not None:  # no user frame: its modules name it, its handles' torch lines do not
                ops = GraphView.of(graph).call_site(key).aten_ops
                for module in named.own:
                    self._module(module.name).went_into(use, ops, "kernels")
                continue
            specs = kernel_specs.get(key)
            if isinstance(specs, list) and specs:
                placed = [self._add_opspec(s, handles, use, codes) for s in specs if isinstance(s, dict)]
                self._add_kernel(use, own[key].lines or ([] if any(placed) else [NOWHERE]), {}, [], "opspecs", codes)
                continue
            by_line = nodes.own_ops(key, own[key].by_innermost)
            if by_line is not None:  # the nodes carrying each line: its own ops, apart from the kernel's
                lines = list(dict.fromkeys([*own[key].lines, *by_line]))
                self._add_kernel(use, lines or [NOWHERE], by_line, [], "post-grad nodes", codes)
            else:  # nothing tells the kernel's nodes apart: its ATen ops are the finest evidence
                ops = GraphView.of(graph).call_site(key).aten_ops
                self._add_kernel(use, own[key].lines or [NOWHERE], {}, ops, "kernels", codes)

    def _add_kernel(
        self,
        use: KernelUse,
        lines: list[Where],
        own_ops: dict[Where, list[str]],
        ops: list[str],
        ops_from: OpsFrom,
        codes: dict[Where, str],
    ) -> None:
        """The kernel ``use`` holds ``lines``: each with its ``own_ops``, else ``ops``."""
        for where in lines:
            self._at(where, codes.get(where, "")).went_into(use, own_ops.get(where, ops), ops_from)

    def _add_opspec(
        self, spec: dict[str, Any], handles: dict[str, Any], use: KernelUse, codes: dict[Where, str]
    ) -> bool:
        """Give an OpSpec to the lines its handle names; whether there were any."""
        text = str(spec.get("op"))
        space = spec.get("iteration_space")
        if isinstance(space, list):
            text += " [" + ", ".join(map(str, space)) + "]"
        lines = _handle_lines(spec.get("debug_handle"), handles)
        for where, aten in lines.items():
            line = self._at(where, codes.get(where, ""))
            line.went_into(use, aten, "opspecs")
            line.opspecs.append(text)
        return bool(lines)

    def add_times(self, summary: time_summary.TimeSummary, labels: set[str]) -> float:
        """Each line's kernel time in ``summary``, of the graphs ``labels`` only; returns
        the trace time none of their call sites took."""
        placed: dict[tuple[str, str], float] = {}
        for row in summary.lines:
            kernels = [k for k in row.kernels if k.graph in labels]
            if not kernels:
                continue
            by_module = row.placed_by == time_summary.BY_MODULE
            line = self._module(row.code) if by_module else self._at((row.file, row.line), row.code)
            for k in kernels:
                line.time += k.total_us
                line.kernels[KernelUse(k.kernel, k.call_site, k.graph)] = None
                placed[(k.graph, k.call_site)] = k.total_us  # a kernel under several lines, once
        return max(0.0, summary.total_us - sum(placed.values()))

    def done(self, timed: bool) -> list[LineUse]:
        places: list[tuple[Where, _Line, Evidence]] = [(w, line, "line") for w, line in sorted(self._lines.items())]
        places += [((MODULE_FILE, 0), line, "module") for _, line in sorted(self._modules.items())]
        return [
            LineUse(
                file=file,
                line=number,
                code=line.code,
                kernels=list(line.kernels),
                opspecs=line.opspecs,
                ops=list(dict.fromkeys(line.ops)),
                time_us=line.time if timed else None,
                ops_from=line.ops_from,
                evidence=evidence,
            )
            for (file, number), line, evidence in places
        ]


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


class _NodeLines:
    """Which post-grad nodes of a graph carry which line, where its log printed the graph
    with each node's frame (``logs.post_grad.node_frames``); the ops of a line's nodes are
    ``runtime.lookup``'s own ops of a call site (``GraphView.own_ops``), its nodes those
    at the line."""

    def __init__(self, graph: IndexedGraph, users: dict[str, bool], codes: dict[Where, str]) -> None:
        self.graph = graph
        self.users = users
        self.codes = codes
        self._frames: dict[str, Frame] | None = None  # read at the first call site without OpSpecs

    @property
    def frames(self) -> dict[str, Frame]:
        if self._frames is None:
            self._frames = node_frames(self.graph.post_grad_graph) if self.graph.post_grad_graph else {}
        return self._frames

    def own_ops(self, key: str, lines_of: dict[Where, list[Where]]) -> dict[Where, list[str]] | None:
        """The call site's lines, each with the ops of its nodes at that line (``lines_of``:
        its traces' lines by their innermost frame); None when no node of the call site has
        a printed frame (no log, or no stack traces)."""
        post = self.graph.mapping.get("cppCodeToPost", {}).get(key, [])
        printed = [(n, self.frames[n]) for n in post if isinstance(n, str) and n in self.frames]
        if not printed:
            return None
        nodes_at: dict[Where, list[str]] = {}
        for node, frame in printed:
            # FX prints a node's innermost frame; its line is that trace's innermost user frame
            at = lines_of.get((frame.file, frame.line))
            if at is None:
                at = [(frame.file, frame.line)] if self._user(frame.file) else []
                self.codes.setdefault((frame.file, frame.line), frame.code.strip())
            for where in at:
                nodes_at.setdefault(where, []).append(node)
        view = GraphView.of(self.graph)
        return {where: view.own_ops(nodes) for where, nodes in nodes_at.items()}

    def _user(self, file: str) -> bool:
        if file not in self.users:
            self.users[file] = is_user_frame(file)
        return self.users[file]


class _TraceLines(NamedTuple):
    """A call site's stack traces read once: the lines they carry, and by which frame."""

    #: the innermost user frame of each trace (``time_summary``'s rule), in order, each once
    lines: list[Where]
    #: a trace's innermost frame (what FX prints above a node) -> the lines of the traces ending there
    by_innermost: dict[Where, list[Where]]


def _user_lines(traces: Any, codes: dict[Where, str], users: dict[str, bool]) -> _TraceLines:
    """A call site's stack traces as ``_TraceLines``; every frame's code goes into ``codes``.
    ``users`` keeps ``is_user_frame``'s answer per file: a graph's traces name few files,
    many times."""
    found: dict[Where, None] = {}
    by_innermost: dict[Where, dict[Where, None]] = {}
    for trace in traces if isinstance(traces, list) else []:
        if not isinstance(trace, str):
            continue
        frames = stack_frames(trace)
        for frame in frames:
            codes.setdefault((frame.file, frame.line), frame.code.strip())
            if frame.file not in users:
                users[frame.file] = is_user_frame(frame.file)
        user = [f for f in frames if users[f.file]]
        if user:
            line = (user[-1].file, user[-1].line)
            found[line] = None
            by_innermost.setdefault((frames[-1].file, frames[-1].line), {})[line] = None
    return _TraceLines(list(found), {inner: list(lines) for inner, lines in by_innermost.items()})


def _handle_lines(handle_id: Any, handles: dict[str, Any]) -> dict[Where, list[str]]:
    """The source lines of a debug handle, each with its ATen ops: its own source, else (a
    handle fused from several) its children's, recursively."""
    found: dict[Where, list[str]] = {}
    todo, seen = [handle_id], set()
    while todo:
        current = todo.pop()
        if not isinstance(current, str) or current in seen:
            continue
        seen.add(current)
        handle: Any = handles.get(current)
        where = _source(handle)
        if where is not None:
            aten = handle.get("aten_op")
            found.setdefault(where, []).extend([aten] if isinstance(aten, str) else [])
        elif isinstance(handle, dict):
            todo += reversed(handle.get("fused_from") or [])
    return found


def _source(handle: Any) -> Where | None:
    """A handle's own ``SourceLoc`` as (file, line); None when it has none."""
    source = handle.get("source") if isinstance(handle, dict) else None
    if isinstance(source, dict) and isinstance(source.get("file"), str) and isinstance(source.get("start_line"), int):
        return source["file"], source["start_line"]
    return None
