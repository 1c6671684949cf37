"""The user's frames that launched a kernel event, from the profiler's own evidence.

What torch.profiler writes with ``with_stack=True`` (measured, torch 2.13 CPU,
``export_chrome_trace``): no stack in any op's ``args``; the Python stack is its own events,
``{"ph": "X", "cat": "python_function", "name": "model.py(6): forward", "args": {"Python
id": 29, "Python parent id": 10}}``, one per running frame, nested in time on the thread
that ran them, each naming its parent. The number is the frame's line when the profiler met
it: the function's first line for a frame entered under the profiler (``def forward`` of
the model, not the line inside it that made the call), the current line for a frame already
running when profiling started (``<module>``). So a launch is placed at the user's function
that launched it, named as the trace names it, and two calls from one function are one
place: the trace tells them apart no further, and no line is guessed.

A kernel event's launching CPU op is found by, in order:

- **correlation id**: a device kernel event's ``args.correlation`` equals that of the CPU
  event that launched it (a runtime launch; kineto's link between the two);
- **flow event**: a ``ph: "f"`` event at the kernel event (same thread and time) whose ``id``
  is that of a ``ph: "s"`` event at the launch;
- **nesting in time**: the kernel event itself is a CPU op (Inductor's C++ kernel profiling,
  the reference backend), so it sits inside the Python frames of its own thread.

The launch's stack is then the ``python_function`` events around that point on its thread,
less those that began inside the compiled graph's region (``Torch-Compiled Region``,
``CompiledFunctionBackward``): the generated wrapper and the kernel's runner are the
machinery, not who launched it.

A process this project tracked records more than the profiler can: each call into a compiled
graph runs inside a ``spyre_provenance.call_site: FILE:LINE (FUNCTION)`` range
(``model.call_sites``) naming the line that made the call. ``recorded`` gives the innermost
such range around a launch point: the exact line, where the Python stack gives a function.
Pure: no torch.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Iterator
from typing import Any, Generic, NamedTuple, TypeVar

from spyre_provenance.model import call_sites
from spyre_provenance.model.frames import is_user_frame
from spyre_provenance.runtime.attribution import BACKWARD_REGION, COMPILED_REGION
from spyre_provenance.runtime.index import KernelIndex
from spyre_provenance.runtime.lookup import GraphView

PYTHON_FUNCTION = "python_function"
_FRAME_NAME = re.compile(r"(?P<file>.+)\((?P<line>[0-9]+)\): (?P<function>.+)")
_REGIONS = (COMPILED_REGION, BACKWARD_REGION, "CompiledFunction")
_V = TypeVar("_V")


class LaunchFrame(NamedTuple):
    file: str
    line: int  # as the profiler wrote it: the function's first line, for a frame it saw begin
    function: str


#: how a kernel event was tied to its launch
BY_CORRELATION, BY_FLOW, BY_NESTING = "correlation id", "flow event", "nesting in time"
#: a launch placed at the call site the tracked process recorded (``recorded``), not by the stack
BY_RECORDED = "recorded at launch"


class _Spans(Generic[_V]):
    """One thread's time spans that nest (compiled regions, recorded call sites): ``add``
    each, ``done``, then ``around`` a moment."""

    def __init__(self) -> None:
        self.spans: list[tuple[float, float, _V]] = []  # (start, end, what), sorted at done
        self._starts: list[float] = []
        self._reach: list[float] = []  # the latest end of spans[: i + 1]

    def add(self, start: float, end: float, value: _V) -> None:
        self.spans.append((start, end, value))

    def done(self) -> None:
        self.spans.sort(key=lambda span: (span[0], -span[1]))  # an outer span before the inner one it starts with
        self._starts = [span[0] for span in self.spans]
        self._reach, latest = [], float("-inf")
        for span in self.spans:
            latest = max(latest, span[1])
            self._reach.append(latest)

    def around(self, ts: float) -> Iterator[tuple[float, float, _V]]:
        """The spans enclosing ``ts``, innermost first (the latest to begin of those still
        running); back only while some earlier span still reaches ``ts``."""
        i = bisect.bisect_right(self._starts, ts) - 1
        while i >= 0 and self._reach[i] >= ts:
            if self.spans[i][1] >= ts:
                yield self.spans[i]
            i -= 1


class Launches:
    """Python stacks and launch ties of one trace: ``add`` each event, ``done``, then ``of``."""

    def __init__(self) -> None:
        # per (pid, tid): python frames as [start, end, python id, parent id, name], sorted at done
        self._frames: dict[tuple[Any, Any], list[tuple[float, float, Any, Any, str]]] = {}
        self._starts: dict[tuple[Any, Any], list[float]] = {}
        self._by_id: dict[tuple[Any, Any], dict[Any, int]] = {}
        # per (pid, tid): the compiled-graph regions (their names) and the recorded call sites
        self._regions: dict[tuple[Any, Any], _Spans[str]] = {}
        self._sites: dict[tuple[Any, Any], _Spans[LaunchFrame]] = {}
        self.call_sites = 0  # recorded call site ranges in the trace
        self._correlated: dict[Any, tuple[Any, Any, float]] = {}  # correlation id -> launch point
        self._flow_starts: dict[Any, tuple[Any, Any, Any]] = {}  # flow id -> launch point
        self._flow_ends: dict[tuple[Any, Any, Any], Any] = {}  # kernel point -> flow id
        # a stack per launch point would be a copy per launch: one of each, and frames parsed once
        self._interned: dict[tuple[LaunchFrame, ...], tuple[LaunchFrame, ...]] = {}
        self._parsed: dict[str, LaunchFrame | None] = {}
        self.python_frames = 0

    def add(self, event: dict[str, Any]) -> None:
        """Note what ``event`` says about stacks and launches (any event; cheap for most). A
        field of a shape no profiler writes (an id that is a list, ``args`` that is no object)
        is evidence of nothing: the event is passed over, never a failure."""
        ph = event.get("ph")
        if ph == "X":
            ts, dur = event.get("ts"), event.get("dur")
            thread = (event.get("pid"), event.get("tid"))
            if not isinstance(ts, (int, float)) or not isinstance(dur, (int, float)) or not _ids(*thread):
                return
            args = event.get("args")
            args = args if isinstance(args, dict) else {}
            if event.get("cat") == PYTHON_FUNCTION:
                own, parent = args.get("Python id"), args.get("Python parent id")
                if _ids(own, parent):
                    self._frames.setdefault(thread, []).append((ts, ts + dur, own, parent, event["name"]))
                    self.python_frames += 1
                return
            name = event["name"]
            if name.startswith(_REGIONS):
                self._regions.setdefault(thread, _Spans()).add(ts, ts + dur, name)
            elif name.startswith(call_sites.PREFIX):
                site = call_sites.parse(name)
                if site is not None:
                    self._sites.setdefault(thread, _Spans()).add(ts, ts + dur, LaunchFrame(*site))
                    self.call_sites += 1
                return
            correlation = args.get("correlation")
            if correlation is not None and event.get("cat") != "kernel" and _ids(correlation):
                self._correlated.setdefault(correlation, (thread[0], thread[1], ts))
        elif ph in ("s", "f"):
            point = (event.get("pid"), event.get("tid"), event.get("ts"))
            if not isinstance(point[2], (int, float)) or not _ids(event.get("id"), *point[:2]):
                return
            if ph == "s":
                self._flow_starts.setdefault(event.get("id"), point)
            else:
                self._flow_ends[point] = event.get("id")

    def done(self) -> None:
        for thread, frames in self._frames.items():
            frames.sort(key=lambda f: (f[0], -f[1]))
            self._starts[thread] = [f[0] for f in frames]
            self._by_id[thread] = {f[2]: i for i, f in enumerate(frames) if f[2] is not None}
        for regions in self._regions.values():
            regions.done()
        for sites in self._sites.values():
            sites.done()

    @property
    def has_stacks(self) -> bool:
        """Whether the trace holds Python stacks at all (profiled with ``with_stack=True``)."""
        return self.python_frames > 0

    def of(self, event: dict[str, Any]) -> tuple[tuple[LaunchFrame, ...], str] | None:
        """The stack that launched ``event`` (outermost frame first, the compiled graph's own
        frames left out) and what tied it; None when the trace does not say."""
        point, how = self._launch_point(event)
        if point is None:
            return None
        pid, tid, ts = point
        thread = (pid, tid)
        inner = self._innermost(thread, ts)
        if inner is None:
            return None
        stack = self._walk(thread, inner, self._region_start(thread, ts))
        return (stack, how) if stack else None

    def recorded(self, event: dict[str, Any]) -> LaunchFrame | None:
        """The call site recorded at launch around ``event``'s launch point: the innermost
        ``spyre_provenance.call_site`` range enclosing it (ranges nest: the latest to begin
        of those still running); None when the trace recorded none there."""
        if not self.call_sites:
            return None
        point, _ = self._launch_point(event)
        if point is None:
            return None
        sites = self._sites.get((point[0], point[1]))
        innermost = next(sites.around(point[2]), None) if sites is not None else None
        return innermost[2] if innermost is not None else None

    def region_stacks(self) -> Iterator[tuple[str, tuple[LaunchFrame, ...]]]:
        """(compile id, the stack that entered it) of each ``Torch-Compiled Region`` with a
        Python stack around it: who called the compiled graph, each time."""
        for thread, regions in self._regions.items():
            for start, _, name in regions.spans:
                if not name.startswith(COMPILED_REGION):
                    continue
                inner = self._innermost(thread, start)
                if inner is not None:
                    yield name[len(COMPILED_REGION) :].strip(), self._walk(thread, inner, start)

    def _launch_point(self, event: dict[str, Any]) -> tuple[tuple[Any, Any, float] | None, str]:
        args = event.get("args")
        correlation = args.get("correlation") if isinstance(args, dict) else None
        ts = event.get("ts")
        if not isinstance(ts, (int, float)) or not _ids(correlation, event.get("pid"), event.get("tid")):
            return None, ""
        if correlation is not None and correlation in self._correlated:
            return self._correlated[correlation], BY_CORRELATION
        flow = self._flow_ends.get((event.get("pid"), event.get("tid"), ts))
        if flow is not None and flow in self._flow_starts:
            return self._flow_starts[flow], BY_FLOW
        return (event.get("pid"), event.get("tid"), ts), BY_NESTING

    def _innermost(self, thread: tuple[Any, Any], ts: float) -> int | None:
        """The innermost Python frame around ``ts``: the last to begin before it, or the
        nearest of its parents still running (frames nest, so the walk is the stack's depth)."""
        starts = self._starts.get(thread)
        if not starts:
            return None
        i = bisect.bisect_right(starts, ts) - 1
        frames, by_id = self._frames[thread], self._by_id[thread]
        while i >= 0 and frames[i][1] < ts:
            parent = frames[i][3]
            i = by_id.get(parent, -1) if parent is not None else -1
        return i if i >= 0 else None

    def _region_start(self, thread: tuple[Any, Any], ts: float) -> float:
        """Where the outermost compiled region around ``ts`` began (inf: none around it)."""
        regions = self._regions.get(thread)
        found = float("inf")
        for start, _, _ in regions.around(ts) if regions is not None else ():
            found = start  # the last one around is the outermost
        return found

    def _walk(self, thread: tuple[Any, Any], inner: int, cut: float) -> tuple[LaunchFrame, ...]:
        frames, by_id = self._frames[thread], self._by_id[thread]
        found: list[LaunchFrame] = []
        i: int | None = inner
        while i is not None and i >= 0:
            start, _, _, parent, name = frames[i]
            if start < cut:
                frame = self._parsed.get(name, ...)
                if frame is ...:
                    match = _FRAME_NAME.fullmatch(name)
                    frame = LaunchFrame(match["file"], int(match["line"]), match["function"]) if match else None
                    self._parsed[name] = frame
                if frame is not None:
                    found.append(frame)
            i = by_id.get(parent) if parent is not None else None
        stack = tuple(reversed(found))
        return self._interned.setdefault(stack, stack)


def _ids(*values: Any) -> bool:
    """Whether every value can be an id (a number, a string, or null)."""
    return all(v is None or isinstance(v, (int, float, str)) for v in values)


def user_frames(stack: tuple[LaunchFrame, ...]) -> list[LaunchFrame]:
    """The user's frames of a launch stack, outermost first (``model.frames``' rule)."""
    return [f for f in stack if is_user_frame(f.file)]


def with_recorded(user: list[LaunchFrame], recorded: LaunchFrame) -> list[LaunchFrame]:
    """A launch's user frames with the recorded call site in place of its function's frame
    (the profiler's, at the function's first line), and what ran inside it left out (a
    dispatch the compile-time rule counts as the user's: torch-spyre's). Without the
    function in the stack (no stacks, or cut), the recorded frame alone."""
    for i in range(len(user) - 1, -1, -1):
        frame = user[i]
        if frame.function == recorded.function and same_file(recorded.file, frame.file):
            return [*user[:i], recorded]
    return [recorded]


def upstream_stack(stack: tuple[LaunchFrame, ...]) -> str:
    """A launch stack as one stack-trace string in the form upstream's ``args["stack"]`` lists
    (``traceback.format_list``'s frame lines, outermost first; no code line: the trace has none)."""
    return "".join(f'  File "{f.file}", line {f.line}, in {f.function}\n' for f in stack)


class PerOpPlaces:
    """Where a per-op kernel's launch goes: the user's innermost frame outside the code that
    dispatches ops to their per-op compiles (torch-spyre's ``ops/eager.py``, or a program's own
    ``compile_once``), learnt from the trace and the compile, never from a list of names.

    Every entry into a per-op graph (its compiled region) has a stack. The dispatch is the
    path they all end with: the innermost user frames (file and function) common to every
    entry. When the entries part above that path (launched from two functions or more), the
    path is the dispatch. When they never part (one function launches every op), the path is
    the whole stack, and only the compile can tell the dispatch from the user's code: its
    innermost frames in files where no per-op compile recorded its caller (the stack trace's
    innermost user frame, the *anchor*; torch records a frame above the dispatch) are the
    dispatch; without an anchor, nothing is taken for dispatch and the innermost frame is
    the place. ``learn`` every entry's stack first, then ``place``."""

    def __init__(self, anchors: Iterable[tuple[str, str]]) -> None:
        self._anchor_files = {file for file, _ in anchors}
        self._entries: set[tuple[tuple[str, str], ...]] = set()  # each entry's user frames (file, function)
        self._dispatch: set[tuple[str, str]] | None = None  # made at the first place()
        self._placed: dict[tuple[LaunchFrame, ...], tuple[LaunchFrame, list[LaunchFrame]] | None] = {}

    def learn(self, stack: tuple[LaunchFrame, ...]) -> None:
        self._entries.add(tuple((f.file, f.function) for f in user_frames(stack)))

    @property
    def dispatch(self) -> set[tuple[str, str]]:
        """The (file, function) frames of the dispatch."""
        if self._dispatch is None:
            entries = [e for e in self._entries if e]
            common = _common_tail(entries)
            if any(len(e) > len(common) for e in entries):  # the entries part above it
                self._dispatch = set(common)
            else:
                outside = 0  # the innermost frames in no anchor's file
                while outside < len(common) and not any(
                    same_file(a, common[-1 - outside][0]) for a in self._anchor_files
                ):
                    outside += 1
                self._dispatch = set(common[len(common) - outside :]) if self._anchor_files else set()
        return self._dispatch

    def place(self, stack: tuple[LaunchFrame, ...]) -> tuple[LaunchFrame, list[LaunchFrame]] | None:
        """(the launching user frame, the user frames calling it, outermost first); None when
        the stack holds no user frame outside the dispatch."""
        if stack not in self._placed:  # stacks are interned: one answer per place
            user = user_frames(stack)
            while user and (user[-1].file, user[-1].function) in self.dispatch:
                user = user[:-1]
            self._placed[stack] = (user[-1], user[:-1]) if user else None
        return self._placed[stack]

    def is_dispatch(self, recorded: LaunchFrame) -> bool:
        """Whether a call site recorded at launch (its file as Python knows it, absolute) is
        one of the dispatch's frames (the profiler's, its file cut to a ``sys.path`` entry)."""
        return any(function == recorded.function and same_file(recorded.file, file) for file, function in self.dispatch)


def recorded_site(
    stacks: Launches, places: PerOpPlaces | None, event: dict[str, Any], per_op: bool
) -> LaunchFrame | None:
    """The call site recorded at ``event``'s launch, unless the event is a per-op kernel's and
    the site is a program's own dispatch (its ``compile_once``, which the run-time rule cannot
    tell from the user's code): ``places`` places those by the stack."""
    recorded = stacks.recorded(event)
    if recorded is not None and per_op and places is not None and places.is_dispatch(recorded):
        return None
    return recorded


def _common_tail(entries: list[tuple[tuple[str, str], ...]]) -> tuple[tuple[str, str], ...]:
    """The longest run of innermost frames every entry ends with."""
    if not entries:
        return ()
    tail = entries[0]
    for entry in entries[1:]:
        n = 0
        while n < min(len(tail), len(entry)) and tail[-1 - n] == entry[-1 - n]:
            n += 1
        tail = tail[len(tail) - n :]
    return tail


def same_file(recorded: str, written: str) -> bool:
    """A compile's path (absolute) and the profiler's (cut to the ``sys.path`` entry it
    is under: ``model.py``, ``torch/nn/modules/linear.py``) name the same file."""
    recorded, written = recorded.replace("\\", "/"), written.replace("\\", "/")
    return recorded == written or recorded.endswith("/" + written.lstrip("/"))


_TRACE_FRAME = re.compile(r'File "(?P<file>[^"]+)", line [0-9]+, in (?P<function>[^\n]+)')


def anchor(stack_trace: str) -> tuple[str, str] | None:
    """(file, function) of the innermost user frame of a compile's stack trace (the frame
    that called a per-op compile the first time), None when it has none."""
    found = [(m["file"], m["function"].strip()) for m in _TRACE_FRAME.finditer(stack_trace)]
    user = [f for f in found if is_user_frame(f[0])]
    return user[-1] if user else None


def per_op(index: KernelIndex, position: int) -> str | None:
    """The ATen op of graph ``position`` when it is a per-op compile (``links.per_op``)."""
    return GraphView.of(index.graphs[position]).per_op


def per_op_places(index: KernelIndex, stacks: Launches) -> PerOpPlaces:
    """Where this trace's per-op launches go: anchored on the per-op graphs' compile-time
    frames, learnt from every entry into a per-op graph the trace holds (its compiled region),
    so ``annotate`` and ``--summary`` place each launch alike, whatever order events come in."""
    per_op_graphs = [g for i, g in enumerate(index.graphs) if per_op(index, i) is not None]
    places = PerOpPlaces(
        a
        for graph in per_op_graphs
        for traces in graph.stack_traces.values()
        for trace in (traces if isinstance(traces, list) else [])
        if isinstance(trace, str) and (a := anchor(trace)) is not None
    )
    compile_ids = {g.compile_id for g in per_op_graphs}
    for compile_id, stack in stacks.region_stacks():
        if compile_id in compile_ids:
            places.learn(stack)
    return places
