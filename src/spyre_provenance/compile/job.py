"""The door of a compile: a ``CompileRequest`` in, a ``CompileOutcome`` out.

``compile_request`` is the one compile path: the ``compile`` command, the ``audit`` command,
each case of ``golden`` (a ``compile`` in its own process), the pytest fixture and the
Python API all call it. Read it top to bottom:

- ``compile_request``: refuse a request that contradicts itself, then one of three ways:
  a single compile; with ``ranks``, the parent (``compile.ranks`` starts each rank through
  torchrun's launcher, with the arguments ``compile.request.command_line`` spells); or, in
  a process torchrun started, that one rank (``_compile_rank``);
- ``_tracked_compile``: the compile itself, as named steps in the order they must run;
- the steps, each a short function below it.

With ``out``, the compile writes into that folder, everything named after the model's label
(``compile.request.label_of``); where each file goes is ``model.layout.Layout``, built once
here and handed down whole; the folder's lifecycle (prepared, claimed, a failed run
discarded) is ``compile.out_folder``'s, torch's trace log ``capture.trace_log``'s. Without
``out`` nothing is written and the verdict is on the hook's records alone (the pytest
fixture). The verdict is ``compile.outcome.judge``'s; its ``exit_code`` is what ``compile``
exits with.

Input that cannot be compiled (the model does not load or fails eagerly, torch.compile
refuses it, ``out`` is a file) raises ``UnusableInput`` before anything is written; a
compile that ran always gets a verdict.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from spyre_provenance.base.errors import UnsupportedTorch, UnusableInput
from spyre_provenance.capture import trace_log
from spyre_provenance.compile import eager, out_folder
from spyre_provenance.compile.outcome import AuditFiles, CompileOutcome, judge
from spyre_provenance.compile.request import CompileRequest, resolved_model
from spyre_provenance.logs.tlparse_render import tlparse_binary
from spyre_provenance.model.layout import Layout
from spyre_provenance.validate.read_once import reading_once
from spyre_provenance.viewer.pages import Pages
from spyre_provenance.viewer.pages import write as write_pages

if TYPE_CHECKING:
    from spyre_provenance.backends.base import Backend
    from spyre_provenance.compile.eager import LoadedModel
    from spyre_provenance.compile.output_check import OutputCheck
    from spyre_provenance.compile.profile import Profiler
    from spyre_provenance.compile.ranks import RanksOutcome
    from spyre_provenance.compile.tracked import CompileReport
    from spyre_provenance.model.audit_records import AuditV1

#: the door's request and outcome, as its callers (the command line, the fixture) name them
__all__ = ["AuditFiles", "CompileOutcome", "CompileRequest", "compile_request", "judge"]

Announce = Callable[[str], None]


def compile_request(request: CompileRequest, *, announce: Announce | None = None) -> CompileOutcome | RanksOutcome:
    """Compile as ``request`` says, check what was written, judge it. ``announce`` is told
    the backend ``auto`` chose, and why, before the compile starts (the command line prints
    it). With ``ranks``, torchrun's launcher starts one process per rank (``compile.ranks``)
    and the outcome is theirs, a ``RanksOutcome``; in a process torchrun started, the
    request is that one rank's compile. Raises UnusableInput for input that cannot be
    compiled."""
    _refuse_contradictions(request)
    layout = Layout(request.out, request.label) if request.out is not None else None
    if request.ranks is None:
        if layout is not None:
            out_folder.refuse_file(layout.out)
        return _tracked_compile(request, layout, announce)
    from spyre_provenance.compile import process_group

    assert layout is not None  # _refuse_contradictions: ranks write into an out folder
    started = process_group.started_by_torchrun()
    if started is None:  # the parent: torchrun's launcher starts a process per rank
        from spyre_provenance.compile import ranks

        return ranks.compile_ranks(request, layout)
    return _compile_rank(request, layout, *started, announce)


def _refuse_contradictions(request: CompileRequest) -> None:
    if request.instance is not None and request.dtype is not None:
        raise UnusableInput(request.model, "a model handed in is compiled as built: cast it, not the request")
    if request.audit_against is not None and not request.audit:
        raise UnusableInput("--against", "compares a compile's provenance audit with a previous one: add --audit")
    if request.ranks is not None and (request.out is None or request.instance is not None):
        raise UnusableInput("--ranks", "a multi-rank run compiles a model by its name into an out folder")


def _compile_rank(
    request: CompileRequest, layout: Layout, rank: int, world_size: int, announce: Announce | None
) -> CompileOutcome:
    """One rank of ``compile --ranks N``, in a process torchrun started: it joins the group
    and compiles into ``out/rank<r>/``."""
    from spyre_provenance.compile import process_group

    if world_size != request.ranks:
        raise UnusableInput("--ranks", f"{request.ranks}, but torchrun started {world_size} rank(s) (WORLD_SIZE)")
    out_folder.refuse_file(layout.out)
    ranked = layout.rank(rank)
    out_folder.refuse_file(ranked.out)
    process_group.finish_when_stopped()
    trace_log.point_at(ranked.trace_dir)  # before torch is imported, and so before the group exists
    try:
        # before the model loads (its factory may read its rank) and before torch logs a
        # record: torch names the log after the rank and stamps the rank on every record
        process_group.join(rank, world_size)
    except Exception as exc:  # noqa: BLE001 - whatever joining raises (gloo, rendezvous): the rank's one line
        process_group.note_failure()
        raise UnusableInput(
            f"rank {rank}", f"cannot join the process group: {type(exc).__name__}: {_first_line(exc)}"
        ) from None
    try:
        return _tracked_compile(request, ranked, announce, ranked=True)
    except BaseException:
        process_group.note_failure()  # before leaving: its peers see it gone only then
        raise
    finally:
        process_group.leave()


def _tracked_compile(
    request: CompileRequest, layout: Layout | None, announce: Announce | None, *, ranked: bool = False
) -> CompileOutcome:
    """The tracked compile of ``request.model`` into ``layout`` (None: nothing written),
    checked and judged. ``ranked``: a rank of ``compile --ranks`` (its trace folder is set
    already, and a compiled run that fails, a peer gone, keeps the artifacts its compile
    wrote). The steps, in the order they must run:"""
    with _profiler(request, layout) as profiler:  # first: before torch is imported
        previous = _previous_audit(request)  # a bad --against: exit 2 before any work
        backend, choice = _trace_then_backend(request, layout, announce, ranked=ranked)
        loaded, reference = _load_and_run_eager(request)  # all that may refuse the model, before out is touched
        report = _compile_into(layout, request, loaded, reference, backend, ranked=ranked, profiler=profiler)
        with reading_once():  # the viewer's page is built from what the check read and validated
            written = _read_back(request, layout, report, previous)  # the log claimed, outputs checked, audit
            pages = _pages(request, layout, report, written.log, profiler)  # profile, tlparse's, the viewer's
    return CompileOutcome(
        request,
        layout.out if layout is not None else None,
        choice,
        report,
        written.checked,
        [page.page for _, page in pages.graphs if page.has_mapping],
        [tlparse.what] if (tlparse := pages.tlparse_problem) is not None else [],
        written.audit,
        judge(report, written.checked, written.audit),
        profile=pages.profile.path if pages.profile is not None else None,
        viewer=pages.viewer.path if pages.viewer is not None else None,
        viewer_problem=pages.viewer.problem if pages.viewer is not None else None,
        profile_problem=pages.profile.problem if pages.profile is not None else None,
        profile_summary=pages.profile.summary if pages.profile is not None else None,
    )


def _profiler(request: CompileRequest, layout: Layout | None) -> contextlib.AbstractContextManager[Profiler | None]:
    """With ``request.profile``, the profiler the compiled model is rerun under
    (``compile.profile``), Inductor's kernel profiling on for the whole compile; else none."""
    if not request.profile or layout is None:
        return contextlib.nullcontext()
    from spyre_provenance.compile import profile as profiled_run

    return profiled_run.profiling(layout)


def _previous_audit(request: CompileRequest) -> AuditV1 | None:
    """``--against``'s audit, read before anything else: a file that is no audit exits 2 fast."""
    if request.audit_against is None:
        return None
    from spyre_provenance.audit import report as provenance_audit

    return provenance_audit.read(request.audit_against)


def _trace_then_backend(
    request: CompileRequest, layout: Layout | None, announce: Announce | None, *, ranked: bool
) -> tuple[Backend, str]:
    """torch's trace pointed at the out folder, then the backend built: building it may
    import torch_spyre, and so torch, which reads ``TORCH_TRACE`` once as it is imported. A
    rank pointed its trace before joining its group. ``auto``'s choice is announced."""
    if layout is not None and not ranked:
        trace_log.point_at(layout.trace_dir)
    backend, choice = _backend(request, layout.bundle_root if layout is not None else None)
    if request.backend == "auto" and announce is not None:
        announce(choice)
    return backend, choice


def _load_and_run_eager(request: CompileRequest) -> tuple[LoadedModel, list[Any]]:
    """The model (handed in, or loaded by name) and its eager reference run: a model that
    does not load or fails eagerly is refused (exit 2) here, before ``out`` is touched."""
    from spyre_provenance.compile.examples import ModelLoadError

    try:
        if request.instance is not None:
            module, inputs = request.instance
            dtype = request.dtype or eager.AS_BUILT
            loaded = eager.LoadedModel(request.model, module, [tuple(inputs)], dtype)
        else:
            loaded = eager.load(request.model, request.dtype)
        return loaded, eager.run_eager(loaded, train=request.train)
    except (ModelLoadError, eager.NotCompilable) as exc:
        raise UnusableInput(request.model, str(exc)) from None


def _compile_into(
    layout: Layout | None,
    request: CompileRequest,
    loaded: LoadedModel,
    reference: list[Any],
    backend: Backend,
    *,
    ranked: bool,
    profiler: Profiler | None,
) -> CompileReport:
    """The tracked ``torch.compile`` (``compile.tracked.compile_model``) into the out folder,
    claimed for this model first; a run that fails discards what it wrote
    (``out_folder.claimed``) and says why in one line (``_refusals``)."""
    from spyre_provenance.compile import tracked

    with out_folder.claimed(layout, resolved_model(request)), _refusals(request.model):
        return tracked.compile_model(
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


@contextlib.contextmanager
def _refusals(model: str) -> Iterator[None]:
    """What a failed compile raises, as the one line the command prints (exit 2): the model
    ran eagerly, so an error here is torch.compile refusing it."""
    try:
        yield
    except UnsupportedTorch:  # enable() refused this torch before compiling: its own line
        raise
    except eager.NotCompilable as exc:  # the device cannot hold the model: its own line
        raise UnusableInput(model, str(exc)) from None
    except Exception as exc:  # noqa: BLE001 - the model's compile, whatever it raised: one line
        raise UnusableInput(model, f"torch.compile failed: {_cause_line(exc)}") from None


class _Written(NamedTuple):
    checked: OutputCheck | None  # None when nothing was written
    log: Path | None  # the model's log, claimed
    audit: AuditFiles | None


def _read_back(
    request: CompileRequest, layout: Layout | None, report: CompileReport, previous: AuditV1 | None
) -> _Written:
    """What the compile wrote, read back: its log claimed under the model's name, the
    artifacts checked against the log, the audit files."""
    if layout is None:
        return _Written(None, None, None)
    from spyre_provenance.compile.output_check import check_outputs

    log = out_folder.claim_log(layout)
    checked = check_outputs(layout.graph_folders(), log, report.graphs)
    audit = _write_audit(report, layout, previous, request.audit_against) if request.audit else None
    return _Written(checked, log, audit)


def _pages(
    request: CompileRequest, layout: Layout | None, report: CompileReport, log: Path | None, profiler: Profiler | None
) -> Pages:
    """The out folder's pages (``viewer.pages.write``): the profile annotated from the claimed
    log, tlparse's pages of it, and the viewer's page, last: it shows every file written."""
    if layout is None:
        return Pages()
    return write_pages(
        layout.out,
        layout.pages,
        tlparse=tlparse_binary() if log is not None and request.tlparse else None,
        viewer=request.viewer and bool(report.graphs),
        logs=[log] if log is not None else [],
        profile=profiler.run if profiler is not None else None,
    )


def _write_audit(report: CompileReport, layout: Layout, previous: AuditV1 | None, against: Path | None) -> AuditFiles:
    from spyre_provenance.audit import report as provenance_audit
    from spyre_provenance.compile.audit_files import build, write

    document = build(report)
    changes = provenance_audit.changes_between(previous, document) if previous is not None else None
    try:
        written, problems = write(report, layout, document, changes, str(against) if against is not None else None)
    except UnusableInput as exc:
        return AuditFiles(document, changes, [], [], refused=exc)
    return AuditFiles(document, changes, written, problems)


def _backend(request: CompileRequest, bundle_dir: Path | None) -> tuple[Backend, str]:
    """The compile's one backend instance, built with the options that are its own (its
    bundle folder, ``bundle_dir``; the reference backend's kernel cache; stock Inductor's
    mapping completed beyond upstream), and one line saying which and why. ``spyre`` is
    refused (one line, exit 2) when the adapter cannot install on torch-spyre,
    ``--kernel-cache`` on any backend but the reference."""
    from spyre_provenance.backends import choose_backend
    from spyre_provenance.backends import spyre as spyre_backend

    if request.backend == "spyre":
        usable, why = spyre_backend.probe()
        if not usable:
            raise UnusableInput("--backend spyre", why)
    chosen, line = choose_backend(
        request.backend,
        bundle_dir=bundle_dir,
        kernel_cache=request.kernel_cache,
        beyond_upstream=request.beyond_upstream,
    )
    if request.kernel_cache and chosen.name != "reference":
        name = chosen.name if request.backend == "auto" else request.backend
        raise UnusableInput("--kernel-cache", f"models torch-spyre's kernel cache on the reference backend, not {name}")
    return chosen, line


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
