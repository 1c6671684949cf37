"""torch's own provenance artifacts pass our validator: the schemas describe upstream as it is.

One real compile of the seed MLP (Linear(128, 256) -> ReLU -> Linear(256, 128), CPU, no grad)
with torch's provenance tracking on (INDUCTOR_PROVENANCE=1) and TORCH_TRACE set, in a
subprocess with caches off so the artifacts come from a fresh compile. Then the log is
validated through the library and through the command line.

And one AOTInductor compile (``aoti_compile_and_package``), whose records torch logs with no
compile id at all: valid, and a warning that tlparse files them under ``-_-_-_-``.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from helpers.tlparse_page import parse_page  # tests/ is on sys.path (rootdir-relative "prepend" import mode)
from spyre_provenance.logs import tlparse_render, tracelog, wrapper_code
from spyre_provenance.logs.graphs import read_log_graphs
from spyre_provenance.model.names import KERNEL_INFORMATION, KERNEL_STACK_TRACES, NODE_MAPPINGS
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


AOTI_SCRIPT = """
import sys
import torch

torch._inductor.config.trace.provenance_tracking_level = 1
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 8))
with torch.no_grad():
    program = torch.export.export(model, (torch.randn(4, 16),))
    torch._inductor.aoti_compile_and_package(
        program,
        package_path=sys.argv[1],
        # the same records, without ~80 s of g++: no build of the package (its sources are
        # enough) and no probe builds of each CPU vector ISA
        inductor_configs={"aot_inductor.package_cpp_only": True, "cpp.vec_isa_ok": False},
    )
"""
NO_ID_WARNING = (
    "no compile id in the envelope (frame_id, frame_compile_id, attempt), as torch logs AOTInductor compiles:"
    " tlparse files it under -_-_-_- with every record that has none, and builds"
    " provenance_tracking_-_-_-_-.html from that folder"
)


@pytest.fixture(scope="module")
def aoti_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The TORCH_TRACE log of one AOTInductor compile (torch's own backend) of a small MLP."""
    work = tmp_path_factory.mktemp("aoti")
    env = dict(
        os.environ,
        TORCH_TRACE=str(work / "trace"),
        TORCHINDUCTOR_CACHE_DIR=str(work / "inductor_cache"),
        TORCHINDUCTOR_FORCE_DISABLE_CACHES="1",
    )
    command = [sys.executable, "-c", AOTI_SCRIPT, str(work / "model.pt2")]
    subprocess.run(command, env=env, check=True, capture_output=True, timeout=600)
    [log] = (work / "trace").glob("dedicated_log_torch_trace_*.log")
    return log


def test_aoti_records_have_no_compile_id_and_are_valid_with_a_warning(aoti_log: Path, run_cli) -> None:
    entries = [e for e in tracelog.read_trace(aoti_log) if isinstance(e, tracelog.TraceEntry)]
    assert [(e.name, e.compile_id, e.problems) for e in entries] == [
        (NODE_MAPPINGS, None, ()),
        (KERNEL_STACK_TRACES, None, ()),
    ]
    mapping = json.loads(entries[0].payload)
    assert mapping["version"] == 2.0 and mapping["cppCodeToPost"]  # a real mapping, not an empty one
    code, out, err = run_cli("validate", aoti_log)
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert len(lines) == 4
    assert re.fullmatch(rf"WARN    v2\.0  {NODE_MAPPINGS}  {re.escape(str(aoti_log))}:\[-/-\] \(line \d+\)", lines[0])
    assert re.fullmatch(rf"  warning: line \d+: {re.escape(NO_ID_WARNING)}", lines[1])
    assert lines[2].startswith(f"WARN    v2    {KERNEL_STACK_TRACES}  {aoti_log}:[-/-] (line ")
    assert lines[3].endswith(NO_ID_WARNING)
    assert run_cli("validate", "--strict", aoti_log)[0] == 1


# torch 2.14 adds `extern_semantic_key` to every kernel_information.json entry (and, for
# extern kernels, their shapes and dtypes): schema v2, told from v1 by that field.
KERNEL_INFORMATION_VERSION = (
    "1" if importlib.metadata.version("torch").startswith(("2.9", "2.10", "2.11", "2.12", "2.13")) else "2"
)


def test_aoti_kernel_information_is_valid(aoti_log: Path, tmp_path: Path, run_cli) -> None:
    """The package's kernel_information.json (torch's create_kernel_information_json) passes
    the kernel_information schema, and names the call sites the log's mapping names."""
    with zipfile.ZipFile(aoti_log.parents[1] / "model.pt2") as package:
        [member] = [n for n in package.namelist() if n.endswith("/kernel_information.json")]
        data = package.read(member)
    for full in (False, True):
        report = schemas.validate_bytes(data, KERNEL_INFORMATION, full=full)
        assert (report.version, report.problems) == (KERNEL_INFORMATION_VERSION, ())
    [mapping] = [json.loads(e.payload) for e in tracelog.read_trace(aoti_log, names={NODE_MAPPINGS})]
    assert set(json.loads(data)) == set(mapping["cppCodeToPost"])
    path = tmp_path / "kernel_information.json"
    path.write_bytes(data)
    version = f"v{KERNEL_INFORMATION_VERSION}".ljust(6)
    assert run_cli("validate", path) == (0, f"OK      {version}{KERNEL_INFORMATION}  {path}\n", "")
    if KERNEL_INFORMATION_VERSION == "2":  # the two addmm are extern kernels: torch records their shapes
        externs = [e for e in json.loads(data).values() if "input_shapes" in e]
        assert externs and all(len(e["input_shapes"]) == len(e["input_dtypes"]) for e in externs)


@pytest.mark.skipif(tlparse_render.tlparse_binary() is None, reason="tlparse is not installed")
def test_tlparse_renders_the_aoti_page_from_the_folder_the_warning_names(aoti_log: Path, tmp_path: Path) -> None:
    out = tmp_path / "tlparse"
    subprocess.run(
        [tlparse_render.tlparse_binary(), str(aoti_log), "-i", "--no-browser", "-o", str(out), "--overwrite"],
        check=True,
        capture_output=True,
        timeout=120,
    )
    [filed] = out.glob(f"*/{NODE_MAPPINGS}_*.json")
    assert filed.parent.name == "-_-_-_-"
    page = parse_page((out / "provenance_tracking_-_-_-_-.html").read_text())
    assert page.links.get("cppCodeToPost")  # the page links the C++ wrapper's calls: not empty


@pytest.mark.skipif(tlparse_render.tlparse_binary() is None, reason="tlparse is not installed")
def test_open_lists_the_aoti_page(aoti_log: Path, tmp_path: Path, run_cli) -> None:
    """Issue 55 point 3: ``open`` lists tlparse's page of an AOTInductor compile (no
    compile id: tlparse's ``-_-_-_-``) as what it is, with its mapping."""
    code, out, err = run_cli("open", aoti_log, "--out", tmp_path / "pages", "--no-browser")
    assert code == 0, err
    assert out.splitlines() == [f"AOTInductor graph  {tmp_path / 'pages' / 'provenance_tracking_-_-_-_-.html'}"]
