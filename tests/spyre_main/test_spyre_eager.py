"""Eager mode on torch-spyre main's own compiler (issue 46): per-op compiles made as
``compile_once`` makes them (``tests/scripts/eager/spyre_main_program.py``, which says what
the stand-in allows), recognized by the project's rule; ``lookup`` marks them; and a
profiled run's per-op time placed at the function that launched each kernel.

Spyre kernels cannot run here, so the run's trace (real: its Python stacks and compiled
regions are torch.profiler's) has no device kernel event. Those are added as torch-spyre's
profiler writes them (REFERENCE.md section 6: ``spyre_kernel_v1_<summary>_<key>#<step>``,
``args.provenance_key``, ``args.debug_handles``), each tied to a CPU launch inside the
compiled region that ran it by kineto's correlation id: the part modelled, and said so."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.where import SCRIPTS  # tests/ is on sys.path
from spyre_provenance.model.frames import frames, is_user_frame
from spyre_provenance.runtime import index as kernel_index
from spyre_provenance.runtime import time_summary
from spyre_provenance.runtime.launches import BY_CORRELATION
from spyre_provenance.runtime.lookup import GraphView

pytestmark = [pytest.mark.compile, pytest.mark.spyre_main]

PROGRAM = SCRIPTS / "eager" / "spyre_main_program.py"
REGION = "Torch-Compiled Region: "


def _run_booted(program: Path, root: Path, env: dict[str, str]) -> Path:
    """``program OUT TRACE`` in a process booted on the stand-in, this checkout's package first."""
    env = {**env, "PYTHONPATH": f"{Path(__file__).resolve().parents[2] / 'src'}:{env['PYTHONPATH']}"}
    done = subprocess.run(
        [sys.executable, str(program), str(root / "out"), str(root / "trace.json")],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return root


@pytest.fixture(scope="session")
def spyre_eager(tmp_path_factory: pytest.TempPathFactory, torch_spyre_env: dict[str, str]) -> Path:
    root = tmp_path_factory.mktemp("spyre_eager")
    return _run_booted(PROGRAM, root, {**torch_spyre_env, "TORCH_TRACE": str(root / "torch_trace")})


def test_torch_spyre_mains_per_op_compiles_are_recognized(spyre_eager):
    index = kernel_index.build([spyre_eager / "torch_trace"])
    kinds = sorted(GraphView.of(g).per_op or "" for g in index.graphs)
    assert kinds == ["aten.add.Tensor", "aten.mm.default"]  # mix reused attend's mm graph
    for graph in index.graphs:  # no user frame at compile time, as the issue says of eager mode
        for traces in graph.stack_traces.values():
            assert not [f for t in traces for f in frames(t) if is_user_frame(f.file)]


def test_lookup_marks_them(spyre_eager, run_cli):
    code, out, _ = run_cli("lookup", "sdsc_fused_mm_0", "--from", spyre_eager / "torch_trace")
    assert code == 0 and "per-op compile of aten.mm.default" in out, out


def _with_device_events(root: Path, index: kernel_index.KernelIndex) -> tuple[Path, dict[str, int]]:
    """The run's trace, each compiled region given a CPU launch and its device kernel event
    (torch-spyre's name and fields), tied by correlation id; and the launches per function."""
    doc = json.loads((root / "trace.json").read_text())
    sites = {}
    for graph in index.graphs:
        (key,) = graph.keys
        opspecs = graph.opspecs or {}
        ids = [o["debug_handle"] for o in opspecs["kernels"][key]]
        sites[graph.compile_id] = (opspecs["bundles"][key]["provenance_key"], ids, GraphView.of(graph).per_op)
    added, launched = [], {}
    regions = [e for e in doc["traceEvents"] if e.get("ph") == "X" and e["name"].startswith(REGION)]
    for step, region in enumerate(regions):
        pkey, ids, op = sites[region["name"][len(REGION) :]]
        launch = {**region, "name": f"launch_jobplan:{op}", "ts": region["ts"] + 0.01, "dur": 0.001}
        launch["args"] = {"correlation": 9000 + step}
        kernel = {"ph": "X", "cat": "kernel", "pid": "spyre", "tid": 0, "ts": 10.0 * step, "dur": 2.5 + step}
        kernel["name"] = f"spyre_kernel_v1_fused_{op.split('.')[1]}_{pkey}#{step}"
        kernel["args"] = {"provenance_key": pkey, "debug_handles": ids, "correlation": 9000 + step}
        added += [launch, kernel]
        around = [
            e["name"].rsplit(": ", 1)[1]
            for e in doc["traceEvents"]
            if e.get("cat") == "python_function"
            and e["tid"] == region["tid"]
            and e["ts"] <= region["ts"] <= e["ts"] + e["dur"]
            and e["name"].split(": ", 1)[1] in ("attend", "mix")
        ]
        (function,) = around
        launched[function] = launched.get(function, 0) + 1
    doc["traceEvents"] += added
    trace = root / "with_device.json"
    trace.write_text(json.dumps(doc))
    return trace, launched


def test_each_device_kernel_goes_to_the_function_that_launched_it(spyre_eager):
    index = kernel_index.build([spyre_eager / "torch_trace"])
    trace, launched = _with_device_events(spyre_eager, index)
    assert launched == {"attend": 2, "mix": 1}  # attend: mm and add; mix: the same mm graph
    summary = time_summary.summarize(trace, index)
    assert summary.time_from == time_summary.DEVICE and summary.stacks
    assert summary.attributed == summary.per_op_events == 3 and summary.unplaced == 0
    rows = {r.code: r for r in summary.lines}
    assert {code: r.calls for code, r in rows.items()} == {"in attend": 2, "in mix": 1}
    assert {k.kernel for k in rows["in attend"].kernels} == {"aten.mm.default", "aten.add.Tensor"}
    assert all(r.placed_by == "launch" for r in summary.lines)
    from spyre_provenance.runtime.launches import Launches

    stacks = Launches()
    for event in json.loads(trace.read_text())["traceEvents"]:
        stacks.add(event)
    stacks.done()
    kernel = next(e for e in json.loads(trace.read_text())["traceEvents"] if e.get("cat") == "kernel")
    assert stacks.of(kernel)[1] == BY_CORRELATION


REGISTERED = SCRIPTS / "eager" / "spyre_main_registered.py"


@pytest.fixture(scope="session")
def registered_run(tmp_path_factory: pytest.TempPathFactory, torch_spyre_env: dict[str, str]) -> Path:
    return _run_booted(REGISTERED, tmp_path_factory.mktemp("spyre_registered"), torch_spyre_env)


def test_torch_spyre_mains_registered_kernel_is_placed_on_the_line_that_called_it(registered_run):
    """Issue 56 point 8: what torch-spyre main's ``register_torch_compile_kernel`` registers,
    called from two lines, is recorded at each line, never at torch-spyre's dispatch, each
    line's time the sum of the kernel events in the ranges recorded there."""
    from spyre_provenance.model import call_sites

    source = REGISTERED.read_text().splitlines()
    lines = {i + 1 for i, text in enumerate(source) if "= mul(a, b)" in text or "mul(first, b)" in text}
    events = json.loads((registered_run / "trace.json").read_text())["traceEvents"]
    ranges = [e for e in events if e.get("ph") == "X" and e["name"].startswith(call_sites.PREFIX)]
    sites = {call_sites.parse(r["name"]) for r in ranges}
    assert {(Path(s.file).name, s.line, s.function) for s in sites} == {(REGISTERED.name, n, "scale") for n in lines}
    expected: dict[int, float] = {}
    for event in events:
        if event.get("cat") == "cpu_op" and event["name"].startswith("graph_"):
            around = [r for r in ranges if r["tid"] == event["tid"] and r["ts"] <= event["ts"] <= r["ts"] + r["dur"]]
            site = call_sites.parse(max(around, key=lambda r: r["ts"])["name"])
            expected[site.line] = expected.get(site.line, 0.0) + event["dur"]
    summary = time_summary.summarize(registered_run / "trace.json", kernel_index.build([registered_run / "out"]))
    rows = {
        r.line: r for r in summary.lines if r.file.endswith(REGISTERED.name) and r.placed_by != time_summary.BY_COMPILE
    }
    assert set(rows) == lines == set(expected), (rows, expected)
    for line in lines:
        assert rows[line].placed_by == time_summary.BY_RECORDED and rows[line].calls == 3
        assert rows[line].total_us == pytest.approx(expected[line], abs=1e-6)
    assert not any("torch_spyre" in r.file for r in [*summary.lines, *summary.modules])
