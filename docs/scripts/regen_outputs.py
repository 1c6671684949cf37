"""Run every command the documentation shows, for real, and write what it printed.

    python docs/scripts/regen_outputs.py            # rewrite docs/outputs/*.txt (make docs-outputs)
    python docs/scripts/regen_outputs.py --into DIR # write them into DIR instead (the test does)

Each entry of ``COMMANDS`` is one shell line run in a scratch folder that holds a link to
this checkout's ``golden/``, a copy of one hand-made bad artifact and a copy of
``your_script.py`` (the user's program ``run`` tracks), so every path a command prints is
relative (``out/demo/...``) and the same on any machine; the absolute ones (``run``'s screen,
the script's source lines) show the scratch folder as ``/home/you/project``. Its output file
``docs/outputs/<name>.txt`` holds the command line after ``$ ``, then stdout and stderr as
printed, then ``$ echo $?`` and the status when it is not 0. The pages include these files
(``--8<-- "outputs/<name>.txt"``); nothing in them is typed by hand.

``tests/compile/test_docs_outputs.py`` runs this script into a temporary folder and compares with
the committed files after ``normalize`` (the volatile parts: the float error against
eager, record line numbers in torch's log, the process id in a run's folder names).
Commands run in order: later ones read what earlier ones wrote.

The outputs are made with torch 2.13.0 (the goldens' torch): on another torch the test
skips, as the golden byte comparisons do.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUTPUTS = ROOT / "docs" / "outputs"
#: the torch the committed outputs were made with
TORCH = "2.13.0"
#: where the outputs show this checkout: lookup prints source files as the artifacts hold
#: them (absolute), and a reader's checkout is somewhere of its own
DISPLAY_ROOT = "/home/you/spyre-provenance"
#: where the outputs show the scratch folder, the user's own project that holds your_script.py
DISPLAY_WORK = "/home/you/project"
#: what torch's profiler (kineto) prints to stderr, stamped with the time and process id
PROFILER_NOISE = re.compile(r"^(?:USDT|STAGE):\d{4}-\d\d-\d\d .*\n", re.MULTILINE)


@dataclass(frozen=True)
class Command:
    name: str  # docs/outputs/<name>.txt
    line: str  # what a user types; run with `spyre-provenance` from this interpreter's venv
    compiles: bool = False  # runs a torch.compile (the test marks it `compile`)


# One entry per documented command; the pages include docs/outputs/<name>.txt. Adding a
# command to the docs is one line here, then `make docs-outputs` and a page that includes it.
COMMANDS: list[Command] = [
    Command("help", "spyre-provenance --help"),
    Command("help-compile", "spyre-provenance compile --help"),
    Command("help-validate", "spyre-provenance validate --help"),
    Command("help-diff", "spyre-provenance diff --help"),
    Command("help-golden", "spyre-provenance golden --help"),
    Command("help-open", "spyre-provenance open --help"),
    Command("help-audit", "spyre-provenance audit --help"),
    # what `make demo` runs; the suite's session compile `compile_case("mlp")` is the same
    Command("compile", "spyre-provenance compile mlp --out out/demo", compiles=True),
    Command("validate", "spyre-provenance validate out/demo/graph_mlp_00_0-0_inference out/demo/trace"),
    Command("validate-invalid", "spyre-provenance validate bad/inductor_provenance_tracking_node_mappings.json"),
    Command("diff-same", "spyre-provenance diff golden/mlp out/demo"),
    Command("diff", "spyre-provenance diff golden/mlp golden/mlp_inductor"),
    Command("golden-check", "spyre-provenance golden check mlp", compiles=True),
    Command("compile-train", "spyre-provenance compile mlp --train --out out/train", compiles=True),
    Command("open", "spyre-provenance open out/train --no-browser"),
    # two compiles side by side per source line (docs/runtime.md): inference against training
    Command("compare", "spyre-provenance compare out/demo out/train"),
    Command("help-compare", "spyre-provenance compare --help"),
    Command("audit", "spyre-provenance audit mlp --backend reference --dtype float16 --out out/audit", compiles=True),
    # run time: from a kernel name met at run time to the source (docs/runtime.md)
    Command("lookup", "spyre-provenance lookup sdsc_fused_linear_relu_0_il7ixi06 --from out/demo"),
    Command("lookup-key", "spyre-provenance lookup sdsc_fused_linear_mm_sum_t_threshold_backward_0:1 --from out/train"),
    Command("lookup-unknown", "spyre-provenance lookup sdsc_fused_linear_gelu_0 --from out/demo"),
    # torch-spyre's device event for a kernel: its name holds the kernel's provenance key,
    # which hashes the checkout's paths, so the line is filled in from the artifact ({event:...})
    Command(
        "lookup-event",
        "spyre-provenance lookup {event:out/demo/graph_mlp_00_0-0_inference:sdsc_fused_linear_relu_0:1}#3 --from out/demo",
    ),
    Command("compile-profile", "spyre-provenance compile mlp --train --profile --out out/profiled", compiles=True),
    Command(
        "annotate",
        "spyre-provenance annotate out/profiled/profile/mlp.trace.json --from out/profiled -o annotated.json",
    ),
    Command(
        "annotate-summary",
        "spyre-provenance annotate out/profiled/profile/mlp.trace.json --from out/profiled --summary",
    ),
    Command("help-lookup", "spyre-provenance lookup --help"),
    Command("help-annotate", "spyre-provenance annotate --help"),
    # the viewer's page (docs/viewer.md)
    Command("view", "spyre-provenance view out/profiled --trace out/profiled/profile/mlp.trace.json -o view.html"),
    Command("view-invalid", "spyre-provenance view bad"),
    Command("help-view", "spyre-provenance view --help"),
    Command("help-run", "spyre-provenance run --help"),
    # the front door (README, docs/any-program.md): a user's unmodified program, then what it wrote
    Command("run", "spyre-provenance run -- python your_script.py", compiles=True),
    Command("open-run", "spyre-provenance open out/run --no-browser"),
    Command("lookup-run", "spyre-provenance lookup cpp_fused_relu_0 --from out/run"),
    # the same program on the Spyre-modelled reference backend, set beside stock Inductor's
    Command(
        "run-reference",
        "spyre-provenance run --out out/ref --backend reference -- python your_script.py",
        compiles=True,
    ),
    Command("compare-run", "spyre-provenance compare out/run out/ref"),
]

#: what ``bad/`` holds: a mapping whose inverse maps disagree (from the hostile-input corpus)
BAD_ARTIFACT = ROOT / "tests" / "hostile" / "invalid" / "mapping-inverse-maps-disagree"
#: the user's program ``run`` tracks: a small model and one torch.compile, nothing of ours in it
USER_SCRIPT = Path(__file__).resolve().parent / "your_script.py"


def normalize(text: str) -> str:
    """What may differ between two runs on the same toolchain, made equal."""
    text = re.sub(r"max abs error [0-9.eE+-]+", "max abs error <E>", text)
    # where a record sits in torch's log moves with what torch logs before it
    text = re.sub(r"\(line \d+\)", "(line <N>)", text)
    # lookup prints source files as the artifacts hold them (absolute, in this checkout),
    # and OpSpec handle ids are content hashes of them
    text = text.replace(str(ROOT), "<checkout>").replace(DISPLAY_ROOT, "<checkout>")
    # the viewer's page holds the source files' paths, so its size moves with the checkout's
    text = re.sub(r"\([0-9.]+ MB\)", "(<SIZE> MB)", text)
    text = re.sub(r"handle \d+", "handle <ID>", text)
    # a tracked process's folder is named after its process id (your-script_pid14666)
    text = re.sub(r"_pid\d+", "_pid<PID>", text)
    # the reference backend names a kernel's bundle folder <uuid8>_<kernel>_<suffix> from a
    # hash of its bundles' bytes, which hold those paths and ids too
    text = re.sub(r"\b[0-9a-f]{8}_(sdsc_[0-9A-Za-z_]+)_[a-z0-9_]{8}(?=[/,\s]|$)", r"<uuid8>_\1_<suffix>", text)
    # torch-spyre's provenance key hashes those handle ids
    text = re.sub(r"(spyre_kernel_v1_\w+_|provenance key: )[a-z2-7]{16}", r"\1<KEY>", text)
    if "--summary" in text.split("\n", 1)[0]:  # timings: the figures and the order of equal rows vary
        # (the columns are right-aligned, so the padding before a figure moves with it)
        text = re.sub(r" *[0-9]+\.[0-9]+(?: us| ms|%)", " <T>", text)
        text = "\n".join(sorted(text.splitlines()))
    return text


_PLACEHOLDER = re.compile(r"\{event:(?P<graph>[^:{}]+):(?P<site>[^{}]+:[0-9]+)\}")


def expand(line: str, work: Path) -> str:
    """``{event:GRAPH_FOLDER:CALL_SITE}``: the device event name torch-spyre gives that call
    site's kernel (``model.kernel_keys.event_name``), from the OpSpec artifact there."""
    import json

    from spyre_provenance.model.kernel_keys import event_name

    def fill(match: re.Match[str]) -> str:
        doc = json.loads((work / match["graph"] / "spyre_opspec_debug_handles.json").read_text())
        site = match["site"]
        todo = [s["debug_handle"] for s in doc["kernels"][site] if s["debug_handle"]]
        seen: set[str] = set()
        while todo:
            handle = todo.pop()
            if handle not in seen:
                seen.add(handle)
                todo += doc["handles"][handle]["fused_from"]
        ops = [doc["handles"][h]["aten_op"] for h in seen if doc["handles"][h]["aten_op"]]
        return event_name(ops, doc["bundles"][site]["provenance_key"])

    return _PLACEHOLDER.sub(fill, line)


def workdir() -> Path:
    """A scratch folder holding a link to ``golden/``, the bad artifact in ``bad/`` and the
    user's program ``your_script.py``."""
    work = Path(tempfile.mkdtemp(prefix="spyre-provenance-docs-"))
    (work / "golden").symlink_to(ROOT / "golden", target_is_directory=True)
    shutil.copytree(BAD_ARTIFACT, work / "bad")
    shutil.copyfile(USER_SCRIPT, work / USER_SCRIPT.name)
    return work


def transcript(line: str, output: str, returncode: int) -> str:
    """What an outputs file holds: the command after ``$ ``, what it printed, and the exit
    status when it is not 0."""
    output = PROFILER_NOISE.sub("", output).replace(str(ROOT), DISPLAY_ROOT)
    text = f"$ {line}\n{output}"
    if not text.endswith("\n"):
        text += "\n"
    if returncode != 0:
        text += f"$ echo $?\n{returncode}\n"
    return text


def run_command(command: Command, work: Path) -> str:
    """Run one command in ``work`` (a ``workdir()``) with this interpreter's
    ``spyre-provenance``; returns its transcript. Inductor's FX-graph and AOTAutograd caches
    are off, as in the suite (``tests/conftest.py``): a program ``run`` tracks compiles cold,
    as on its first run, whatever an earlier run left in the cache (``compile`` bypasses them
    itself)."""
    line = expand(command.line, work)
    argv = shlex.split(line)
    argv[0] = str(Path(sys.executable).parent / "spyre-provenance")
    env = {
        **os.environ,
        "PYTHONHASHSEED": "0",
        "COLUMNS": "100",
        "TORCHINDUCTOR_FX_GRAPH_CACHE": "0",
        "TORCHINDUCTOR_AUTOGRAD_CACHE": "0",
    }
    env.pop("TORCH_TRACE", None)
    done = subprocess.run(
        argv, cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False
    )
    output = done.stdout
    for folder in sorted({str(work.resolve()), str(work)}, key=len, reverse=True):  # the user's project
        output = output.replace(folder, DISPLAY_WORK)
    return transcript(line, output, done.returncode)


def run(into: Path, only: list[str] | None = None) -> dict[str, str]:
    """Run the commands (all, or those named in ``only`` and the ones before them that they
    need: all earlier ones), write ``into/<name>.txt``; returns name -> text."""
    into.mkdir(parents=True, exist_ok=True)
    work = workdir()
    texts: dict[str, str] = {}
    try:
        for command in COMMANDS:
            text = run_command(command, work)
            texts[command.name] = text
            if only is None or command.name in only:
                (into / f"{command.name}.txt").write_text(text)
            print(f"{command.name}: done", file=sys.stderr)
            if only is not None and all(name in texts for name in only):
                break
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return texts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--into", type=Path, default=OUTPUTS, help="where to write (default: docs/outputs)")
    parser.add_argument("names", nargs="*", help="only these outputs (default: all)")
    args = parser.parse_args()
    import importlib.metadata

    torch = importlib.metadata.version("torch")
    if not torch.startswith(TORCH) and args.into == OUTPUTS:
        print(f"the docs' outputs are made with torch {TORCH}, this is {torch}", file=sys.stderr)
        return 2
    run(args.into, args.names or None)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
