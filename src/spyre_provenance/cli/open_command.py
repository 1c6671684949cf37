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
from collections.abc import Mapping
from pathlib import Path

from spyre_provenance.base.errors import EXIT_FOUND_WANTING, EXIT_OK, UnusableInput
from spyre_provenance.logs import tlparse_render
from spyre_provenance.model.layout import Layout


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
    per_log = len(logs) > 1 or (args.out is None and Layout.of_log(logs[0]) is not None)
    pages: list[tlparse_render.GraphPage] = []
    for log in logs:
        try:
            pages += tlparse_render.render_pages(tlparse, log, _log_out(args, out, log) if per_log else out)
        except tlparse_render.TlparseError as exc:
            raise UnusableInput(str(log), str(exc)) from None

    mapped = [page for page in pages if page.has_mapping]
    width = max((len(page.label) for page in pages), default=0)
    for page in pages:
        print(f"{page.label.ljust(width)}  {page.page}{page.note}")
    _print_viewer(target, width)
    if not mapped:
        print(f"{target}: no compiled graph with a provenance mapping in the log", file=sys.stderr)
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
    landings: list[Path] = []
    pages: list[tlparse_render.GraphPage] = []
    for stem, logs in models.items():
        try:
            where = out if len(models) == 1 else Layout(target, stem).pages if args.out is None else out / stem
            report = tlparse_render.render_all_ranks(tlparse, logs, where)
        except tlparse_render.TlparseError as exc:
            raise UnusableInput(str(target), str(exc)) from None
        landings.append(report.landing)
        pages += report.pages
    width = max((len(page.label) for page in pages), default=0)
    for landing in landings:
        print(f"{'ranks'.ljust(width)}  {landing}")
    for page in pages:
        print(f"{page.label.ljust(width)}  {page.page}{page.note}")
    _print_viewer(target, width)
    if not any(page.has_mapping for page in pages):
        print(f"{target}: no compiled graph with a provenance mapping in the ranks' logs", file=sys.stderr)
        return EXIT_FOUND_WANTING
    if not args.no_browser:
        webbrowser.open(landings[0].resolve().as_uri())
    return EXIT_OK


def _open_run(args: argparse.Namespace, target: Path) -> int:
    """A ``run`` folder (one folder per tracked process): tlparse's multi-rank report of
    torchrun's ranks, every other process's pages, each process's viewer page."""
    tlparse = tlparse_render.tlparse_binary()
    if tlparse is None:
        raise UnusableInput("tlparse", f"not installed; install it with: {tlparse_render.INSTALL_HINT}")
    out = args.out if args.out is not None else Layout(target).pages_root
    ranked, others = tlparse_render.find_process_logs(target)
    _check_out(out, target, [*(log for logs in ranked.values() for log in logs.values()), *(log for _, log in others)])
    lines, landing, mapped = run_pages(tlparse, target, out)
    width = max((len(label) for label, _ in lines), default=0)
    for label, where in lines:
        print(f"{label.ljust(width)}  {where}")
    if mapped is None:
        print(f"{target}: no compiled graph with a provenance mapping in the run's logs", file=sys.stderr)
        return EXIT_FOUND_WANTING
    if not args.no_browser:
        webbrowser.open((landing or mapped).resolve().as_uri())
    return EXIT_OK


def run_pages(
    tlparse: str,
    target: Path,
    out: Path,
    *,
    viewers: bool = True,
    rendered: Mapping[str, list[tlparse_render.GraphPage]] | None = None,
) -> tuple[list[tuple[str, str]], Path | None, Path | None]:
    """The pages of a ``run`` folder into ``out`` (``open`` and ``run`` write the same):
    (label, page) lines, the first multi-rank landing page, the first page with a mapping.
    One multi-rank report per program run by torchrun's ranks (``out/<program>/``), the
    pages of every other process (``out/<process folder>/``), each process's viewer page
    (``viewers=False``: not those, which ``run`` writes while tlparse runs). ``rendered``:
    the pages already made of processes of no rank, by folder name (``run``'s early end)."""
    ranked, others = tlparse_render.find_process_logs(target)
    lines: list[tuple[str, str]] = []
    landing = mapped = None
    pages: list[tuple[str, tlparse_render.GraphPage]] = []
    try:
        for stem, logs in sorted(ranked.items()):
            report = tlparse_render.render_all_ranks(tlparse, logs, out / stem)
            landing = landing or report.landing
            lines.append((f"{stem} ranks", str(report.landing)))
            pages += [(stem, page) for page in report.pages]
        for name, log in others:
            made = (rendered or {}).get(name)
            pages += [
                (name, page)
                for page in (made if made is not None else tlparse_render.render_pages(tlparse, log, out / name))
            ]
    except tlparse_render.TlparseError as exc:
        raise UnusableInput(str(target), str(exc)) from None
    for owner, page in pages:
        lines.append((f"{owner} {page.label}", f"{page.page}{page.note}"))
        mapped = mapped or (page.page if page.has_mapping else None)
    return [*lines, *(run_viewers(target) if viewers else [])], landing, mapped


def run_viewers(target: Path, written: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """Each process's viewer page of a ``run`` folder, written now unless ``written`` holds
    its line already (by folder name): (label, page) lines."""
    from spyre_provenance.viewer import page as view

    written = written or {}
    return [
        (
            f"{layout.out.name} viewer",
            written.get(layout.out.name) or view.beside(layout.out).removeprefix("viewer page: "),
        )
        for _, layout in Layout(target).processes()
    ]


def _print_viewer(target: Path, width: int) -> None:
    """Beside tlparse's pages, the viewer's page (``view``) of a compile --out folder, written
    now; a log alone has no graph folders to make it of."""
    from spyre_provenance.viewer import data
    from spyre_provenance.viewer import page as view

    owner = Layout.of_log(target) if target.is_file() else Layout.of_trace_dir(target)
    out = owner.out if owner is not None else target  # a compile --out folder's log or trace folder
    if out.is_dir() and data.has_graph_folders(out):
        line = view.beside(out)
        print(f"{'viewer'.ljust(width)}  {line.removeprefix('viewer page: ')}")


def _log_out(args: argparse.Namespace, out: Path, log: Path) -> Path:
    """One log's pages among several: by default where ``compile`` wrote them (its
    ``Layout.pages``), else in a folder of ``--out`` named after the log."""
    owner = Layout.of_log(log, log.stem)
    return owner.pages if args.out is None and owner is not None else out / log.stem


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
