"""``annotate`` places each event in the compile that ran it, or says it cannot; ``annotate
--summary`` gives a profiled run's kernel time per source line and module.

The oracle for the compile is the trace itself: torch.profiler's ``Torch-Compiled Region:
<compile id>`` event around each kernel event (read here by plain interval containment,
not by the project's code)."""

from __future__ import annotations

import csv
import io
import json
import re

import jsonschema
import pytest

from helpers.fresh_process import FRESH  # tests/ is on sys.path
from helpers.where import ZOO
from spyre_provenance.model.names import TIME_SUMMARY
from spyre_provenance.runtime import time_summary
from spyre_provenance.validate import schemas

RECOMPILES = (f"{ZOO / 'models.py'}:recompiles", "--profile")
TRAIN = ("mlp", "--train", "--profile")
_PROFILED = re.compile(r"graph_[0-9]+_(?P<kernel>.+)")


def _events(case) -> list[dict]:
    (trace,) = (case.out / "profile").glob("*.trace.json")
    return json.loads(trace.read_text())["traceEvents"]


def _region(events: list[dict], event: dict) -> str | None:
    """The compile id of the ``Torch-Compiled Region`` around ``event`` on its thread."""
    around = [
        e
        for e in events
        if e.get("ph") == "X"
        and e["name"].startswith("Torch-Compiled Region: ")
        and (e["pid"], e["tid"]) == (event["pid"], event["tid"])
        and e["ts"] <= event["ts"] <= e["ts"] + e["dur"]
    ]
    return around[-1]["name"].split(": ", 1)[1] if around else None


@pytest.mark.compile
def test_each_event_is_the_compile_that_ran_it(compile_case):
    done = compile_case(*RECOMPILES)
    assert done.returncode == 0, done.stderr[-2000:]
    events = _events(done)
    kernel_events = [e for e in events if e.get("ph") == "X" and _PROFILED.fullmatch(e["name"])]
    assert len(kernel_events) >= 3  # three calls, each running its compile's kernels
    ran = set()
    for event in kernel_events:
        _, compile_id, _ = event["args"]["spyre_provenance_graph"].split(" ")
        assert compile_id == _region(events, event), event
        ran.add(compile_id)
    # all three calls ran one compile (mark_dynamic's 0/2): never handed out in turn across compiles
    assert len(ran) == 1


@pytest.mark.compile
def test_the_viewer_times_each_event_in_the_compile_that_ran_it(compile_case):
    """``view --trace`` on the raw trace (annotate's fields taken out) places events by the
    rule annotate follows: each call site's calls come from its own compile's region, and no
    event is handed to another compile's call site of the same kernel name."""
    from spyre_provenance.viewer import data, timing

    done = compile_case(*RECOMPILES)
    events = _events(done)
    expected: dict[str, int] = {}
    raw = []
    for event in events:
        args = {k: v for k, v in (event.get("args") or {}).items() if not k.startswith("spyre_provenance_")}
        raw.append({**event, "args": args})
        if event.get("ph") == "X" and _PROFILED.fullmatch(event["name"]):
            compile_id = _region(events, event)
            expected[compile_id] = expected.get(compile_id, 0) + 1
    trace = done.out / "raw.trace.json"
    trace.write_text(json.dumps({"traceEvents": raw}))
    try:
        doc = data.build(done.out, timing.read(trace))
    finally:
        trace.unlink()
    timed: dict[str, int] = {}
    for graph in doc["graphs"]:
        for call in graph["calls"]:
            if "calls" in call:
                timed[graph["compile_id"]] = timed.get(graph["compile_id"], 0) + call["calls"]
    assert timed == expected
    assert doc["trace"]["matched_events"] == sum(expected.values()) and doc["trace"]["unmatched_events"] == 0


@pytest.mark.compile
def test_an_event_nothing_places_is_reported_not_guessed(compile_case, run_cli, tmp_path):
    """Without the ``graph_<i>_`` prefix and the compiled regions, a kernel name that each
    of three compiles has is not placed: the events are reported and left as they are."""
    done = compile_case(*RECOMPILES)
    bare = []
    for event in _events(done):
        if event.get("ph") == "X" and event["name"].startswith("Torch-Compiled Region"):
            continue
        match = _PROFILED.fullmatch(event["name"])
        if match:
            event = {**event, "name": match["kernel"], "args": {}}
        bare.append(event)
    trace = tmp_path / "bare.json"
    trace.write_text(json.dumps({"traceEvents": bare}))
    profiled = sum(1 for e in _events(done) if e.get("ph") == "X" and _PROFILED.fullmatch(e["name"]))
    assert profiled >= 3
    code, out, _ = run_cli("annotate", trace, "--from", done.out, "-o", tmp_path / "o.json")
    assert code == 1, out
    assert f"annotated 0 of {profiled} kernel events" in out
    assert f"NOT ANNOTATED, more than one graph could have run them ({profiled})" in out
    assert "3 graphs could have run it (0/0 inference, 0/1 inference, 0/2 inference)" in out
    assert json.loads((tmp_path / "o.json").read_text())["traceEvents"] == bare


@pytest.mark.compile
def test_summary_per_line_and_module(compile_case, run_cli):
    done = compile_case(*TRAIN)
    (trace,) = (done.out / "profile").glob("*.trace.json")
    code, out, err = run_cli("annotate", trace, "--from", done.out, "--summary", "--format", "json")
    assert code == 0, (out, err)
    doc = json.loads(out)
    jsonschema.Draft202012Validator(schemas.load_schema(TIME_SUMMARY, time_summary.SUMMARY_VERSION)).validate(doc)
    kernel_events = [e for e in _events(done) if e.get("ph") == "X" and _PROFILED.fullmatch(e["name"])]
    assert doc["time_from"] == time_summary.CPU
    assert doc["timed_events"] == doc["attributed"] == len(kernel_events)
    assert doc["total_us"] == pytest.approx(sum(e["dur"] for e in kernel_events))
    assert {r["phase"] for r in doc["lines"]} == {"forward", "backward"}
    for phase in ("forward", "backward"):
        rows = [r for r in doc["lines"] if r["phase"] == phase]
        assert [r["total_us"] for r in rows] == sorted((r["total_us"] for r in rows), reverse=True)
        for row in rows:  # a row's time is its kernels' time, and a share of all of it
            assert row["total_us"] == pytest.approx(sum(k["total_us"] for k in row["kernels"]))
            assert row["share"] == pytest.approx(row["total_us"] / doc["total_us"])
            assert re.fullmatch(r".*examples\.py", row["file"]) and row["code"]
    # each kernel event counts once under a line of its call site: every kernel is under some line
    under_lines = {(k["graph"], k["call_site"]) for r in doc["lines"] for k in r["kernels"]}
    assert len(under_lines) == len({e["name"] for e in kernel_events})
    code, text, _ = run_cli("annotate", trace, "--from", done.out, "--summary")
    assert code == 0 and "forward, heaviest source lines (" in text and "backward, heaviest kernels (" in text
    code, text, _ = run_cli("annotate", trace, "--from", done.out, "--summary", "--all")
    assert code == 0 and "forward, by source line:" in text and "backward, by source line:" in text
    code, table, _ = run_cli("annotate", trace, "--from", done.out, "--summary", "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(table)))
    assert code == 0 and tuple(rows[0]) == time_summary.CSV_COLUMNS
    totals = [r for r in rows if r["table"] == "line" and not r["kernel"]]
    assert len(totals) == len(doc["lines"])


@pytest.mark.compile
def test_summary_options_belong_to_summary(compile_case, run_cli, tmp_path):
    done = compile_case(*TRAIN)
    (trace,) = (done.out / "profile").glob("*.trace.json")
    code, out, err = run_cli("annotate", trace, "--from", done.out, "--format", "json", "-o", tmp_path / "x.json")
    assert code == 2 and "--summary" in err and not (tmp_path / "x.json").exists()


DECODE = '''
import torch


class Decode(torch.nn.Module):
    """A decode step that writes its cache and counts its steps: a second call on the same
    module sees another step (an int Dynamo guards on) and another cache."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)
        self.register_buffer("cache", torch.zeros(4, 8))
        self.step = 0

    def forward(self, x):
        self.cache[self.step] = self.fc(x)[0]
        self.step += 1
        return self.cache.sum(0) + x


def build():
    torch.manual_seed(0)
    return Decode(), (torch.randn(1, 8),)
'''


@pytest.mark.compile
def test_profile_runs_the_compile_on_its_own_inputs_recompiling_nothing(tmp_path):
    model = tmp_path / "decode.py"
    model.write_text(DECODE)
    out = tmp_path / "out"
    # a process of its own: compile sets TORCH_TRACE before torch is imported
    done = FRESH.run("compile", f"{model}:build", "--profile", "--out", out)
    printed = done.stdout
    assert done.returncode == 0, (printed, done.stderr[-3000:])
    assert "profile: annotated" in printed and "PROFILE" not in printed, printed
    events = json.loads(next((out / "profile").glob("*.trace.json")).read_text())["traceEvents"]
    regions = {e["name"] for e in events if e.get("ph") == "X" and e["name"].startswith("Torch-Compiled Region")}
    assert regions == {"Torch-Compiled Region: 0/0"}  # the compile's one graph, nothing recompiled
    graphs = {e["args"]["spyre_provenance_graph"] for e in events if "spyre_provenance_graph" in e.get("args", {})}
    assert graphs and all(g.split(" ")[1] == "0/0" for g in graphs)
    assert len(list(out.glob("graph_*"))) == 1


LABELED = """
import os, sys, torch
import spyre_provenance
from spyre_provenance.compile.examples import load_model

model, inputs = load_model("mlp")
with spyre_provenance.tracking(backend="reference", label="my-mlp"):
    with torch.no_grad():
        torch.compile(model)(*inputs)
"""


@pytest.mark.compile
def test_the_model_is_named_by_its_label_not_the_log_file(run_cli, tmp_path):
    """With ``tracking(label=...)`` and TORCH_TRACE a folder, torch names the log at random;
    lookup and annotate name the model by the label."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "TORCH_TRACE": str(tmp_path / "logs"), "INDUCTOR_PROVENANCE": "1"}
    done = subprocess.run([sys.executable, "-c", LABELED], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    (log,) = (tmp_path / "logs").glob("*.log")
    assert "my-mlp" not in log.name
    code, out, err = run_cli("lookup", "sdsc_fused_linear_relu_0", "--from", tmp_path / "logs", "--format", "json")
    assert code == 0, (out, err)
    assert {m["model"] for a in json.loads(out)["answers"] for m in a["matches"]} == {"my-mlp"}


def test_summary_of_unusable_input_is_one_line_exit_2(run_cli, tmp_path, data_dir):
    trace = tmp_path / "t.json"
    trace.write_text('{"traceEvents": [{"ph": "X", "name": "a", "ts": 1')  # truncated
    code, out, err = run_cli("annotate", trace, "--from", data_dir / "logs" / "seed_mlp.log", "--summary")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and str(trace) in err
    trace.write_text(json.dumps({"traceEvents": []}))
    missing = tmp_path / "nothing_summary.csv"
    code, out, err = run_cli(
        "annotate", trace, "--from", data_dir / "logs" / "seed_mlp.log", "--summary", "--acelyzer", missing
    )
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and str(missing) in err
