"""What tracking costs torch-spyre's own compile, whole process, side by side.

``python -m bench.torch_spyre_overhead [--pairs N]`` (``make
bench-spyre-main`` runs it where torch-spyre runs on the tests' stand-in for its native
extension). Each run is its own ``python`` process, interpreter start to exit, compiling
one model on torch-spyre (``SpyreBackend``: the model placed on ``spyre``, compiled
by torch-spyre's wrapped Inductor) in fp16:

* arm A: under ``spyre_provenance.tracking(backend)``;
* arm B: the same compile, no tracking.

Runs go in pairs, order alternating (AB, BA, ...); each run has a fresh, empty Inductor
cache. Reported per model: the median of the pairs' wall-time ratios A / B, of their CPU
time (the child and what it reaped) and of the child's peak resident memory, with their
range; the target is at most ``TARGET``. Without torch-spyre it prints why and exits 0.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

#: what the issue asks of tracking's whole-process cost on torch-spyre's compile
TARGET = 1.02
PAIRS = 3
#: models torch-spyre main compiles (tests/spyre_main/test_spyre_zoo.py)
MODELS = ("mlp", "residual")


def child(arm: str, model_name: str) -> dict:
    """One compile as arm ``arm``; its own peak memory (KiB) and kernel count."""
    import contextlib

    import torch

    import spyre_provenance
    from spyre_provenance.backends.spyre import SpyreBackend
    from spyre_provenance.compile.examples import load_calls

    model, calls = load_calls(model_name, torch.float16)
    model.train(False)
    backend = SpyreBackend()
    model, calls = backend.place(model, calls)
    tracking: contextlib.AbstractContextManager = (
        spyre_provenance.tracking(backend) if arm == "A" else contextlib.nullcontext()
    )
    with torch.no_grad(), tracking as session:
        torch.compile(model, backend=backend.compiler())(*calls[0])
    kernels = None if session is None else sum(len(g.records) for g in session.results)
    return {"peak_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, "kernels": kernels}


def run_once(arm: str, model_name: str) -> dict:
    with tempfile.TemporaryDirectory(prefix="spyre-bench-ts-") as cache:
        env = {k: v for k, v in os.environ.items() if k not in ("TORCH_TRACE", "TORCH_LOGS")}
        env.update(TORCHINDUCTOR_CACHE_DIR=cache, TORCHINDUCTOR_FX_GRAPH_CACHE="0", PYTHONHASHSEED="0")
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "bench.torch_spyre_overhead", "--child", arm, model_name],
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{model_name} arm {arm} failed: {done.stderr.strip().splitlines()[-1:]}")
    report = json.loads(done.stdout.strip().splitlines()[-1])
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall": wall, "cpu": cpu, **report}


def measure(model_name: str, pairs: int) -> dict:
    runs: dict[str, list[dict]] = {"A": [], "B": []}
    for pair in range(pairs):
        for arm in "AB" if pair % 2 == 0 else "BA":
            runs[arm].append(run_once(arm, model_name))
    ratios = {
        measure: [a[measure] / b[measure] for a, b in zip(runs["A"], runs["B"], strict=True)]
        for measure in ("wall", "cpu", "peak_kib")
    }
    return {"model": model_name, "runs": runs, "ratios": ratios}


def render(results: list[dict], pairs: int) -> str:
    lines = [
        f"## Tracking on torch-spyre's own compile (whole process, {pairs} pairs, target <= {TARGET}x)",
        "",
        "| model | kernels | wall A / B | CPU A / B | peak memory A / B | B wall (s) |",
        "|---|---|---|---|---|---|",
    ]
    for result in results:
        cells = []
        for measure in ("wall", "cpu", "peak_kib"):
            values = result["ratios"][measure]
            cells.append(f"{statistics.median(values):.3f}x ({min(values):.3f}-{max(values):.3f})")
        kernels = result["runs"]["A"][0]["kernels"]
        b_wall = statistics.median(run["wall"] for run in result["runs"]["B"])
        lines.append(f"| {result['model']} | {kernels} | {' | '.join(cells)} | {b_wall:.1f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.torch_spyre_overhead")
    parser.add_argument("--pairs", type=int, default=PAIRS)
    parser.add_argument("--child", nargs=2, metavar=("ARM", "MODEL"), help=argparse.SUPPRESS)
    parser.add_argument("models", nargs="*", default=list(MODELS))
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(*args.child)))
        return 0
    from spyre_provenance.backends import spyre as spyre_backend

    usable, why = spyre_backend.probe()
    if not usable:
        print(f"tracking on torch-spyre's compile: not measured: {why}")
        return 0
    results = []
    for name in args.models:
        print(f"[bench] {name}: {args.pairs} pairs", file=sys.stderr, flush=True)
        results.append(measure(name, max(1, args.pairs)))
    sys.stdout.write(render(results, max(1, args.pairs)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
