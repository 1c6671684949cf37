"""Where no frame is the user's, the module path names the kernel (issue 56 points 7 and 8).

Two models built of torch's own modules, compiled for real: a DDP-wrapped ``nn.Sequential``
(in a gloo group of one process, its own interpreter: the group outlives the compile) and an
``nn.TransformerEncoder``. Their stack traces hold torch's frames only (DDP's ``forward``) or
none; ``lookup``, the time summary and the viewer's document name their kernels by module
path and class, marked as module evidence, and never give a module a file or a line.
The DDP model is compiled twice over one Inductor cache, cold then warm: both whole (exit 0),
the warm run recording what the cold one did.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import NamedTuple

import pytest

from helpers import warm_start  # tests/ is on sys.path
from helpers.where import ZOO
from spyre_provenance.logs.graphs import read_log_graphs
from spyre_provenance.model.frames import frames, is_user_frame
from spyre_provenance.model.modules import MODULE_FILE
from spyre_provenance.runtime import index as kernel_index
from spyre_provenance.runtime import time_screen, time_summary
from spyre_provenance.viewer import data, timing

pytestmark = pytest.mark.compile

MODELS = ZOO / "torch_modules.py"


class ColdAndWarm(NamedTuple):
    cold: Path
    warm: Path
    printed: dict[str, str]  # "cold", "warm" -> what each compile printed


@pytest.fixture(scope="module")
def ddp_runs(fresh_process, tmp_path_factory: pytest.TempPathFactory) -> ColdAndWarm:
    """The DDP model compiled cold, then warm from the Inductor cache (FX-graph and
    AOTAutograd caches on) the cold compile wrote, each in its own process."""
    root = tmp_path_factory.mktemp("ddp")
    env = {"TORCHINDUCTOR_CACHE_DIR": str(root / "inductor-cache"), **warm_start.CACHES_ON}
    printed = {}
    for run in ("cold", "warm"):
        done = fresh_process.run(
            "compile", f"{MODELS}:ddp_sequential", "--out", root / run, "--no-tlparse", "--no-viewer", env=env
        )
        # both whole: the eager reference compiles nothing (the model's own torch.compile runs
        # eagerly there), so no graph made outside tracking is on the log, or in the cache
        assert done.returncode == 0, done.stdout + done.stderr[-2000:]
        printed[run] = done.stdout
    return ColdAndWarm(root / "cold", root / "warm", printed)


@pytest.fixture(scope="module")
def ddp(ddp_runs: ColdAndWarm) -> Path:
    assert "graph 0/1 inference: 1 kernel call site(s)" in ddp_runs.printed["cold"]
    return ddp_runs.cold


@pytest.fixture(scope="module")
def encoder(compile_case) -> Path:
    done = compile_case(f"{MODELS}:transformer_encoder", "--no-tlparse", "--profile")
    assert done.returncode == 0, done.stderr[-2000:]
    return done.out


def _lookup(run_cli, out: Path) -> list:
    stack_traces = {}
    for path in out.glob("graph_*/inductor_provenance_tracking_kernel_stack_traces.json"):
        stack_traces.update(json.loads(path.read_text()))
    code, printed, err = run_cli("lookup", *stack_traces, "--from", out, "--format", "json")
    assert code == 0, err
    sites = [s for a in json.loads(printed)["answers"] for m in a["matches"] for s in m["call_sites"]]
    return [(s, stack_traces[s["key"]]) for s in sites]


def test_a_ddp_wrapped_sequential_is_named_by_module_path(run_cli, ddp: Path) -> None:
    ((site, traces),) = _lookup(run_cli, ddp)
    # the case of the issue: one frame, DDP's forward, none the user's
    assert traces and not any(is_user_frame(f.file) for t in traces for f in frames(t))
    fused = [m["name"] for m in site["modules"] if m["role"] == "fused"]
    assert fused == ["0: Linear", "1: GELU", "2: Linear"]
    assert [m["name"] for m in site["modules"] if m["role"] == "enclosing"] == ["Sequential"]
    assert {m["module_class"] for m in site["modules"]} >= {"torch.nn.modules.linear.Linear"}
    code, text, _ = run_cli("lookup", site["key"], "--from", ddp)
    assert code == 0 and "module (no frame is the user's" in text and "fused: 0: Linear" in text
    (graph,) = data.build(ddp)["graphs"]
    assert [m["name"] for m in graph["modules"]] == ["0: Linear", "1: GELU", "2: Linear", "Sequential"]
    assert [graph["modules"][i]["name"] for i in graph["calls"][0]["modules"]] == fused


def test_a_transformer_encoder_is_named_by_module_path(run_cli, encoder: Path) -> None:
    sites = _lookup(run_cli, encoder)
    named = {m["name"] for s, _ in sites for m in s["modules"] if m["role"] == "fused"}
    for layer in (0, 1):
        assert f"layers.{layer}.self_attn: MultiheadAttention" in named
        assert f"layers.{layer}.linear1: Linear" in named
    # every call site is named by module: none of the encoder's frames is the user's
    assert all(s["modules"] for s, _ in sites)


def test_the_time_summary_and_the_viewer_count_time_under_modules(encoder: Path) -> None:
    (trace,) = (encoder / "profile").glob("*.trace.json")
    summary = time_summary.summarize(trace, kernel_index.build([encoder]))
    assert summary.attributed == summary.timed_events > 0
    assert summary.lines and all(r.placed_by == time_summary.BY_MODULE for r in summary.lines + summary.modules)
    # a module is never a source line: no file, no line number
    assert all(r.file == MODULE_FILE and r.line == 0 for r in summary.lines + summary.modules)
    top = {r.code: r.total_us for r in summary.modules}
    assert top["TransformerEncoder"] == pytest.approx(summary.total_us - summary.unattributed_us)
    assert "module TransformerEncoder  [module path" in time_summary.render_text(summary)
    screen = time_screen.render(summary)  # the default text: modules said as modules, never as lines
    assert "modules, same kernels: module layers.0." in screen and " lines, same kernels" not in screen
    (graph,) = data.build(encoder, timing.read(trace))["graphs"]
    at = {m["name"]: str(i) for i, m in enumerate(graph["modules"])}
    assert graph["module_time_us"][at["TransformerEncoder"]] == pytest.approx(top["TransformerEncoder"])
    # the summary's numbers, by its own rule: a module's time on the page is its row as a line
    # (the kernels it ran) and its row as a module call (the kernels it encloses), summed
    inclusive: dict[str, float] = {}
    for row in summary.lines + summary.modules:
        inclusive[row.code] = inclusive.get(row.code, 0.0) + row.total_us
    assert {
        m["name"]: graph["module_time_us"][i] for m, i in ((m, at[m["name"]]) for m in graph["modules"])
    } == pytest.approx(inclusive)


def test_a_warm_ddp_compile_records_what_its_cold_one_did(ddp_runs: ColdAndWarm) -> None:
    warm_start.recorded_as_cold(ddp_runs.cold, ddp_runs.warm)
    for run, printed in ddp_runs.printed.items():
        graphs = [line for line in printed.splitlines() if line.startswith("  graph ")]
        # one graph, the tracked one: the log holds no graph the hook did not record
        assert len(graphs) == 1 and "recorded by no hook" not in printed and "FOUND WANTING" not in printed, run
    assert "(cached: from Inductor's cache)" in ddp_runs.printed["warm"]
    (cold_log,), (warm_log,) = ((out / "trace").glob("*.log") for out in (ddp_runs.cold, ddp_runs.warm))
    assert [g.compile_id for g in read_log_graphs(cold_log)] == [g.compile_id for g in read_log_graphs(warm_log)]
