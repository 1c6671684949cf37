"""``annotate --summary`` on a real model fits a screen (issue 56 point 3): a Hugging Face
Granite (Llama's layout) built from a tiny config with random weights (never a download), compiled under
tracking on the reference backend and profiled, its kernels fused from many lines. The
default text stays within about 60 lines, names the heaviest kernel once with the lines
fused into it, and says what it left out; ``--all`` and the JSON keep every row."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # random weights from a config: nothing to fetch

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import torch._inductor.config as inductor_config  # noqa: E402

import spyre_provenance  # noqa: E402
from spyre_provenance.runtime import index as kernel_index  # noqa: E402
from spyre_provenance.runtime import time_screen, time_summary  # noqa: E402
from zoo import hf_models  # noqa: E402

SCREEN = 60


class Profiled:
    def __init__(self, root: Path) -> None:
        self.out, self.trace = root / "out", root / "trace.json"

    def summary(self) -> time_summary.TimeSummary:
        return time_summary.summarize(self.trace, kernel_index.build([self.out]))


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    """A two-layer Granite (Llama's layout, the zoo's), compiled whole, called twice under
    the profiler."""
    done = Profiled(tmp_path_factory.mktemp("summary-screen"))
    model, (ids,) = hf_models.granite()
    profiled = inductor_config.patch({"cpp.enable_kernel_profile": True})  # each kernel a profiler event
    with profiled, torch.no_grad(), spyre_provenance.tracking("reference", out_dir=str(done.out)):
        compiled = torch.compile(model)
        compiled(ids)  # compiles here
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], with_stack=True) as prof:
            compiled(ids)
            compiled(ids)
    prof.export_chrome_trace(str(done.trace))
    return done


@pytest.mark.compile
def test_the_default_summary_of_a_real_model_fits_a_screen(llama):
    summary = llama.summary()
    assert summary.time_from == time_summary.CPU and summary.attributed == summary.timed_events > 0
    everything = time_summary.render_text(summary)
    screen = time_screen.render(summary)
    kernels = time_screen.kernel_entries(summary)
    # the model is one a screen could not hold listed per line: many lines, kernels fused from several
    assert len(summary.lines) > 20 and any(len(k.lines) > 3 for k in kernels), everything
    assert len(everything.splitlines()) > SCREEN
    assert len(screen.splitlines()) <= SCREEN, screen
    heaviest = kernels[0]
    (row,) = [line for line in screen.splitlines() if f"  {heaviest.label}  ({heaviest.graph})" in line]
    assert f"{len(heaviest.lines)} line" in row
    assert screen.splitlines()[-1].startswith("not shown: ") and "--all lists every row" in screen
    # each line is in one row of the heaviest lines, and every line is in --all
    grouped = [(r.phase, r.file, r.line, r.code) for e in time_screen.line_entries(summary) for r in e.rows]
    assert sorted(grouped) == sorted((r.phase, r.file, r.line, r.code) for r in summary.lines)
    for row in summary.lines:
        assert f"{row.file}:{row.line}  {row.code}" in everything


@pytest.mark.compile
def test_the_json_of_a_real_model_keeps_every_row(llama):
    summary = llama.summary()
    doc = json.loads(time_summary.render_json(summary))
    assert len(doc["lines"]) == len(summary.lines) and len(doc["modules"]) == len(summary.modules)
    assert [len(r["kernels"]) for r in doc["lines"]] == [len(r.kernels) for r in summary.lines]
    # every kernel the screen ranks is in the JSON, with the time the screen gives it
    listed = {(k["graph"], k["call_site"]): k["total_us"] for r in doc["lines"] for k in r["kernels"]}
    for kernel in time_screen.kernel_entries(summary):
        if not kernel.per_op:
            assert listed[(kernel.graph, kernel.label)] == pytest.approx(kernel.total_us)
