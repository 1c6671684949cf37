"""What other torch releases write, read as that release wrote it (issue 28).

``tests/data/torch-2.15.0/`` was written by torch 2.15.0 itself on this CPU
(``tests/scripts/torch_fixtures.py``); these tests run on any torch, since they only read.
Where 2.15.0 writes differently from 2.13.0 (the goldens' torch), the difference is held here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers.where import DATA  # tests/ is on sys.path
from spyre_provenance.logs import tracelog, wrapper_code
from spyre_provenance.model.names import KERNEL_STACK_TRACES, NODE_MAPPINGS

RELEASE = DATA / "torch-2.15.0"
LOGS = sorted(RELEASE.glob("*.log"))


def mappings(log: Path) -> dict[str, dict]:
    """compile id -> that graph's node mappings, as the log carries them."""
    return {
        compile_id: json.loads(text) for compile_id, _, text in tracelog.artifact_payloads(log, names={NODE_MAPPINGS})
    }


def torch_version(log: Path) -> str:
    entries = list(tracelog.read_trace(log, names={"torch_version"}))
    return {e.name: e for e in entries}["torch_version"].text


def test_the_fixture_set_is_complete():
    assert {p.name for p in RELEASE.iterdir()} >= {
        "inference_level1.log",
        "inference_level2.log",
        "training_level1.log",
        "cache_hit.log",
        "aoti.log",
        "kernel_information.json",
        "timeline.log",
        "profiler_trace.json",
    }


@pytest.mark.parametrize("log", LOGS, ids=[p.name for p in LOGS])
def test_each_log_is_valid_and_was_written_by_2_15(log, run_cli):
    code, out, err = run_cli("validate", log)
    assert code == 0, out + err
    assert "2.15.0" in torch_version(log)
    assert mappings(log), f"{log.name} carries no node mappings"


def test_kernel_information_is_valid(run_cli):
    code, out, err = run_cli("validate", RELEASE / "kernel_information.json")
    assert code == 0, out + err


def test_level_2_writes_what_level_1_writes_on_the_cpu():
    # level 2 adds device-side detail that CPU kernels never have: the artifacts are the same
    one, two = mappings(RELEASE / "inference_level1.log"), mappings(RELEASE / "inference_level2.log")
    assert one == two and one


def test_training_maps_the_forward_and_leaves_the_backward_empty():
    # upstream's backward mapping is empty (PyTorch issue #130147), still so in 2.15.0; the
    # project's beyond-upstream mapping is what fills it
    found = [
        json.loads(text)
        for _, _, text in tracelog.artifact_payloads(RELEASE / "training_level1.log", names={NODE_MAPPINGS})
    ]
    assert len(found) == 2 and found[0]["cppCodeToPost"]
    assert found[1] == {"version": 2.0}


def test_a_cache_hit_replays_the_mapping():
    fresh, hit = mappings(RELEASE / "inference_level1.log"), mappings(RELEASE / "cache_hit.log")
    (hit_mapping,), (fresh_mapping,) = hit.values(), fresh.values()
    assert hit_mapping["cppCodeToPost"] == fresh_mapping["cppCodeToPost"]
    stacks = list(tracelog.artifact_payloads(RELEASE / "cache_hit.log", names={KERNEL_STACK_TRACES}))
    assert stacks


def test_timeline_profile_wrappers_keep_every_call_site():
    # with trace.provenance_tracking_to_timeline, 2.15 calls extern kernels through
    # `extern_kernels_<name>_<n>` wrappers; every mapped kernel still has its call site
    log = RELEASE / "timeline.log"
    code = next(e.text for e in tracelog.read_trace(log, names={"inductor_output_code"}))
    wrapped = wrapper_code.profile_wrappers(code)
    assert wrapped and all(name.startswith("extern_kernels.") for name in wrapped.values())
    keys = {k for m in mappings(log).values() for k in m["cppCodeToPost"]}
    assert {site.key for site in wrapper_code.call_sites(code)} == keys


def test_the_cpu_profiler_trace_names_kernels_and_carries_no_upstream_stack():
    # torch's own trace annotation (torch/_inductor/profiler.py) adds args["stack"] only to
    # device kernel events it reaches through flow events: on the CPU no event gets one, so the
    # fixture holds the plain trace that `annotate` starts from
    events = json.loads((RELEASE / "profiler_trace.json").read_text())["traceEvents"]
    kernels = [e["name"] for e in events if e.get("name", "").startswith("graph_")]
    timeline = {k.rsplit(":", 1)[0] for m in mappings(RELEASE / "timeline.log").values() for k in m["cppCodeToPost"]}
    assert kernels and all(name.split("_", 2)[2] in timeline for name in kernels)
    assert not any("stack" in e.get("args", {}) for e in events)
