"""torch's own provenance artifacts pass our validator: the schemas describe upstream as it is.

One real compile of the seed MLP (Linear(128, 256) -> ReLU -> Linear(256, 128), CPU, no grad)
with torch's provenance tracking on (INDUCTOR_PROVENANCE=1) and TORCH_TRACE set, in a
subprocess with caches off so the artifacts come from a fresh compile. Then the log is
validated through the library and through the command line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from spyre_provenance.logs import tracelog, wrapper_code
from spyre_provenance.logs.graphs import read_log_graphs
from spyre_provenance.model.names import KERNEL_STACK_TRACES, NODE_MAPPINGS
from spyre_provenance.validate import schemas

pytestmark = pytest.mark.compile

SCRIPT = """
import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(128, 256), torch.nn.ReLU(), torch.nn.Linear(256, 128))
with torch.no_grad():
    torch.compile(model)(torch.randn(8, 128))
"""


@pytest.fixture(scope="session")
def upstream_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The TORCH_TRACE log of one stock-Inductor compile of the seed MLP."""
    work = tmp_path_factory.mktemp("upstream")
    env = dict(
        os.environ,
        INDUCTOR_PROVENANCE="1",
        TORCH_TRACE=str(work / "trace"),
        TORCHINDUCTOR_CACHE_DIR=str(work / "inductor_cache"),
        TORCHINDUCTOR_FORCE_DISABLE_CACHES="1",
    )
    subprocess.run([sys.executable, "-c", SCRIPT], env=env, check=True, capture_output=True, timeout=600)
    [log] = (work / "trace").glob("dedicated_log_torch_trace_*.log")
    return log


def test_library_accepts_upstream_artifacts(upstream_log: Path) -> None:
    entries = list(tracelog.read_trace(upstream_log))
    assert all(isinstance(e, tracelog.TraceEntry) for e in entries), entries  # no damage
    assert [e.name for e in entries] == [NODE_MAPPINGS, KERNEL_STACK_TRACES]
    for entry in entries:
        assert entry.compile_id == "[0/0]" and entry.problems == ()
        for full in (False, True):
            report = schemas.validate_bytes(entry.payload, entry.name, full=full)
            assert report.ok, report
            assert report.version == {NODE_MAPPINGS: "2.0", KERNEL_STACK_TRACES: "2"}[entry.name]
    mapping = json.loads(entries[0].payload)
    # torch's own mapping names exactly the call sites its wrapper code announces
    (graph,) = read_log_graphs(upstream_log)
    announced = wrapper_code.handle_comments(graph.output_code)
    assert announced and list(mapping["cppCodeToPost"]) == announced
    assert all(nodes for nodes in mapping["cppCodeToPost"].values())


def test_command_line_accepts_upstream_artifacts(upstream_log: Path, run_cli) -> None:
    code, out, err = run_cli("validate", upstream_log.parent)
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith(f"OK      v2.0  {NODE_MAPPINGS}  {upstream_log}:[0/0] (line ")
    assert lines[1].startswith(f"OK      v2    {KERNEL_STACK_TRACES}  {upstream_log}:[0/0] (line ")
