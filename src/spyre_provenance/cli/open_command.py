"""``spyre-provenance open DIR|LOG``: render a compile's provenance pages with tlparse.

Runs ``tlparse -i`` on the TORCH_TRACE log (of a ``compile --out`` folder, a trace folder,
or a log file) and prints one provenance page per compile folder and graph: a training
compile's forward and backward each get theirs, though tlparse puts both in one compile
folder (see ``tlparse_render``). Opens the first page in the system browser unless
``--no-browser``.
"""

from __future__ import annotations

import argparse
import sys
import webbrowser
from pathlib import Path

from spyre_provenance.base.errors import EXIT_FOUND_WANTING, EXIT_OK, UnusableInput
from spyre_provenance.logs import tlparse_render, tracelog
from spyre_provenance.model.layout import Layout
from spyre_provenance.viewer.pages import Pages, viewer_folder
from spyre_provenance.viewer.pages import write as write_pages


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "target", metavar="DIR|LOG", type=Path, help="a compile --out folder, a TORCH_TRACE folder, or a log file"
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="tlparse output folder (replaced; default: DIR/tlparse, or beside the log)",
    )
    parser.add_argument("--no-browser", action="store_true", help="print the page paths only")


def run(args: argparse.Namespace) -> int:
    target: Path = args.target
    if not target.exists():
        raise UnusableInput(str(target), "no such file or folder")
    if target.is_dir() and Layout(target).processes():
        return _open_run(args, target)
    if tlparse_render.find_rank_logs(target):
        return _open_ranks(args, target)
    logs = tlparse_render.find_logs(target)
    if not logs:
        raise UnusableInput(str(target), "no TORCH_TRACE log (*.log) here nor in its trace/ folder")
    tlparse = tlparse_render.tlparse_binary()
    if tlparse is None:
        raise UnusableInput("tlparse", f"not installed; install it with: {tlparse_render.INSTALL_HINT}")

    out = args.out if args.out is not None else _default_out(target, logs[0])
    _check_out(out, target, logs)
    # a compile --out folder's default: each log's pages where compile wrote and printed
    # them (OUT/tlparse/<label>/), never replacing the folder that holds them all
    written = write_pages(
        target, out, tlparse=tlparse, viewer=_has_viewer(target), logs=logs, own_places=args.out is None, refuse=True
    )
    pages = [page for _, page in written.graphs]

    mapped = [page for page in pages if page.has_mapping]
    width = max((len(page.label) for page in pages), default=0)
    for page in pages:
        print(f"{page.label.ljust(width)}  {page.page}{page.note}")
    _print_viewer(written, width)
    if not mapped:
        why = tracelog.empty_records_aside(logs)
        print(f"{target}: no compiled graph with a provenance mapping in the log{why}", file=sys.stderr)
        return EXIT_FOUND_WANTING
    if not args.no_browser:
        webbrowser.open(mapped[0].page.resolve().as_uri())
    return EXIT_OK


def _open_ranks(args: argparse.Namespace, target: Path) -> int:
    """A ``compile --ranks N`` run folder: tlparse's multi-rank report per model (its
    landing page, and each rank's pages), printed landing page first."""
    models = tlparse_render.find_rank_logs(target)
    tlparse = tlparse_render.tlparse_binary()
    if tlparse is None:
        raise UnusableInput("tlparse", f"not installed; install it with: {tlparse_render.INSTALL_HINT}")
    out = args.out if args.out is not None else Layout(target).pages_root
    _check_out(out, target, [log for logs in models.values() for log in logs.values()])
    written = write_pages(target, out, tlparse=tlparse, viewer=_has_viewer(target), rank_logs=models, refuse=True)
    pages = [page for _, page in written.graphs]
    width = max((len(page.label) for page in pages), default=0)
    for _, landing in written.landings:
        print(f"{'ranks'.ljust(width)}  {landing}")
    for page in pages:
        print(f"{page.label.ljust(width)}  {page.page}{page.note}")
    _print_viewer(written, width)
    if not any(page.has_mapping for page in pages):
        print(f"{target}: no compiled graph with a provenance mapping in the ranks' logs", file=sys.stderr)
        return EXIT_FOUND_WANTING
    if not args.no_browser:
        webbrowser.open(written.landings[0][1].resolve().as_uri())
    return EXIT_OK


def _open_run(args: argparse.Namespace, target: Path) -> int:
    """A ``run`` folder (one folder per tracked process): tlparse's multi-rank report of
    torchrun's ranks, every other process's pages, each process's viewer page."""
    tlparse = tlparse_render.tlparse_binary()
    if tlparse is None:
        raise UnusableInput("tlparse", f"not installed; install it with: {tlparse_render.INSTALL_HINT}")
    out = args.out if args.out is not None else Layout(target).pages_root
    ranked, others = tlparse_render.process_logs(Layout(target).processes())
    _check_out(out, target, [*(log for logs in ranked.values() for log in logs.values()), *(log for _, log in others)])
    written = write_pages(target, out, tlparse=tlparse, refuse=True)
    lines = written.labelled
    width = max((len(label) for label, _ in lines), default=0)
    for label, where in lines:
        print(f"{label.ljust(width)}  {where}")
    mapped = next((page.page for _, page in written.graphs if page.has_mapping), None)
    if mapped is None:
        print(f"{target}: no compiled graph with a provenance mapping in the run's logs", file=sys.stderr)
        return EXIT_FOUND_WANTING
    if not args.no_browser:
        webbrowser.open((written.landings[0][1] if written.landings else mapped).resolve().as_uri())
    return EXIT_OK


def _has_viewer(target: Path) -> bool:
    """Whether a viewer page stands beside the pages of ``target``: a compile --out folder's
    (of its log or trace folder too) with graph folders; a log alone has none to make it of."""
    from spyre_provenance.viewer import inputs

    out = viewer_folder(target)
    return out.is_dir() and inputs.has_graph_folders(out)


def _print_viewer(written: Pages, width: int) -> None:
    """Beside tlparse's pages, the viewer's page (``view``) of a compile --out folder."""
    if written.viewer is not None:
        print(f"{'viewer'.ljust(width)}  {written.viewer.shown}")


def _default_out(target: Path, log: Path) -> Path:
    if target.is_dir():
        return (Layout.of_trace_dir(target) or Layout(target)).pages_root
    owner = Layout.of_log(log)
    if owner is not None:  # a log inside a compile --out folder
        return owner.pages_root
    return log.with_name(f"{log.stem}_tlparse")


def _check_out(out: Path, target: Path, logs: list[Path]) -> None:
    """tlparse --overwrite deletes OUT first: never let that be the input or a stranger's folder."""
    resolved = out.resolve()
    for path in [target, *logs]:
        path = path.resolve()
        if resolved == path or resolved in path.parents:
            raise UnusableInput(str(out), f"--out would replace {path}, which is the input")
    if out.exists() and not out.is_dir():
        raise UnusableInput(str(out), "exists and is not a folder")
    if out.is_dir() and any(out.iterdir()) and not tlparse_render.looks_like_tlparse_output(out):
        raise UnusableInput(str(out), "exists, is not empty and is no tlparse output; refusing to replace it")
