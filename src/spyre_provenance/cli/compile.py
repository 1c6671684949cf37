"""``spyre-provenance compile MODEL``: one tracked compile, its artifacts, a summary.

Writes into ``--out DIR``, everything named after the model (``mlp``, or ``file-factory``
for ``PATH.py:FACTORY``; see ``run_label``):

- ``trace/<model>.log``: this run's TORCH_TRACE log (torch writes it under its own random
  name while compiling; the run finds it through torch's trace handler, not by globbing,
  and renames it when the compile is done);
- ``graph_<model>_NN_<compile id>_<kind>/``: one folder per compiled graph, its artifacts;
- ``sdsc/<model>/``: the reference backend's SuperDSC-like bundles;
- ``tlparse/<model>/``: the provenance pages, when tlparse is installed;
- ``provenance_audit.json`` and ``.md`` with ``--audit`` (``cli.audit``): one per ``--out``,
  the last audited run's.

A run replaces only its own model's earlier output, so compiles of different models can
share one ``--out`` (and so one TORCH_TRACE folder), also at the same time.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from spyre_provenance.backends import BACKEND_NAMES, DEFAULT_BACKEND
from spyre_provenance.errors import EXIT_FOUND_WANTING, EXIT_OK, EXIT_UNUSABLE, UnsupportedTorch, UnusableInput
from spyre_provenance.logs.tlparse_run import TlparseError, render_pages, tlparse_binary
from spyre_provenance.model import folders
from spyre_provenance.support import remove_stale_temporaries


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", metavar="MODEL", help="built-in example (mlp, residual, ...) or PATH.py:FACTORY")
    parser.add_argument("--backend", choices=BACKEND_NAMES, default=DEFAULT_BACKEND,
                        help="auto = torch-spyre when the adapter can install on it, else the reference "
                        "backend (the choice and its reason are printed)")
    parser.add_argument("--out", type=Path, default=None, help="output folder (default: out/<model>)")
    parser.add_argument(
        "--dtype", choices=("float32", "float16", "bfloat16"), default=None,
        help="cast the model and its floating-point inputs (default: float32 for built-in models, "
        "a PATH.py:FACTORY model as its factory builds it)",
    )
    parser.add_argument("--train", action="store_true", help="compile forward and backward")
    parser.add_argument("--no-tlparse", action="store_true", help="do not run tlparse afterwards")
    parser.add_argument(
        "--kernel-cache", action="store_true",
        help="as torch-spyre's kernel cache: keep SuperDSC bundles in Inductor's cache dir "
        "(inductor-spyre-cache/<key>/, keyed on the specs without debug handles) and serve later "
        "compiles of the same specs from there; their handles are checked against this compile's "
        "(reference backend)",
    )
    parser.add_argument(
        "--ranks", type=int, default=None, metavar="N",
        help="run N processes, one rank each, in a torch.distributed gloo group; rank r compiles "
        "into OUT/rank<r>/ and OUT/tlparse/<model>/ gets tlparse's multi-rank report",
    )
    # the rank this process is, when the parent of a --ranks run started it (cli.ranks)
    parser.add_argument("--rank", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument(
        "--redact-paths", action="store_true",
        help="write stack traces and handle sources with <project>/, <site-packages>/, ~/ instead of "
        "absolute paths (and user names)",
    )
    parser.add_argument(
        "--beyond-upstream", action="store_true",
        help="with --backend inductor: complete stock Inductor's mapping as on the Spyre backends (gradients "
        "linked to the pre-grad nodes of the forward op they differentiate, write-backs and helper kernels given "
        "a source line, gaps judged as violations); the Spyre backends always do",
    )
    parser.add_argument(
        "--audit", action="store_true",
        help="also write the provenance audit (provenance_audit.json and .md, as `spyre-provenance audit`)",
    )


@dataclasses.dataclass
class Compiled:
    """One tracked compile as the command ran it: the report, what ``cli.outputs`` checked
    in what it wrote, the pages, and whether everything was found as it should be."""

    out: Path
    report: Any  # compile_run.CompileReport
    checked: Any  # outputs.Checked
    pages: list[Path]
    ok: bool


def run(args: argparse.Namespace) -> int:
    if args.ranks is not None and args.rank is None:  # the parent of a multi-rank run
        from spyre_provenance.cli import ranks

        return ranks.run(args, default_out(args), run_label(args.model), _own_folders)
    out = default_out(args)
    if out.exists() and not out.is_dir():
        raise UnusableInput(str(out), "exists and is not a folder")
    if args.rank is None:
        return _finish(args, execute(args, out, audit=args.audit))
    if args.ranks is None or not 0 <= args.rank < args.ranks:
        raise UnusableInput("--rank", "is how compile --ranks N starts its processes (0 <= rank < N)")
    out = out / folders.rank_folder(args.rank)
    if out.exists() and not out.is_dir():
        raise UnusableInput(str(out), "exists and is not a folder")
    from spyre_provenance.capture import ranks as process_group

    _point_trace_at(out / "trace")  # before torch is imported, and so before the group exists
    try:
        # before the model loads (its factory may read its rank) and before torch logs a
        # record: torch names the log after the rank and stamps the rank on every record
        process_group.join(args.rank, args.ranks)
    except Exception as exc:  # noqa: BLE001 - whatever the group's backend raises: one line, exit 2
        raise UnusableInput(f"rank {args.rank}", f"cannot join the process group: {type(exc).__name__}: {_first_line(exc)}") from None
    try:
        return _finish(args, execute(args, out, audit=args.audit, ranked=True))
    finally:
        process_group.leave()


def default_out(args: argparse.Namespace) -> Path:
    return args.out or Path("out") / _model_label(args.model)


def _finish(args: argparse.Namespace, done: Compiled) -> int:
    """Print the summary (and write the audit with ``--audit``); the exit status."""
    from spyre_provenance.cli import audit_files
    from spyre_provenance.cli import outputs as summary

    print(summary.render(done.report, done.checked, done.pages, done.out))
    ok = done.ok
    if args.audit:
        written, problems = audit_files.write(done.report, done.out)
        for line in problems:
            print(f"  AUDIT NOT WRITTEN: {line}")
        if written:
            print(f"  audit: {', '.join(map(str, written))}")
        ok &= not problems
    if done.report.run_error is not None:
        return EXIT_UNUSABLE  # as a model that fails under torch.compile; its artifacts are kept
    return EXIT_OK if ok else EXIT_FOUND_WANTING


def execute(
    args: argparse.Namespace,
    out: Path | None = None,
    *,
    audit: bool = False,
    tlparse_pages: bool = True,
    ranked: bool = False,
) -> Compiled:
    """The tracked compile of ``args.model`` into ``out`` (default ``args.out``), checked
    (``compile`` and ``audit`` share it). Raises UnusableInput for a model that cannot be
    compiled. ``ranked``: a rank of ``compile --ranks`` (its trace folder is set already, and
    a compiled run that fails, a peer gone, keeps the artifacts its compile wrote)."""
    out = out if out is not None else default_out(args)
    if out.exists() and not out.is_dir():
        raise UnusableInput(str(out), "exists and is not a folder")
    label = run_label(args.model)
    trace_dir = out / "trace"
    if not ranked:  # a rank pointed it before joining its group
        _point_trace_at(trace_dir)
    backend = _backend(args.backend)  # may import torch_spyre, and so torch: after the line above
    if args.kernel_cache and backend != "reference":
        raise UnusableInput("--kernel-cache", f"models torch-spyre's kernel cache on the reference backend, not {backend}")

    from spyre_provenance.capture import compile_run
    from spyre_provenance.cli import outputs as summary
    from spyre_provenance.examples import ModelLoadError

    # everything that can refuse the model happens before --out is touched
    try:
        loaded = compile_run.load(args.model, args.dtype)
        reference = compile_run.run_eager(loaded, train=args.train)
    except (ModelLoadError, compile_run.NotCompilable) as exc:
        raise UnusableInput(args.model, str(exc)) from None
    created = [p for p in (out, trace_dir) if not p.exists()]
    _prepare(out, trace_dir, label)
    try:
        report = compile_run.compile_model(
            loaded, reference, backend=backend, out_dir=out, train=args.train, label=label,
            redact_paths=args.redact_paths, kernel_cache=args.kernel_cache, keep_run_failure=ranked, audit=audit,
            beyond_upstream=getattr(args, "beyond_upstream", False),
        )
    except UnsupportedTorch:  # enable() refused this torch before compiling: its own line
        _discard(out, trace_dir, label, created)
        raise
    except Exception as exc:  # noqa: BLE001 - see below
        # the model ran eagerly, so torch.compile refused it: the input, in one line
        _discard(out, trace_dir, label, created)
        raise UnusableInput(args.model, f"torch.compile failed: {type(exc).__name__}: {_first_line(exc)}") from None
    except BaseException:
        _discard(out, trace_dir, label, created)  # a failed run leaves no half-named log, no stale folder
        raise
    log = _claim_trace_log(trace_dir / f"{label}.log")

    pages: list[Path] = []
    graph_dirs = _graph_folders(out, label)
    checked = summary.check_outputs(graph_dirs, log)
    tlparse = tlparse_binary()
    if log is not None and tlparse_pages and not args.no_tlparse and tlparse:
        pages = _graph_pages(tlparse, log, out / "tlparse" / label)
    # no graph recorded means the hook saw nothing (a cache hit it could not bypass, or a
    # model that compiled no code): never a silent success
    paired = summary.pair_graphs(report.graphs, checked.graphs)
    ok = (
        report.run_error is None
        and bool(report.graphs)
        and report.matches_eager
        and checked.all_valid
        and checked.all_complete
        and all(g.diagnostics.complete for g in report.graphs)
        and all(p is not None for p in paired)
    )
    return Compiled(out, report, checked, pages, ok)


def _backend(requested: str) -> str:
    """The backend to compile with. ``auto`` prints which one it chose and why, in one line;
    ``spyre`` is refused (one line, exit 2) when the adapter cannot install on torch-spyre."""
    from spyre_provenance.backends import choose_backend, torch_spyre

    if requested == "spyre":
        usable, why = torch_spyre.probe()
        if not usable:
            raise UnusableInput("--backend spyre", why)
    chosen, line = choose_backend(requested)
    if requested == "auto":
        print(line, flush=True)
    return chosen.name


def _point_trace_at(trace_dir: Path) -> None:
    """Make torch's structured trace go to ``trace_dir`` for this compile.

    Before torch is imported, ``TORCH_TRACE`` does it. In a process that imported torch
    with a trace handler already (a second compile in one process: the Python API, a test
    session), the handler's open log is closed and it opens a new one in ``trace_dir`` on
    its next record, as it does for its first.
    """
    os.environ["TORCH_TRACE"] = str(trace_dir)
    if "torch" not in sys.modules:
        return
    import logging

    from torch._logging import _internal

    handler = _internal.LOG_TRACE_HANDLER
    close = getattr(handler, "_close_stream", None)
    if handler is None or close is None or handler not in logging.getLogger("torch.__trace").handlers:
        raise UnusableInput("TORCH_TRACE", "torch was imported before the trace folder was set")
    handler.acquire()
    try:
        close()
        handler.root_dir = str(trace_dir)
    finally:
        handler.release()


def _graph_pages(tlparse: str, log: Path, out: Path) -> list[Path]:
    """One provenance page per graph (forward and backward apart); [] when tlparse fails."""
    try:
        return [page.page for page in render_pages(tlparse, log, out) if page.has_mapping]
    except TlparseError as exc:
        print(str(exc), file=sys.stderr)
        return []


def _model_label(spec: str) -> str:
    return Path(spec.split(":", 1)[0]).stem if ":" in spec else spec


def run_label(spec: str) -> str:
    """What this run's files are named after: the built-in model's name, or for
    ``PATH.py:FACTORY`` the file's stem and the factory (two factories of one file are two
    models). Letters, digits, ``.`` and ``-`` only."""
    if ":" in spec:
        path, _, factory = spec.partition(":")
        return folders.model_label(f"{Path(path).stem}-{factory}")
    return folders.model_label(spec)


def _graph_folders(out: Path, label: str) -> list[Path]:
    """The graph folders of model ``label`` in ``out``, in name order."""
    return [p for p in sorted(out.glob(f"{folders.GRAPH_PREFIX}*")) if folders.is_graph_folder_of(p.name, label)]


def _own_folders(out: Path, label: str) -> list[Path]:
    """Everything a run of model ``label`` writes into ``out`` besides its log: graph
    folders, bundles, pages. Another model's stay out of it."""
    return [*_graph_folders(out, label), out / "sdsc" / label, out / "tlparse" / label]


def _prepare(out: Path, trace_dir: Path, label: str) -> None:
    """Remove this model's output of an earlier run, and nothing else: another model's
    folders and logs (maybe being written right now by another run) stay untouched.
    ``run`` has refused an ``out`` that is not a folder."""
    if out.is_dir():
        remove_stale_temporaries(out)  # a killed writer's leftovers; live writers' stay
        for folder in _own_folders(out, label):
            if folder.is_dir():
                shutil.rmtree(folder)
        (trace_dir / f"{label}.log").unlink(missing_ok=True)
    trace_dir.mkdir(parents=True, exist_ok=True)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else "(no message)"


def _discard(out: Path, trace_dir: Path, label: str, created: list[Path]) -> None:
    """Remove what this run wrote: its graph folders, bundles and pages, torch's log of it
    under its temporary name, and the folders it created when they hold nothing else.
    Another model's output stays."""
    for folder in _own_folders(out, label):
        shutil.rmtree(folder, ignore_errors=True)
    log = _claim_trace_log(trace_dir / f"{label}.log")
    if log is not None:
        log.unlink(missing_ok=True)
    for folder in [out / "sdsc", out / "tlparse", *sorted(created, key=lambda p: -len(p.parts))]:
        try:  # noqa: SIM105 - left as it is while this module is restructured (issue 27)
            folder.rmdir()  # only when empty
        except OSError:
            pass


def _claim_trace_log(target: Path) -> Path | None:
    """Flush this process's TORCH_TRACE log and rename it to ``target``; None if torch
    wrote none. The log is found through torch's trace handler (its stream's path), never
    by globbing the folder, which other runs may be writing into."""
    import logging

    from torch._logging import _internal

    for handler in logging.getLogger("torch.__trace").handlers:
        handler.flush()
    handler = _internal.LOG_TRACE_HANDLER
    stream = getattr(handler, "stream", None)
    path = getattr(handler, "_stream_path", None) or getattr(stream, "name", None)
    if stream is None or not isinstance(path, str) or not os.path.isfile(path):
        return None
    os.replace(path, target)  # torch keeps writing to the same (renamed) file
    return target
