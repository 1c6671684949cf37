"""Call sites recorded at launch (issue 56): under tracking, each call of a compiled graph made
while torch.profiler records runs inside a ``spyre_provenance.call_site`` range naming the line
that made it, and ``annotate --summary`` places the launch on that line. One tracked compile of
a whole graph and of torch-spyre's eager pattern (a Python kernel registered with the dispatcher
running a reused one-op ``torch.compile``), profiled once, serves every test here."""

from __future__ import annotations

import importlib.util
import inspect
import json
import warnings
from pathlib import Path

import pytest
import torch
import torch._inductor.config as inductor_config

import spyre_provenance
from spyre_provenance.base.errors import ProvenanceWarning
from spyre_provenance.capture import call_recording as recording
from spyre_provenance.model import call_sites
from spyre_provenance.runtime import index as kernel_index
from spyre_provenance.runtime import time_summary
from spyre_provenance.viewer import data, relation, timing

# torch-spyre's eager dispatch (torch_spyre/ops/eager.py: compile_once), in a file under a
# torch_spyre folder so the run-time rule takes it for torch-spyre's package, as it would be
DISPATCH = """
import torch

_compiled = {}


def mul_kernel(x, y):
    if "mul" not in _compiled:
        _compiled["mul"] = torch.compile(torch.ops.aten.mul.Tensor, dynamic=False)
    return _compiled["mul"](x, y)
"""


@torch.compile
def scaled(x):
    return torch.tanh(x) * 2.0


def model(x):
    first = scaled(x)
    second = scaled(x + 1.0)
    return first + second


def eager_model(x, y):
    first = torch.ops.spyre_call_site_test.mul(x, y)
    second = torch.ops.spyre_call_site_test.mul(first, y)
    return second


def _line(function, text: str) -> int:
    lines, start = inspect.getsourcelines(function)
    return start + next(i for i, line in enumerate(lines) if text in line)


class Run:
    def __init__(self, root: Path) -> None:
        self.out, self.trace = root / "out", root / "trace.json"
        self.x, self.y = torch.randn(8, 8), torch.randn(8, 8)

    def events(self) -> list[dict]:
        return json.loads(self.trace.read_text())["traceEvents"]

    def summary(self) -> time_summary.TimeSummary:
        return time_summary.summarize(self.trace, kernel_index.build([self.out]))


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("call-sites")
    dispatch_file = root / "torch_spyre" / "ops" / "eager_stand_in.py"
    dispatch_file.parent.mkdir(parents=True)
    dispatch_file.write_text(DISPATCH)
    spec = importlib.util.spec_from_file_location("call_site_test_dispatch", dispatch_file)
    dispatch = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(dispatch)
    library = torch.library.Library("spyre_call_site_test", "DEF")  # kept alive until the module's tests end
    library.define("mul(Tensor x, Tensor y) -> Tensor")
    library.impl("mul", dispatch.mul_kernel, "CPU")
    done = Run(root)
    profiled = inductor_config.patch({"cpp.enable_kernel_profile": True})  # each kernel a profiler event
    with profiled, spyre_provenance.tracking("reference", out_dir=str(done.out)):
        model(done.x)  # every graph compiles here
        eager_model(done.x, done.y)
        cpu = [torch.profiler.ProfilerActivity.CPU]
        with torch.profiler.profile(activities=cpu, with_stack=True) as prof:
            done.expected = (model(done.x), eager_model(done.x, done.y))
    prof.export_chrome_trace(str(done.trace))
    done.library = library
    yield done
    library._destroy()


def _time_per_recorded_line(events: list[dict]) -> dict[int, float]:
    """The kernel events' time under each call site range of this file, read straight from
    the trace: the range around the event on its thread."""
    ranges = [e for e in events if e.get("ph") == "X" and e["name"].startswith(call_sites.PREFIX)]
    found: dict[int, float] = {}
    for event in events:
        if event.get("cat") == "cpu_op" and event["name"].startswith("graph_"):
            around = [r for r in ranges if r["tid"] == event["tid"] and r["ts"] <= event["ts"] <= r["ts"] + r["dur"]]
            site = call_sites.parse(max(around, key=lambda r: r["ts"])["name"])
            assert site is not None and site.file == __file__
            found[site.line] = found.get(site.line, 0.0) + event["dur"]
    return found


def test_the_name_format_reads_back():
    name = call_sites.name("C:/a b/model.py", 12, "forward")
    assert call_sites.parse(name) == call_sites.CallSite("C:/a b/model.py", 12, "forward")
    assert call_sites.parse("## Call CompiledFxGraph x ##") is None


def test_a_call_site_is_named_by_its_own_line_each_time_it_calls():
    """Names are cached per code object and call instruction: a second round of calls from
    the same lines (the cache's hits) names each line as the first round did."""

    def compiled_graph_stand_in() -> str | None:
        return recording.find_call_site(2)  # as the wrapper looks: from its caller up

    def calls_from_two_lines() -> list[str | None]:
        return [
            compiled_graph_stand_in(),  # first
            compiled_graph_stand_in(),  # second
        ]

    first = _line(calls_from_two_lines, "# first")
    named = [call_sites.parse(name or "") for _ in range(2) for name in calls_from_two_lines()]
    expected = [call_sites.CallSite(__file__, line, "calls_from_two_lines") for line in (first, first + 1)]
    assert named == expected * 2


def test_a_whole_graph_called_from_two_lines_is_two_rows(run):
    lines = {_line(model, "scaled(x)"), _line(model, "scaled(x + 1.0)")}
    expected = _time_per_recorded_line(run.events())
    summary = run.summary()
    assert summary.call_sites == 4 and summary.recorded == summary.timed_events == 4  # every launch on its line
    rows = {r.line: r for r in summary.modules if r.file == __file__ and r.placed_by == time_summary.BY_RECORDED}
    assert set(rows) == lines, rows
    for line in lines:
        assert rows[line].total_us == pytest.approx(expected[line], abs=1e-6)
        assert rows[line].code == "in model"
    assert "[line recorded at launch]" in time_summary.render_text(summary)


def test_eager_dispatch_places_each_launch_on_the_models_line(run):
    lines = {_line(eager_model, "mul(x, y)"), _line(eager_model, "mul(first, y)")}
    expected = _time_per_recorded_line(run.events())
    summary = run.summary()
    rows = {r.line: r for r in summary.lines if r.file == __file__ and r.placed_by != time_summary.BY_COMPILE}
    assert set(rows) == lines and summary.per_op_events == 2
    for line in lines:
        assert rows[line].placed_by == time_summary.BY_RECORDED
        assert rows[line].total_us == pytest.approx(expected[line], abs=1e-6)
    assert not any("torch_spyre" in r.file for r in [*summary.lines, *summary.modules])


def test_the_calls_return_what_they_return_untracked(run):
    first, second = run.expected
    assert torch.allclose(first, torch.tanh(run.x) * 2.0 + torch.tanh(run.x + 1.0) * 2.0)
    assert torch.allclose(second, run.x * run.y * run.y)


def test_without_a_profiler_no_frame_is_looked_for(run, monkeypatch):
    looked: list[int] = []
    monkeypatch.setattr(recording, "find_call_site", lambda depth=2: looked.append(depth))
    with spyre_provenance.tracking("reference", out_dir=str(run.out.parent / "again")):
        assert torch.allclose(model(run.x), run.expected[0])
        assert torch.allclose(eager_model(run.x, run.y), run.expected[1])
    assert looked == []


def test_a_failure_finding_the_frame_never_breaks_the_call(run, monkeypatch, tmp_path):
    def broken(depth: int = 2) -> str:
        raise RuntimeError("frame finder broke")

    monkeypatch.setattr(recording, "find_call_site", broken)
    monkeypatch.setattr(recording, "_warned", False)
    with (
        spyre_provenance.tracking("reference", out_dir=str(tmp_path / "out")),
        warnings.catch_warnings(record=True) as seen,
    ):
        warnings.simplefilter("always")
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
            assert torch.allclose(model(run.x), run.expected[0])
            assert torch.allclose(eager_model(run.x, run.y), run.expected[1])
    prof.export_chrome_trace(str(tmp_path / "trace.json"))
    events = json.loads((tmp_path / "trace.json").read_text())["traceEvents"]
    assert not any(e.get("name", "").startswith(call_sites.PREFIX) for e in events)
    broke = [w for w in seen if issubclass(w.category, ProvenanceWarning) and "frame finder broke" in str(w.message)]
    assert len(broke) == 1  # once, however many calls


def test_under_a_strict_suites_filters_the_failure_is_said_on_stderr_not_raised(run, monkeypatch, tmp_path, capfd):
    """A program whose filters turn warnings into errors (``filterwarnings = error``) still
    gets its call's result: the warning would be raised inside the user's call."""

    def broken(depth: int = 2) -> str:
        raise RuntimeError("frame finder broke")

    monkeypatch.setattr(recording, "find_call_site", broken)
    monkeypatch.setattr(recording, "_warned", False)
    with spyre_provenance.tracking("reference", out_dir=str(tmp_path / "out")), warnings.catch_warnings():
        warnings.simplefilter("error")
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]):
            assert torch.allclose(model(run.x), run.expected[0])
    said = [line for line in capfd.readouterr().err.splitlines() if "frame finder broke" in line]
    assert said == ["spyre-provenance: a call site not recorded: RuntimeError: frame finder broke"]


def test_the_viewer_shows_the_recorded_lines_times(run):
    """``view OUT --trace``: each line recorded at launch on the page, with the time the summary
    counts under it (issue 56 point 5), on the graphs whose kernels it launched."""
    summary = run.summary()
    recorded = {r.line: r.total_us for r in summary.lines + summary.modules if r.placed_by == time_summary.BY_RECORDED}
    assert len(recorded) == 4
    doc = data.build(run.out, timing.read(run.trace))
    shown: dict[int, float] = {}
    for g in doc["graphs"]:
        for at, us in (g.get("launched_time_us") or {}).items():
            file, line = doc["lines"][int(at)]
            assert doc["files"][file]["path"] == __file__
            # the line lights the call sites it launched
            assert g["lights"]["line"][at][relation.ENTRY.index("call")]
            shown[line] = max(shown.get(line, 0.0), us)  # a per-op op's graphs each show the op's time
    assert shown == pytest.approx(recorded)
