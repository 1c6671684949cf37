"""Eager mode at run time (issue 46): a model whose ops are compiled one by one and reused from
several functions, in torch-spyre's pattern (``tests/scripts/eager``), really profiled with
``torch.profiler`` and ``with_stack=True`` on the reference backend, compiled and profiled once
for the session.

The oracle is the trace itself, read here by plain interval containment and not by the
project's code: a kernel event's launching function is the innermost ``python_function``
event of the model's file around it on its thread."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path

import jsonschema
import pytest

from helpers.eager_case import EagerRun  # tests/ is on sys.path
from helpers.eager_case import eager_run as run_eager_program
from spyre_provenance.links.per_op import per_op_kind, pre_grad_name
from spyre_provenance.model.names import TIME_SUMMARY
from spyre_provenance.runtime import launches, time_summary
from spyre_provenance.runtime.annotate import PREFIX, annotate
from spyre_provenance.runtime.lookup import GraphView
from spyre_provenance.validate import schemas

pytestmark = pytest.mark.compile

MODEL_FILE = "program.py"  # as the profiler names the model's frames
_KERNEL = re.compile(r"graph_[0-9]+_(?P<kernel>sdsc_.+)")
_FRAME = re.compile(r"(?P<file>.+)\((?P<line>[0-9]+)\): (?P<function>.+)")


@pytest.fixture(scope="session")
def eager_run(tmp_path_factory: pytest.TempPathFactory) -> EagerRun:
    return run_eager_program(tmp_path_factory)


def _kernel_events(events: list[dict]) -> list[dict]:
    return [e for e in events if e.get("ph") == "X" and _KERNEL.fullmatch(e["name"])]


def _launching_function(events: list[dict], kernel: dict, skip: str = "") -> str | None:
    """The innermost frame of the model's file around ``kernel`` on its thread (but ``skip``,
    a compiled function's own frame): the oracle."""
    around = [
        e
        for e in events
        if e.get("cat") == "python_function"
        and (e["pid"], e["tid"]) == (kernel["pid"], kernel["tid"])
        and e["ts"] <= kernel["ts"] <= e["ts"] + e["dur"]
        and e["name"].startswith(f"{MODEL_FILE}(")
        and not (skip and e["name"].endswith(f": {skip}"))
    ]
    return max(around, key=lambda e: e["ts"])["name"] if around else None


def _is_per_op(event: dict) -> bool:
    return "tanh" not in event["name"]  # the program's one whole graph is head's tanh * 2


def _summary(run: EagerRun, trace: Path | None = None) -> time_summary.TimeSummary:
    return time_summary.summarize(trace or run.trace, run.index())


def test_the_per_op_graphs_are_recognized_and_the_whole_graph_is_not(eager_run):
    index = eager_run.index()
    kinds = {}
    for position, graph in enumerate(index.graphs):
        kinds.setdefault(GraphView.of(graph).per_op, []).append(graph.compile_id)
        if GraphView.of(graph).per_op is not None:  # the rule itself, on the artifacts as written
            (node,) = graph.mapping["preToPost"]
            assert node == pre_grad_name(GraphView.of(graph).per_op)
            ops = [GraphView.of(graph).call_site(k).aten_ops for k in graph.mapping["cppCodeToPost"]]
            assert per_op_kind(graph.mapping, ops) == GraphView.of(graph).per_op
        assert launches.per_op(index, position) == GraphView.of(graph).per_op
    assert set(kinds) == {"aten.mm.default", "aten.add.Tensor", "aten.relu.default", None}
    assert len(kinds[None]) == 1  # head
    assert len(kinds["aten.mm.default"]) >= 2  # three functions, two operand shapes: reused across them


def test_the_artifacts_of_per_op_graphs_stay_valid(eager_run, run_cli):
    code, out, err = run_cli("validate", eager_run.out)
    assert code == 0, (out, err)


def test_time_per_function_is_the_sum_of_the_kernel_events_it_launched(eager_run):
    events = eager_run.events
    expected: dict[str, list[float]] = defaultdict(list)
    for kernel in _kernel_events(events):
        if _is_per_op(kernel):
            expected[_launching_function(events, kernel)].append(kernel["dur"])
    assert None not in expected
    assert {re.sub(r"\(\d+\)", "", f) for f in expected} >= {"program.py: attend", "program.py: mix"}
    summary = _summary(eager_run)
    assert summary.stacks and summary.unplaced == 0
    assert summary.per_op_events == sum(len(d) for d in expected.values())
    rows = {f"{r.file}({r.line}): {r.code.removeprefix('in ')}": r for r in summary.lines if r.placed_by == "launch"}
    assert set(rows) == set(expected)
    for name, durations in expected.items():
        assert rows[name].calls == len(durations)
        assert rows[name].total_us == pytest.approx(sum(durations), abs=1e-6)  # the trace's own microseconds


def test_a_kernel_launched_from_several_functions_counts_under_each_once(eager_run):
    summary = _summary(eager_run)
    launched = [r for r in summary.lines if r.placed_by == "launch"]
    mm = {r.code: k.calls for r in launched for k in r.kernels if k.kernel == "aten.mm.default"}
    assert set(mm) == {"in attend", "in mix", "in project"}
    events = [e for e in _kernel_events(eager_run.events) if "_mm_" in e["name"]]
    assert sum(mm.values()) == len(events)  # every launch under one function, none twice
    for row in launched:  # one entry per op kind, however many graphs compiled it
        assert len({k.kernel for k in row.kernels}) == len(row.kernels)
        assert all(k.call_site == time_summary.PER_OP for k in row.kernels)
    per_op_time = sum(e["dur"] for e in _kernel_events(eager_run.events) if _is_per_op(e))
    assert sum(r.total_us for r in launched) == pytest.approx(per_op_time, abs=1e-6)


def test_a_whole_graph_keeps_its_line_and_counts_under_each_caller(eager_run):
    summary = _summary(eager_run)
    (own,) = [r for r in summary.lines if r.placed_by == "compile"]
    assert own.code == "return torch.tanh(y) * 2.0"
    callers = {r.code: r.calls for r in summary.modules if r.code in ("in first_head", "in second_head")}
    assert callers == {"in first_head": own.calls // 2, "in second_head": own.calls // 2}


def test_the_summary_json_is_its_schema(eager_run, run_cli):
    code, out, err = run_cli("annotate", eager_run.trace, "--from", eager_run.log_dir, "--summary", "--format", "json")
    assert code == 0, (out, err)
    doc = json.loads(out)
    jsonschema.Draft202012Validator(schemas.load_schema(TIME_SUMMARY, time_summary.SUMMARY_VERSION)).validate(doc)
    assert doc["stacks"] is True and {r["placed_by"] for r in doc["lines"]} == {"launch", "compile"}


def test_without_stacks_the_summary_says_how_to_take_them(eager_run, tmp_path):
    bare = [e for e in eager_run.events if e.get("cat") != "python_function"]
    trace = tmp_path / "bare.json"
    trace.write_text(json.dumps({"traceEvents": bare}))
    summary = _summary(eager_run, trace)
    assert not summary.stacks and summary.unplaced == 0
    # the compile's lines, kept; the program's run was tracked, so its calls also recorded their
    # call sites: without stacks its own dispatch (per_op.py, in the user's code) cannot be told
    # from the model's lines, and those launches sit on the dispatch's recorded line
    assert {r.placed_by for r in summary.lines} == {"compile", time_summary.BY_RECORDED}
    text = time_summary.render_text(summary)
    assert "with_stack=True" in text and "the trace has no Python stacks" in text
    assert summary.per_op_events == sum(1 for e in _kernel_events(bare) if _is_per_op(e))


def test_a_launch_the_stacks_do_not_hold_is_counted_apart(eager_run, tmp_path):
    events = eager_run.events
    moved = next(e for e in _kernel_events(events) if _is_per_op(e))
    moved["tid"] = moved["tid"] + 1_000_000  # a thread with no Python stack: nothing says who launched it
    trace = tmp_path / "moved.json"
    trace.write_text(json.dumps({"traceEvents": events}))
    summary = _summary(eager_run, trace)
    assert summary.unplaced == 1 and summary.unplaced_us == pytest.approx(moved["dur"])
    launched = sum(r.calls for r in summary.lines if r.placed_by == "launch")
    assert launched == summary.per_op_events - 1
    assert "NOT PLACED: 1 per-op events" in time_summary.render_text(summary)


def test_annotate_gives_each_launch_its_own_stack(eager_run, tmp_path):
    output = tmp_path / "annotated.json"
    summary = annotate(eager_run.trace, eager_run.index(), output)
    assert summary.annotated == summary.kernel_events and summary.stacks and summary.unplaced == 0
    raw = eager_run.events
    written = _kernel_events(json.loads(output.read_text())["traceEvents"])
    for before, after in zip(_kernel_events(raw), written, strict=True):
        args = after["args"]
        stack = args["stack"]
        assert isinstance(stack, list) and all(isinstance(s, str) for s in stack)  # upstream's form
        function = _FRAME.fullmatch(_launching_function(raw, before, skip="head"))
        if _is_per_op(before):
            (text,) = stack
            assert f'File "{MODEL_FILE}", line {function["line"]}, in {function["function"]}' in text
            assert args[f"{PREFIX}source"] == [f"{MODEL_FILE}:{function['line']}"]
            assert args[f"{PREFIX}launch"]["by"] == launches.BY_NESTING
        else:  # the whole graph: the compile's stack, and the frames that called it beside it
            assert "return torch.tanh(y) * 2.0" in stack[0]
            # the call into it is the line recorded at launch (tracked), not the function's first line
            *_, recorded = args[f"{PREFIX}launch"]["frames"]
            assert args[f"{PREFIX}launch"]["by"] == launches.BY_RECORDED
            assert recorded.endswith(f"{MODEL_FILE}:{int(function['line']) + 1} in {function['function']}")


def test_lookup_gives_one_block_per_op_kind_and_says_whose_line_it_has(eager_run, run_cli):
    from spyre_provenance.model.lookup_records import LOOKUP_VERSION
    from spyre_provenance.model.names import LOOKUP

    index = eager_run.index()
    mm_graphs = [g for g in index.graphs if GraphView.of(g).per_op == "aten.mm.default"]
    kernel = next(iter(mm_graphs[0].mapping["cppCodeToPost"])).split(":")[0]
    code, out, _ = run_cli("lookup", kernel, "--from", eager_run.log_dir)
    assert code == 0, out
    named = re.findall(r"per-op compile of (\S+)", out)
    assert named == ["aten.mm.default"]  # one block, however many graphs compiled it
    assert f"{len(mm_graphs)} graph{'s' if len(mm_graphs) > 1 else ''} (" in out
    assert "its source below is the first call's only" in out and "with_stack=True" in out
    code, out, _ = run_cli("lookup", kernel, "--from", eager_run.log_dir, "--format", "json")
    doc = json.loads(out)
    jsonschema.Draft202012Validator(schemas.load_schema(LOOKUP, LOOKUP_VERSION)).validate(doc)
    assert {m["per_op"] for m in doc["answers"][0]["matches"]} == {"aten.mm.default"}
    assert len(doc["answers"][0]["matches"]) == len(mm_graphs)  # every graph still listed in JSON
