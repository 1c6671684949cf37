"""One compile and its verdict: a ``CompileRequest`` in, a ``CompileOutcome`` out.

``compile_request`` is the one compile path: the ``compile`` command (``--ranks N`` too: its
parent, ``compile.ranks``, starts each rank through torchrun's launcher as a ``compile`` of
its own, with the arguments ``compile.request.command_line`` spells for the request; and so
each case of ``golden``, which runs ``compile`` in its own process), the ``audit`` command, the pytest
fixture and the Python API all call it. The outcome's ``verdict`` (``errors.Verdict``) is
the one judgement of a compile; its ``exit_code`` is what ``compile`` exits with.

With ``out``, the compile writes into that folder, everything named after the model
(``mlp``, or ``file-factory`` for ``PATH.py:FACTORY``; see ``compile.request.run_label``): its log, graph
folders, bundles, pages, and with ``audit`` the audit files; where each goes is
``model.layout.Layout``, built once here and handed down. A run replaces only its own
model's earlier output, so compiles of different models can share one ``out`` (and so one
TORCH_TRACE folder), also at the same time. Without ``out`` nothing is written and the
verdict is on the hook's records alone (the pytest fixture).

The backend is built once here too (``_backend``), with the options that are its own, and
that instance compiles, and compiles again for the eager comparison of a model that draws
random numbers.

Input that cannot be compiled (the model does not load or fails eagerly, torch.compile
refuses it, ``out`` is a file) raises ``UnusableInput`` before anything is written; a
compile that ran always gets a verdict.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from spyre_provenance.base.errors import UnsupportedTorch, UnusableInput, Verdict
from spyre_provenance.base.files import atomic_write_text, give_plain_mode, remove_stale_temporaries
from spyre_provenance.compile.request import CompileRequest
from spyre_provenance.logs.tlparse_run import TlparseError, render_pages, tlparse_binary
from spyre_provenance.model.layout import Layout

if TYPE_CHECKING:
    from spyre_provenance.audit.report import Changes
    from spyre_provenance.backends.base import Backend
    from spyre_provenance.compile.output_check import OutputCheck
    from spyre_provenance.compile.profile import Profiler
    from spyre_provenance.compile.ranks import RanksOutcome
    from spyre_provenance.compile.run import CompileReport
    from spyre_provenance.model.audit_records import AuditV1


class AuditFiles(msgspec.Struct):
    """The provenance audit of a compile: the document, what changed since ``audit_against``,
    the files written, and why they were not (an invalid audit is never written)."""

    document: AuditV1
    changes: Changes | None  # None without audit_against
    written: list[Path]
    problems: list[str]
    refused: UnusableInput | None = None  # no graph was audited: unusable, nothing written


class CompileOutcome(msgspec.Struct):
    """One compile as it went: what the hook recorded (``report``), what was written and
    re-read (``checked``, None without ``out``), the pages, the audit, and the verdict."""

    request: CompileRequest
    out: Path | None  # where it wrote (a rank's folder for a rank)
    backend_choice: str  # which backend, and why: ``backend reference (auto: ...)``
    report: CompileReport  # what the hook recorded, and the comparison with eager
    checked: OutputCheck | None  # None when nothing was written
    pages: list[Path]
    page_problems: list[str]  # tlparse could not render the pages: why
    audit: AuditFiles | None
    verdict: Verdict
    profile: str | None = None  # with ``profile``: the profile's summary line
    viewer: str | None = None  # with ``viewer``: the viewer page's line (``viewer.page.beside``)

    @property
    def exit_code(self) -> int:
        return self.verdict.exit_code

    @property
    def compile_reasons(self) -> list[str]:
        """The verdict's reasons about the compile itself, the audit files' aside."""
        audit = set(self.audit.problems) if self.audit is not None else set()
        return [r for r in self.verdict.reasons if r not in audit]


def compile_request(
    request: CompileRequest, *, announce: Callable[[str], None] | None = None
) -> CompileOutcome | RanksOutcome:
    """Compile as ``request`` says, check what was written, judge it. ``announce`` is told
    the backend ``auto`` chose, and why, before the compile starts (the command line prints
    it). With ``ranks``, torchrun's launcher starts one process per rank (``compile.ranks``)
    and the outcome is theirs, a ``RanksOutcome``; in a process torchrun started, the
    request is that one rank's compile. Raises UnusableInput for input that cannot be
    compiled."""
    if request.instance is not None and request.dtype is not None:
        raise UnusableInput(request.model, "a model handed in is compiled as built: cast it, not the request")
    if request.audit_against is not None and not request.audit:
        raise UnusableInput("--against", "compares a compile's provenance audit with a previous one: add --audit")
    if request.ranks is not None:
        if request.out is None or request.instance is not None:
            raise UnusableInput("--ranks", "a multi-rank run compiles a model by its name into an out folder")
        from spyre_provenance.compile import process_group

        started = process_group.started_by_torchrun()
        if started is None:  # the parent: torchrun's launcher starts a process per rank
            from spyre_provenance.compile import ranks

            return ranks.run(request, Layout(request.out, request.label))
        return _compile_rank(request, *started, announce)
    out = request.out
    if out is not None and out.exists() and not out.is_dir():
        raise UnusableInput(str(out), "exists and is not a folder")
    return _compile(request, Layout(out, request.label) if out is not None else None, announce)


def _compile_rank(
    request: CompileRequest, rank: int, world_size: int, announce: Callable[[str], None] | None
) -> CompileOutcome:
    """One rank of ``compile --ranks N``, in a process torchrun started: it joins the group
    and compiles into ``out/rank<r>/``."""
    from spyre_provenance.compile import process_group

    assert request.out is not None and request.ranks is not None
    if world_size != request.ranks:
        raise UnusableInput("--ranks", f"{request.ranks}, but torchrun started {world_size} rank(s) (WORLD_SIZE)")
    out = request.out
    if out.exists() and not out.is_dir():
        raise UnusableInput(str(out), "exists and is not a folder")
    layout = Layout(out, request.label).rank(rank)
    if layout.out.exists() and not layout.out.is_dir():
        raise UnusableInput(str(layout.out), "exists and is not a folder")
    process_group.finish_when_stopped()
    _point_trace_at(layout.trace_dir)  # before torch is imported, and so before the group exists
    try:
        # before the model loads (its factory may read its rank) and before torch logs a
        # record: torch names the log after the rank and stamps the rank on every record
        process_group.join(rank, world_size)
    except Exception as exc:  # noqa: BLE001 - whatever joining raises (gloo, rendezvous): the rank's one line
        raise UnusableInput(
            f"rank {rank}", f"cannot join the process group: {type(exc).__name__}: {_first_line(exc)}"
        ) from None
    try:
        return _compile(request, layout, announce, ranked=True)
    finally:
        process_group.leave()


#: A ``spyre`` compile whose kernels are all Inductor's own: never reported as torch-spyre's.
NO_TORCH_SPYRE_KERNEL = (
    "no kernel was compiled by torch-spyre: Inductor compiled the model with its own CPU kernels"
    " (torch-spyre's compile_fx wrapper engages only for tensors on device spyre)"
)


def judge(report: CompileReport, checked: OutputCheck | None = None, audit: AuditFiles | None = None) -> Verdict:
    """The one verdict on a compile (``report``, a ``CompileReport``), on what it wrote
    (``checked``; None: nothing was written, the hook's records are judged alone) and on its
    audit files. A compiled run that failed is unusable input, its artifacts kept; anything
    lost or missing is found wanting."""
    unusable = [] if report.run_error is None else [f"the compiled code failed as it ran ({report.run_error})"]
    wanting = []
    # no graph recorded means the hook saw nothing (a cache hit it could not bypass, or a
    # model that compiled no code): never a silent success
    if not report.graphs:
        wanting.append("no graph recorded: the hook saw no kernel code generation")
    if report.graphs and report.torch_spyre_kernels == 0:
        wanting.append(NO_TORCH_SPYRE_KERNEL)
    if report.run_error is None and not report.matches_eager:
        wanting.append(f"the compiled output does not match eager (max abs error {report.max_abs_error:.3g})")
    for graph in report.graphs:
        if not graph.diagnostics.complete:
            d = graph.diagnostics
            why = "; ".join(d.faults) or (
                "no mapping was built"
                if graph.node_mappings is None
                else f"coverage incomplete ({len(d.violations)} violation(s))"
            )
            wanting.append(f"graph {graph.compile_id} {graph.kind}: {why}")
    if checked is not None:
        wanting += [f"invalid artifact: {problem}" for problem in checked.invalid]
        for graph, logged in zip(report.graphs, checked.paired, strict=True):
            if logged is None:
                wanting.append(f"graph {graph.compile_id} {graph.kind}: the log holds no code for it")
        wanting += [
            f"graph {g.compile_id}: its coverage on the log is not complete" for g in checked.graphs if not g.complete
        ]
    if audit is not None:
        wanting += audit.problems
        unusable += [str(audit.refused)] if audit.refused is not None else []
    return Verdict.judge(wanting=wanting, unusable=unusable)


def _compile(
    request: CompileRequest, layout: Layout | None, announce: Callable[[str], None] | None, *, ranked: bool = False
) -> CompileOutcome:
    """``_tracked_compile``, with ``request.profile`` under the profiler."""
    if not request.profile or layout is None:
        return _tracked_compile(request, layout, announce, ranked=ranked)
    from spyre_provenance.compile import profile as profiled_run

    with profiled_run.profiling(layout) as profiler:
        return _tracked_compile(request, layout, announce, ranked=ranked, profiler=profiler)


def _tracked_compile(
    request: CompileRequest,
    layout: Layout | None,
    announce: Callable[[str], None] | None,
    *,
    ranked: bool = False,
    profiler: Profiler | None = None,
) -> CompileOutcome:
    """The tracked compile of ``request.model`` into ``layout`` (None: nothing written), checked.
    ``ranked``: a rank of ``compile --ranks`` (its trace folder is set already, and a
    compiled run that fails, a peer gone, keeps the artifacts its compile wrote)."""
    from spyre_provenance.audit import report as provenance_audit

    previous = (
        provenance_audit.read(request.audit_against) if request.audit_against is not None else None
    )  # exit 2 fast
    out = layout.out if layout is not None else None
    if layout is not None and not ranked:  # a rank pointed it before joining its group
        _point_trace_at(layout.trace_dir)
    backend, choice = _backend(request, layout)  # may import torch_spyre, and so torch: after the line above
    if request.backend == "auto" and announce is not None:
        announce(choice)

    from spyre_provenance.compile import run as compile_run
    from spyre_provenance.compile.examples import ModelLoadError
    from spyre_provenance.compile.output_check import check_outputs

    # everything that can refuse the model happens before ``out`` is touched
    try:
        if request.instance is not None:
            module, inputs = request.instance
            loaded = compile_run.LoadedModel(
                request.model, module, [tuple(inputs)], request.dtype or compile_run.AS_BUILT
            )
        else:
            loaded = compile_run.load(request.model, request.dtype)
        reference = compile_run.run_eager(loaded, train=request.train)
    except (ModelLoadError, compile_run.NotCompilable) as exc:
        raise UnusableInput(request.model, str(exc)) from None
    created = [p for p in (out, layout.trace_dir if layout else None) if p is not None and not p.exists()]
    if layout is not None:
        _prepare(layout, model_origin(request))
    try:
        report = compile_run.compile_model(
            loaded,
            reference,
            backend=backend,
            layout=layout,
            train=request.train,
            redact_paths=request.redact_paths,
            keep_run_failure=ranked,
            audit=request.audit,
            after_run=profiler.after_run if profiler is not None else None,
        )
    except UnsupportedTorch:  # enable() refused this torch before compiling: its own line
        _discard(layout, created)
        raise
    except compile_run.NotCompilable as exc:  # the device cannot hold the model: its own line
        _discard(layout, created)
        raise UnusableInput(request.model, str(exc)) from None
    except Exception as exc:  # noqa: BLE001 - see below
        # the model ran eagerly, so torch.compile refused it: the input, in one line
        _discard(layout, created)
        raise UnusableInput(request.model, f"torch.compile failed: {_cause_line(exc)}") from None
    except BaseException:
        _discard(layout, created)  # a failed run leaves no half-named log, no stale folder
        raise

    checked, audit = None, None
    pages: list[Path] = []
    page_problems: list[str] = []
    if layout is not None:
        log = _claim_trace_log(layout.trace_log)
        checked = check_outputs(layout.graph_folders(), log, report.graphs)
        tlparse = tlparse_binary()
        if log is not None and request.tlparse and tlparse:
            pages, page_problems = _graph_pages(tlparse, log, layout.pages)
        if request.audit:
            audit = _write_audit(report, layout, previous, request.audit_against)
    profile = profiler.finish() if profiler is not None else None
    viewer = None
    if layout is not None and request.viewer and report.graphs:  # last: the page shows every file written
        from spyre_provenance.viewer.page import beside

        viewer = beside(layout.out)
    return CompileOutcome(
        request,
        out,
        choice,
        report,
        checked,
        pages,
        page_problems,
        audit,
        judge(report, checked, audit),
        profile=profile,
        viewer=viewer,
    )


def _write_audit(report: CompileReport, layout: Layout, previous: AuditV1 | None, against: Path | None) -> AuditFiles:
    from spyre_provenance.audit import report as provenance_audit
    from spyre_provenance.compile.audit_files import build, write

    document = build(report)
    changes = provenance_audit.compare(previous, document) if previous is not None else None
    try:
        written, problems = write(report, layout, document, changes, str(against) if against is not None else None)
    except UnusableInput as exc:
        return AuditFiles(document, changes, [], [], refused=exc)
    return AuditFiles(document, changes, written, problems)


def _backend(request: CompileRequest, layout: Layout | None) -> tuple[Backend, str]:
    """The compile's one backend instance, built with the options that are its own (its
    bundle folder; the reference backend's kernel cache; stock Inductor's mapping completed
    beyond upstream), and one line saying which and why. ``spyre`` is refused (one line,
    exit 2) when the adapter cannot install on torch-spyre, ``--kernel-cache`` on any
    backend but the reference."""
    from spyre_provenance.backends import choose_backend, torch_spyre

    if request.backend == "spyre":
        usable, why = torch_spyre.probe()
        if not usable:
            raise UnusableInput("--backend spyre", why)
    chosen, line = choose_backend(
        request.backend,
        bundle_dir=layout.bundle_root if layout is not None else None,
        kernel_cache=request.kernel_cache,
        beyond_upstream=request.beyond_upstream,
    )
    if request.kernel_cache and chosen.name != "reference":
        name = chosen.name if request.backend == "auto" else request.backend
        raise UnusableInput("--kernel-cache", f"models torch-spyre's kernel cache on the reference backend, not {name}")
    return chosen, line


#: torch's trace handler while no compile of ours is under way (``_claim_trace_log``)
_PARKED: list[Any] = []


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
    trace_logger = logging.getLogger("torch.__trace")
    if handler is not None and handler in _PARKED:  # set aside by the previous compile's claim
        _PARKED.remove(handler)
        trace_logger.addHandler(handler)
    if handler is None or close is None or handler not in trace_logger.handlers:
        raise UnusableInput("TORCH_TRACE", "torch was imported before the trace folder was set")
    handler.acquire()
    try:
        close()
        handler.root_dir = str(trace_dir)
    finally:
        handler.release()


def _graph_pages(tlparse: str, log: Path, out: Path) -> tuple[list[Path], list[str]]:
    """One provenance page per graph (forward and backward apart); none, and why, when
    tlparse fails."""
    try:
        return [page.page for page in render_pages(tlparse, log, out) if page.has_mapping], []
    except TlparseError as exc:
        return [], [str(exc)]


def model_origin(request: CompileRequest) -> str:
    """What a label stands for: a file model's resolved path and factory, or the name."""
    if ":" in request.model and request.instance is None:
        path, _, factory = request.model.partition(":")
        return f"{Path(path).resolve()}:{factory}"
    return request.model


def _prepare(layout: Layout, origin: str) -> None:
    """Remove this model's output of an earlier run, and nothing else: another model's
    folders and logs (maybe being written right now by another run) stay untouched. A label
    ``out`` already holds for another model is refused (exit 2) before anything is removed.
    ``compile_request`` has refused an ``out`` that is not a folder."""
    try:
        held = layout.origin_marker.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        held = None
    if held and held != origin:
        raise UnusableInput(
            str(layout.out),
            f"holds the output of {held} under the label {layout.label!r}; {origin} would replace it: use another --out",
        )
    if layout.out.is_dir():
        remove_stale_temporaries(layout.out)  # a killed writer's leftovers; live writers' stay
        for folder in layout.own_folders():
            if folder.is_dir():
                shutil.rmtree(folder)
        layout.trace_log.unlink(missing_ok=True)
    layout.trace_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_text(layout.origin_marker, origin + "\n")


_LINE = 400  # characters of a refusal's reason


def _cause_line(exc: BaseException) -> str:
    """What refused the compile, in one line: the innermost exception of the chain Dynamo
    and Inductor wrap it in (``BackendCompilerFailed``'s own first line says only which
    backend raised; the backend's error, torch-spyre's ``Unsupported: ...``, is inside)."""
    seen = {id(exc)}
    while True:
        inner = exc.__cause__ or getattr(exc, "inner_exception", None)  # Dynamo's and Inductor's wrappers
        if not isinstance(inner, BaseException) or id(inner) in seen:
            # one line, whitespace collapsed: torch-spyre's messages may hold an IR repr
            # over several lines (``TensorBox(StorageBox(`` ... ``does not have ...``)
            text = " ".join(str(exc).split()) or "(no message)"
            return f"{type(exc).__name__}: {text if len(text) <= _LINE else text[: _LINE - 3] + '...'}"
        seen.add(id(inner))
        exc = inner


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else "(no message)"


def _discard(layout: Layout | None, created: list[Path]) -> None:
    """Remove what this run wrote: its graph folders, bundles and pages, torch's log of it
    under its temporary name, and the folders it created when they hold nothing else.
    Another model's output stays. Nothing to do for a run that writes nothing."""
    if layout is None:
        return
    for folder in layout.own_folders():
        shutil.rmtree(folder, ignore_errors=True)
    log = _claim_trace_log(layout.trace_log)
    if log is not None:
        log.unlink(missing_ok=True)
    layout.origin_marker.unlink(missing_ok=True)
    for folder in [*layout.shared_folders(), *sorted(created, key=lambda p: -len(p.parts))]:
        with contextlib.suppress(OSError):
            folder.rmdir()  # only when empty


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
    give_plain_mode(path)  # torch made it with tempfile, 0600: a compile's files are the umask's
    os.replace(path, target)
    # The log is this compile's, whole: torch would keep writing to the renamed file, so a
    # later compile in this process (the Python API, a notebook, a test session) would land
    # in a finished out folder's log. Its stream ends here, and the handler is set aside until
    # the next compile points it at its own folder (``_point_trace_at``); meanwhile torch's
    # structured trace has no handler, as in a process without TORCH_TRACE.
    handler.acquire()
    try:
        handler._close_stream()
    finally:
        handler.release()
    logging.getLogger("torch.__trace").removeHandler(handler)
    _PARKED.append(handler)
    return target
