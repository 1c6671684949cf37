"""``spyre-provenance compile MODEL``: one tracked compile, its artifacts, a summary.

Writes into ``--out DIR``: ``trace/`` (the TORCH_TRACE log), one ``graph_*`` folder per
compiled graph with its artifacts, ``sdsc/`` (reference backend bundles) and, when tlparse
is installed, ``tlparse/`` with the provenance pages.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

from spyre_provenance.errors import EXIT_FOUND_WANTING, EXIT_OK, UnusableInput
from spyre_provenance.tlparse_run import TlparseError, render_pages, run_tlparse, tlparse_binary  # noqa: F401

BACKENDS = ("auto", "reference", "inductor", "spyre")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", metavar="MODEL", help="built-in example (mlp, residual, ...) or PATH.py:FACTORY")
    parser.add_argument("--backend", choices=BACKENDS, default="auto",
                        help="auto = torch-spyre when it imports, else the reference backend")
    parser.add_argument("--out", type=Path, default=None, help="output folder (default: out/<model>)")
    parser.add_argument("--dtype", choices=("float32", "float16", "bfloat16"), default="float32")
    parser.add_argument("--train", action="store_true", help="compile forward and backward")
    parser.add_argument("--no-tlparse", action="store_true", help="do not run tlparse afterwards")


def run(args: argparse.Namespace) -> int:
    out = args.out or Path("out") / _model_label(args.model)
    trace_dir = out / "trace"
    _prepare(out, trace_dir)
    if "torch" in sys.modules and os.environ.get("TORCH_TRACE") != str(trace_dir):
        raise UnusableInput("TORCH_TRACE", "torch was imported before the trace folder was set")
    os.environ["TORCH_TRACE"] = str(trace_dir)

    from spyre_provenance import compile_run, summary
    from spyre_provenance.examples import ModelLoadError

    try:
        report = compile_run.compile_model(
            args.model, backend=args.backend, out_dir=out, dtype=args.dtype, train=args.train
        )
    except ModelLoadError as exc:
        raise UnusableInput(args.model, str(exc)) from None
    _flush_trace_log()

    logs = sorted(trace_dir.glob("*.log"))
    pages: list[Path] = []
    checked = summary.check_outputs(out, logs[0] if logs else None)
    tlparse = tlparse_binary()
    if logs and not args.no_tlparse and tlparse:
        pages = _graph_pages(tlparse, logs[0], out / "tlparse")
    print(summary.render(report, checked, pages, out))
    # no graph recorded means the hook saw nothing (a cache hit it could not bypass, or a
    # model that compiled no code): never a silent success
    ok = (
        bool(report.graphs)
        and report.matches_eager
        and checked.all_valid
        and not any(g.diagnostics.partial for g in report.graphs)
    )
    return EXIT_OK if ok else EXIT_FOUND_WANTING


def _graph_pages(tlparse: str, log: Path, out: Path) -> list[Path]:
    """One provenance page per graph (forward and backward apart); [] when tlparse fails."""
    try:
        return [page.page for page in render_pages(tlparse, log, out) if page.has_mapping]
    except TlparseError as exc:
        print(str(exc), file=sys.stderr)
        return []


def _model_label(spec: str) -> str:
    return Path(spec.split(":", 1)[0]).stem if ":" in spec else spec


def _prepare(out: Path, trace_dir: Path) -> None:
    """Start from an empty trace folder and no stale graph folders of an earlier run."""
    if out.exists() and not out.is_dir():
        raise UnusableInput(str(out), "exists and is not a folder")
    for stale in [trace_dir, out / "sdsc", out / "tlparse", *out.glob("graph_*")]:
        if stale.is_dir():
            shutil.rmtree(stale)
    trace_dir.mkdir(parents=True, exist_ok=True)


def _flush_trace_log() -> None:
    import logging

    for handler in logging.getLogger("torch.__trace").handlers:
        handler.flush()
