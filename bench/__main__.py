"""``python -m bench [--quick] [--json PATH]``: run everything, print the table.

The table (markdown) goes to stdout, progress to stderr. ``--quick`` (or
``SPYRE_BENCH_QUICK=1``) is the smoke version: one tiny model, one round, no warm-up,
1k and 4k references; its numbers mean nothing, its table has the full run's shape.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys
import time
from pathlib import Path

import msgspec

from bench import artifacts, report, whole_process


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a tiny run (seconds), for the smoke test")
    parser.add_argument(
        "--rounds", type=int, default=None, help="compile rounds for every model (default: models.ROUNDS)"
    )
    parser.add_argument("--skip-compile", action="store_true", help="only the artifact measurements")
    parser.add_argument(
        "--pairs",
        type=int,
        default=None,
        help=f"whole-process pairs per row (default {whole_process.PAIRS}, or ${whole_process.PAIRS_ENV})",
    )
    parser.add_argument("--json", type=Path, help="also write the raw measurements here")
    args = parser.parse_args(argv)
    quick = args.quick or os.environ.get("SPYRE_BENCH_QUICK", "") not in ("", "0")

    def progress(message: str) -> None:
        print(f"[bench {time.perf_counter() - start:6.0f}s] {message}", file=sys.stderr, flush=True)

    if quick:  # no pool of compile workers to start and stop for one tiny extern-only graph
        os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")
    from bench import compile_overhead, models  # imports torch

    started = dt.datetime.now(dt.timezone.utc)
    load_before = report.load_average()
    start = time.perf_counter()
    compile_results = audit_results = None
    if not args.skip_compile:
        chosen = models.QUICK if quick else models.FULL
        rounds = {name: args.rounds or models.ROUNDS[name] for name in chosen}
        warmup = None if quick else "transformer block"
        compile_results = compile_overhead.run(chosen, rounds, warmup, progress)
        from bench import audit_overhead

        audit_model = "tiny" if quick else "24-layer stack"
        audit_results = audit_overhead.run(
            audit_model,
            args.rounds or models.ROUNDS[audit_model],
            progress,
            backend="inductor" if quick else "reference",
            warmup=None if quick else "mlp",
        )
    whole_results = None
    if not args.skip_compile:
        pairs = args.pairs or whole_process.pairs_from_env(1 if quick else whole_process.PAIRS)
        rows = whole_process.QUICK if quick else whole_process.FULL
        whole_results = whole_process.run(rows, pairs, progress, bytecode=not quick)
    runtime_results = None
    if not quick:  # the smoke test runs it alone (tests/bench/test_bench_runtime.py): the quick table keeps its shape
        from bench import runtime

        runtime_results = runtime.run(runtime.FULL, progress)
    viewer_results = None
    if not quick:  # the smoke test runs it alone (tests/bench/test_bench_viewer.py)
        from bench import viewer

        viewer_results = viewer.run(viewer.FULL, progress)
    compare_results = None
    if not quick:  # the smoke test runs it alone (tests/bench/test_bench_compare.py)
        from bench import compare

        compare_results = compare.run(compare.FULL, progress)
    attach_results = None
    if not quick:  # fresh processes, a Granite compile per run: minutes, never in the smoke run
        from bench import attach_overhead

        attach_results = attach_overhead.run(attach_overhead.RUN_PAIRS, attach_overhead.STARTUP_PAIRS, progress)
    warm_results = None
    if not quick:  # fresh processes, two programs, warm and cold: minutes, never in the smoke run
        from bench import warm_start

        warm_results = warm_start.run(warm_start.ROUNDS, progress)
    call_site_results = None
    if not quick:  # the smoke test runs it alone (tests/bench/test_bench_call_sites.py)
        from bench import call_sites

        call_site_results = call_sites.run(call_sites.FULL, progress)
    artifact_results = artifacts.run(
        artifacts.QUICK_SIZES if quick else artifacts.FULL_SIZES,
        artifacts.QUICK_OUTER if quick else artifacts.OUTER,
        artifacts.FULL_SCHEMA_MAX,
        progress,
        repeat=not quick,
    )
    elapsed = time.perf_counter() - start
    load = (load_before, report.load_average())
    table = report.render(
        compile_results,
        artifact_results,
        started=started,
        elapsed=elapsed,
        quick=quick,
        load=load,
        audit=audit_results,
        whole_process=whole_results,
        runtime=runtime_results,
        viewer=viewer_results,
        compare=compare_results,
    )
    if attach_results is not None:
        from bench import attach_overhead

        table += "\n" + attach_overhead.render_section(attach_results, attach_overhead.SECTION)
    if warm_results is not None:
        from bench import warm_start

        table += "\n" + warm_start.render_section(warm_results)
    if call_site_results is not None:
        from bench import call_sites

        table += "\n" + call_sites.render_section(call_site_results)
    if args.json:
        raw = {
            "compile": compile_results,
            "artifacts": artifact_results,
            "audit": audit_results,
            "whole_process": whole_results,
            "runtime": runtime_results,
            "viewer": viewer_results,
            "compare": compare_results,
            "attach": attach_results,
            "warm_start": warm_results,
            "call_sites": call_site_results,
            "started": started.isoformat(),
        }
        args.json.write_bytes(msgspec.json.encode(raw))
    sys.stdout.write(table)
    return 0


raise SystemExit(main())
