"""``runtime.launches`` on traces written in the shape torch.profiler writes them (``with_stack=
True``: ``python_function`` events naming their parents; kineto's correlation ids and flow
events for device kernels), for the ties the CPU-only reference run cannot show: a device
kernel on its own thread tied by correlation id or by flow event, a launch with no stack, and
the dispatch rule's three cases. The really profiled run: tests/compile/test_eager_runtime.py."""

from __future__ import annotations

from typing import Any

import pytest

from spyre_provenance.runtime.launches import (
    BY_CORRELATION,
    BY_FLOW,
    BY_NESTING,
    Launches,
    LaunchFrame,
    PerOpPlaces,
    upstream_stack,
)

CPU, DEVICE = (7, 7), (0, 3)


class Trace:
    """Events of one CPU thread's Python stack and the kernels it launches."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self._ids = 0

    def frame(self, name: str, ts: float, dur: float, parent: int | None) -> int:
        self._ids += 1
        args = {"Python id": self._ids, "Python parent id": parent}
        self.events.append(_x(name, ts, dur, CPU, cat="python_function", args=args))
        return self._ids

    def add(self, *events: dict[str, Any]) -> None:
        self.events.extend(events)

    def launches(self) -> Launches:
        found = Launches()
        for event in self.events:
            found.add(event)
        found.done()
        return found


def _x(name: str, ts: float, dur: float, thread: tuple[int, int], **extra: Any) -> dict[str, Any]:
    return {"ph": "X", "name": name, "ts": ts, "dur": dur, "pid": thread[0], "tid": thread[1], **extra}


def _two_launches() -> Trace:
    """``<module>`` -> ``attend`` and ``mix`` -> the dispatch -> the compiled region, each with
    a runtime launch on the CPU and its kernel on the device thread."""
    trace = Trace()
    root = trace.frame("model.py(90): <module>", 0, 100, None)
    for i, (function, start) in enumerate((("attend", 10), ("mix", 50))):
        user = trace.frame(f"model.py({30 + i}): {function}", start, 30, root)
        dispatch = trace.frame("ops/eager.py(21): dispatch", start + 2, 25, user)
        entry = trace.frame("torch/_dynamo/eval_frame.py(1076): compile_wrapper", start + 4, 20, dispatch)
        trace.add(_x("Torch-Compiled Region: 0/0", start + 5, 18, CPU))
        trace.frame("/tmp/torchinductor_root/ab/cab.py(80): call", start + 6, 10, entry)  # inside the region
        trace.add(_x("runtime_launch", start + 8, 1, CPU, cat="cuda_runtime", args={"correlation": 100 + i}))
    return trace


def test_a_device_kernel_is_tied_by_its_correlation_id():
    trace = _two_launches()
    trace.add(_x("spyre_kernel", 200, 5, DEVICE, cat="kernel", args={"correlation": 101}))
    stack, how = trace.launches().of(trace.events[-1])
    assert how == BY_CORRELATION
    assert [f.function for f in stack] == ["<module>", "mix", "dispatch", "compile_wrapper"]  # not the region's own


def test_a_device_kernel_is_tied_by_a_flow_event():
    trace = _two_launches()
    trace.add(
        {"ph": "s", "id": 9, "pid": CPU[0], "tid": CPU[1], "ts": 18.5, "cat": "ac2g", "name": "ac2g"},
        {"ph": "f", "id": 9, "pid": DEVICE[0], "tid": DEVICE[1], "ts": 300, "bp": "e", "cat": "ac2g", "name": "ac2g"},
        _x("spyre_kernel", 300, 5, DEVICE, cat="kernel"),
    )
    stack, how = trace.launches().of(trace.events[-1])
    assert how == BY_FLOW and stack[1].function == "attend"


def test_a_cpu_kernel_is_tied_by_nesting_in_time():
    trace = _two_launches()
    trace.add(_x("graph_0_sdsc_fused_mm_0", 57, 2, CPU, cat="cpu_op"))
    stack, how = trace.launches().of(trace.events[-1])
    assert how == BY_NESTING and [f.function for f in stack][:2] == ["<module>", "mix"]
    assert upstream_stack(stack).startswith(
        '  File "model.py", line 90, in <module>\n  File "model.py", line 31, in mix\n'
    )


def test_nothing_ties_a_kernel_the_trace_says_nothing_of():
    trace = _two_launches()
    trace.add(_x("spyre_kernel", 200, 5, DEVICE, cat="kernel", args={"correlation": 555}))  # no such launch
    trace.add(_x("graph_0_sdsc_fused_mm_0", 95.5, 1, (7, 8), cat="cpu_op"))  # a thread without stacks
    launches = trace.launches()
    assert launches.has_stacks
    assert launches.of(trace.events[-2]) is None and launches.of(trace.events[-1]) is None


def _stack(*names: str) -> tuple[LaunchFrame, ...]:
    return tuple(LaunchFrame(n.split(":")[0], 1, n.split(":")[1]) for n in names)


@pytest.mark.parametrize(
    ("anchor", "entries", "placed"),
    [
        # launched from several functions: the path every entry ends with is the dispatch
        (
            "/home/me/model.py",
            [
                ("model.py:attend", "ops.py:wrapper", "ops.py:dispatch"),
                ("model.py:mix", "ops.py:wrapper", "ops.py:dispatch"),
            ],
            "attend",
        ),
        # the dispatch in the model's own file: the same, by function
        (None, [("model.py:attend", "model.py:dispatch"), ("model.py:mix", "model.py:dispatch")], "attend"),
        # one function launches every op: the compile recorded its caller in the model's file
        ("/home/me/model.py", [("model.py:forward", "eager_ops.py:wrapper", "eager_ops.py:dispatch")], "forward"),
        # the user's own function calls its compiled op, from one place: the user's frame
        ("/home/me/model.py", [("model.py:main", "model.py:forward")], "forward"),
        # one path and no recorded caller: nothing is taken for dispatch
        (None, [("model.py:forward", "eager_ops.py:dispatch")], "dispatch"),
    ],
)
def test_the_dispatch_is_learnt_from_the_evidence(anchor, entries, placed):
    places = PerOpPlaces([(anchor, "x")] if anchor else [])
    stacks = [_stack(*e) for e in entries]
    for stack in stacks:
        places.learn(stack)
    inner, _ = places.place(stacks[0])
    assert inner.function == placed


def test_a_stack_of_dispatch_code_only_places_nothing():
    places = PerOpPlaces([("/home/me/model.py", "forward")])
    stack = _stack("eager_ops.py:wrapper", "eager_ops.py:dispatch")
    places.learn(stack)
    assert places.place(stack) is None


def test_fields_of_shapes_no_profiler_writes_are_evidence_of_nothing():
    """Damaged stacks never fail a summary: each odd event is passed over."""
    trace = _two_launches()
    trace.add(
        _x("model.py(1): odd", 1, 2, CPU, cat="python_function", args=["not", "an", "object"]),
        _x("model.py(1): odd", 1, 2, CPU, cat="python_function", args={"Python id": [1], "Python parent id": {}}),
        _x("runtime_launch", 3, 1, ([1], 2), cat="cuda_runtime", args={"correlation": 100}),
        _x("runtime_launch", 3, 1, CPU, cat="cuda_runtime", args={"correlation": {"a": 1}}),
        {"ph": "s", "id": [9], "pid": CPU[0], "tid": CPU[1], "ts": 18.5},
        {"ph": "f", "id": 9, "pid": {}, "tid": CPU[1], "ts": 300},
        _x("spyre_kernel", 200, 5, DEVICE, cat="kernel", args={"correlation": [101]}),
    )
    launches = trace.launches()
    assert launches.of(trace.events[-1]) is None  # its correlation id is no id
    assert launches.of(_x("spyre_kernel", 200, 5, DEVICE, cat="kernel", args={"correlation": 101}))[1] == BY_CORRELATION
