"""Write tests/data/torch-<version>/: what the installed torch itself logs and packages.

    .venv-torch-2.15.0/bin/python tests/scripts/torch_fixtures.py tests/data/torch-2.15.0

Stock Inductor, CPU, the seed MLP (Linear(128, 256) -> ReLU -> Linear(256, 128)), each
scenario in a fresh process (so handle numbers and graph ids start from scratch):

* ``inference_level1.log``, ``inference_level2.log``: TORCH_TRACE of a no-grad compile with
  ``INDUCTOR_PROVENANCE=1`` / ``2``, caches off;
* ``training_level1.log``: forward and backward (``loss.backward()``), level 1, caches off;
* ``cache_hit.log``: the second of two processes sharing one Inductor cache dir (level 1):
  the FX-graph cache serves the graph and replays its mapping;
* ``aoti.log`` and ``kernel_information.json``: ``aoti_compile_and_package`` (sources only,
  as tests/compile/test_upstream_artifacts.py does), the log and the package's kernel information;
* ``profiler_trace.json`` and ``timeline.log``: a ``torch.profiler`` Chrome trace of the
  compiled MLP run with ``cpp.enable_kernel_profile`` (each C++ kernel an event) and torch's
  own timeline provenance switched on where the release has it (see PROFILER below), and
  that compile's log.

The logs keep only the records the project reads (provenance artifacts, graphs, output
code, torch_version); paths are rewritten (site-packages -> /venv/site-packages, the work
folder -> /work, the Inductor cache -> /tmp/torchinductor), glog timestamps and thread ids
zeroed, the pre-grad graph's id zeroed, and each payload's has_payload MD5 recomputed, so regenerating on the same torch
changes only what torch itself changes.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import zipfile
from pathlib import Path

MODEL = """
import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(128, 256), torch.nn.ReLU(), torch.nn.Linear(256, 128))
x = torch.randn(8, 128)
"""
INFERENCE = (
    MODEL
    + """
with torch.no_grad():
    torch.compile(model)(x)
"""
)
TRAINING = (
    MODEL
    + """
torch.compile(model)(x).sum().backward()
"""
)
AOTI = (
    MODEL
    + """
import sys

torch._inductor.config.trace.provenance_tracking_level = 1
with torch.no_grad():
    program = torch.export.export(model, (x,))
    torch._inductor.aoti_compile_and_package(
        program, package_path=sys.argv[1],
        inductor_configs={"aot_inductor.package_cpp_only": True, "cpp.vec_isa_ok": False},
    )
"""
)
# torch.profiler's CPU events of the compiled model's C++ kernels need enable_kernel_profile.
# torch's own provenance on the timeline (trace.provenance_tracking_to_timeline, 2.14+) is
# switched on where the config has it, and the trace exported the way torch adds it:
# torch._inductor.profiler.inductor_trace_handler. That handler gives args["stack"] only to
# events its flow/External-id links reach from a compiled region (GPU kernels, cat "kernel");
# see tests/data/torch-2.15.0/README.md for what it does on this CPU.
PROFILER = (
    MODEL
    + """
import sys
from pathlib import Path

torch._inductor.config.cpp.enable_kernel_profile = True
torch._inductor.config.trace.provenance_tracking_level = 1
handler = None
if hasattr(torch._inductor.config.trace, "provenance_tracking_to_timeline"):
    from torch._inductor.profiler import inductor_trace_handler

    torch._inductor.config.trace.provenance_tracking_to_timeline = True
    handler = inductor_trace_handler(sys.argv[1], worker_name="trace")
compiled = torch.compile(model)
with torch.no_grad():
    compiled(x)  # compile outside the profiled region
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], on_trace_ready=handler) as prof:
        compiled(x)
if handler is None:
    prof.export_chrome_trace(str(Path(sys.argv[1]) / "trace.0.pt.trace.json"))
"""
)

#: the records kept in a fixture log (by record name): what spyre-provenance and tlparse read
KEEP = {
    "torch_version",
    "before_pre_grad_graph",
    "inductor_pre_grad_graph",
    "inductor_post_grad_graph",
    "after_post_grad_graph",
    "inductor_output_code",
    "inductor_provenance_tracking_node_mappings",
    "inductor_provenance_tracking_kernel_stack_traces",
}
_METADATA = {"rank", "frame_id", "frame_compile_id", "attempt", "compiled_autograd_id", "has_payload"}
_GLOG = re.compile(r"^([VIWEC])\d{4} \d\d:\d\d:\d\d\.\d{6} +\d+ ")


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="torch_fixtures_") as tmp:
        work = Path(tmp)
        rewrite = Rewriter(work)
        for name, script, level in (
            ("inference_level1", INFERENCE, "1"),
            ("inference_level2", INFERENCE, "2"),
            ("training_level1", TRAINING, "1"),
        ):
            log = run(work / name, script, {"INDUCTOR_PROVENANCE": level, "TORCHINDUCTOR_FORCE_DISABLE_CACHES": "1"})
            write(out / f"{name}.log", rewrite.log(log))
        # two processes, one cache: the second one's log is the cache hit
        cache = work / "shared_cache"
        run(work / "cache_miss", INFERENCE, {"INDUCTOR_PROVENANCE": "1"}, cache=cache)
        log = run(work / "cache_hit", INFERENCE, {"INDUCTOR_PROVENANCE": "1"}, cache=cache)
        write(out / "cache_hit.log", rewrite.log(log))
        package = work / "aoti" / "model.pt2"
        log = run(work / "aoti", AOTI, {"TORCHINDUCTOR_FORCE_DISABLE_CACHES": "1"}, args=[str(package)])
        write(out / "aoti.log", rewrite.log(log))
        with zipfile.ZipFile(package) as zf:
            [member] = [n for n in zf.namelist() if n.endswith("/kernel_information.json")]
            write(out / "kernel_information.json", rewrite.text(zf.read(member).decode()))
        # the profiled run's log shows its wrapper: with timeline provenance on, extern
        # calls go through extern_kernels_<name>_<suffix> wrappers
        traces = work / "profiler" / "traces"
        log = run(work / "profiler", PROFILER, {"TORCHINDUCTOR_FORCE_DISABLE_CACHES": "1"}, args=[str(traces)])
        write(out / "timeline.log", rewrite.log(log))
        [trace] = traces.glob("trace.*.pt.trace.json")
        write(out / "profiler_trace.json", rewrite.text(trim_profile(trace.read_text())))


def run(work: Path, script: str, env: dict[str, str], cache: Path | None = None, args: list[str] = ()) -> Path:
    """Run one scenario in a fresh interpreter; its TORCH_TRACE log."""
    work.mkdir(parents=True, exist_ok=True)
    (work / "model.py").write_text(script)
    full = dict(
        os.environ, TORCH_TRACE=str(work / "trace"), TORCHINDUCTOR_CACHE_DIR=str(cache or work / "cache"), **env
    )
    full.pop("TORCH_COMPILE_DEBUG", None)
    subprocess.run([sys.executable, str(work / "model.py"), *args], env=full, check=True, cwd=work, timeout=1200)
    logs = sorted((work / "trace").glob("dedicated_log_torch_trace_*.log"))
    return logs[-1] if logs else work / "missing.log"


class Rewriter:
    """The path and clock rewrites that make a fixture shareable and regenerable."""

    def __init__(self, work: Path) -> None:
        purelib = sysconfig.get_paths()["purelib"]
        self.paths = [(purelib, "/venv/site-packages"), (str(work), "/work")]

    def text(self, text: str) -> str:
        for old, new in self.paths:
            text = text.replace(old, new)
        # Inductor's per-scenario cache folders (/work/<scenario>/cache, /work/shared_cache)
        # and the random folder it makes inside
        text = re.sub(r"/work/(?:\w+/cache|shared_cache)(?:/tmp\w+)?(?=/)", "/tmp/torchinductor", text)
        # the pre-grad graph's id() (a memory address)
        return re.sub(r"# graph id: \d+", "# graph id: 0", text)

    def log(self, path: Path) -> str:
        """The kept records of a TORCH_TRACE log, rewritten, each MD5 recomputed."""
        out: list[str] = []
        for envelope_line, payload in records(path.read_text()):
            head, _, body = envelope_line.partition("] ")
            envelope = json.loads(body)
            name = (
                envelope["artifact"]["name"]
                if isinstance(envelope.get("artifact"), dict)
                else next((k for k in envelope if k not in _METADATA), None)
            )
            if name not in KEEP:
                continue
            payload = [self.text(line) for line in payload]
            if "has_payload" in envelope:
                text = "\n".join(line[1:] for line in payload)
                envelope["has_payload"] = hashlib.md5(text.encode(), usedforsecurity=False).hexdigest()
            envelope = json.loads(self.text(json.dumps(envelope)))  # inductor_output_code's file name
            out.append(_GLOG.sub(r"\g<1>0101 00:00:00.000000 0 ", head) + "] " + json.dumps(envelope))
            out.extend(payload)
        return "\n".join(out) + "\n"


def records(text: str):
    """(envelope line, its TAB-prefixed payload lines) per record."""
    current: tuple[str, list[str]] | None = None
    for line in text.splitlines():
        if line.startswith("\t"):
            assert current is not None, line
            current[1].append(line)
            continue
        if current is not None:
            yield current
        current = (line, [])
    if current is not None:
        yield current


def trim_profile(text: str) -> str:
    """The trace's events of the compiled call only (the Inductor kernels, the graph's own
    frame, the extern calls), its process/thread metadata, clock and ids kept as recorded."""
    trace = json.loads(text)
    keep = []
    for event in trace["traceEvents"]:
        if event.get("ph") == "M" or event.get("cat") in ("cpu_op", "kernel", "user_annotation", "python_function"):
            keep.append(event)
    trace["traceEvents"] = keep
    for key in ("deviceProperties", "distributedInfo", "baseTimeNanoseconds"):
        trace.pop(key, None)
    return json.dumps(trace, indent=1, sort_keys=True) + "\n"


def write(path: Path, text: str) -> None:
    path.write_text(text)
    print(f"{path}: {len(text)} bytes")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
    shutil.rmtree(Path(sys.argv[1]) / "__pycache__", ignore_errors=True)
