"""The hook: collect one KernelRecord per kernel call site, emit the mapping per graph.

Two seams in Inductor, both patched only while tracking is enabled:

* ``set_kernel_post_grad_provenance_tracing`` - every scheduling backend calls it when it
  emits a kernel call (right after ``define_kernel``), and it hands out the N of the
  ``[Provenance debug handles] name:N`` comment. Wrapping it means our N is Inductor's N by
  construction, extern kernels and fallbacks included. Backends import it by name, so the
  hook patches every module that holds a reference (``Backend.tracing_modules``).
* ``torch._inductor.debug.dump_inductor_provenance_info`` - compile_fx calls it once per
  graph after code generation and logs what it returns as the graph's
  ``inductor_provenance_tracking_node_mappings``. Answering it with our mapping makes ours
  the only mapping artifact of the graph (never a second, contradicting one), and puts it
  into the FX-graph cache entry, so cache hits replay it (with the rest: ``graph_cache``).

Nothing in here may break a compile: every stage runs under ``Faults.stage``
(``capture.faults``), which turns an exception into one warning and a diagnostics entry,
and marks the graph partial. What tracking changes in Inductor beyond the two seams (fallbacks'
handle comments, the audit's observers) is ``capture.inductor_setup``; how its graph caches
stay on and a hit is recorded as its miss was, ``capture.graph_cache``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from spyre_provenance.backends.base import TRACING_FUNCTION, Backend
from spyre_provenance.base.patches import Patches
from spyre_provenance.capture import call_recording, emit, graph_cache, inductor_setup
from spyre_provenance.capture.faults import Faults
from spyre_provenance.capture.inductor import Inductor
from spyre_provenance.links import inference, mapping
from spyre_provenance.model import folders
from spyre_provenance.model.layout import Layout
from spyre_provenance.model.names import DIAGNOSTICS, KERNEL_STACK_TRACES, MODEL_LABEL, OPSPEC_DEBUG_HANDLES
from spyre_provenance.model.post_grad_graph import PreGradSubgraphs
from spyre_provenance.model.records import BundleHandlesV4, GraphDiagnostics, GraphResult, KernelRecord, RandomOp
from spyre_provenance.validate import coverage, schemas
from spyre_provenance.validate.kinds import KINDS

DUMP_FUNCTION = "dump_inductor_provenance_info"
#: compile_fx's function that logs the pre-grad graph (``before_pre_grad_graph``) and runs
#: the pre-grad passes: where the pre-grad graph's subgraphs can be read
PRE_GRAD_FUNCTION = "run_pre_grad_passes"


class _Built:
    """What a graph's build stage got to, kept as far as it got: the judge reads the graph
    model and the links left out even when a later step of the build failed."""

    def __init__(self) -> None:
        self.graph_model: Any = None
        self.done = False
        self.not_taken: tuple[list, list] = ([], [])  # inferences stock Inductor's mapping leaves out
        self.hidden: dict[str, list[str]] = {}  # links taken out: the page would light another node
        self.left_out: dict[str, list[str]] = {}  # kernel -> post-grad names taken out, for the same reason


class Session:
    """One enable() .. disable() span: the patches, and what each graph produced.

    ``enable`` and ``tracking`` make it and return it (a caller never does); read it after
    the compiles (or after ``disable``).

    :ivar results: one ``GraphResult`` per compiled graph, in compile order (a training
        compile: forward, then backward; a graph break: one per frame).
    :ivar backend: the backend adapter in use (``backend.name``: reference, spyre, inductor).
    :ivar label: the model label graph folders are named with (None: ``graph_00_...``).
    """

    def __init__(
        self,
        backend: Backend,
        layout: Layout | None,
        label: str | None = None,
        redactor: Any = None,
        inductor: Inductor | None = None,
        audit: bool = False,
    ) -> None:
        self.backend = backend
        self.inductor = inductor if inductor is not None else Inductor()  # what is read from Inductor
        self.layout = layout
        self.label = layout.label if layout is not None else label
        self.redactor = redactor  # a redact.Redactor: paths in written/emitted artifacts rewritten
        self.results: list[GraphResult] = []
        self._pending: dict[int, list[KernelRecord]] = {}
        self.faults = Faults(redactor)  # what failed, per graph: never raised into the compile
        self._patches = Patches()
        self._pre_grad_ids: dict[str, int] = {}  # compile id -> its pre-grad graph's id
        #: compile id -> its forward graph's seq_nr -> pre-grad nodes (``inference.forward_links``)
        #: and its postToPre (the backward's inputs are the forward's saved values, by name)
        self._forward_links: dict[str, tuple[dict[int, list[str]], dict[str, list[str]]]] = {}
        self._current: tuple[int, GraphResult] | None = None  # the graph _finish_graph is on
        #: pre-grad graph id -> its higher-order ops' subgraphs (or why they could not be read)
        self._subgraphs: dict[int, PreGradSubgraphs | str] = {}
        self._first: int | None = None  # the order of this session's first graph folder
        self._moved_post_grad: dict[int, str] = {}  # graph key -> its post-grad graph logged again
        #: counts the provenance fields of every stage (``audit=True``); None: no audit, no cost
        self.probe = None
        if audit:  # imported only then: a compile without the audit pays nothing for it
            from spyre_provenance.capture.audit_probe import AuditProbe

            self.probe = AuditProbe()

    # -- install / uninstall ---------------------------------------------------------------

    def install(self) -> None:
        import torch._inductor.codegen.cpp as cpp_codegen
        import torch._inductor.compile_fx as compile_fx
        import torch._inductor.debug as inductor_debug
        from torch._inductor.graph import GraphLowering

        self.backend.install(self)
        # the tracing function is held by name in each module that calls it
        modules = [inductor_debug, cpp_codegen, *self.backend.tracing_modules()]
        self._patches.wrap_everywhere(modules, TRACING_FUNCTION, self._wrap_tracing)
        self._patches.wrap(inductor_debug, DUMP_FUNCTION, self._wrap_dump)
        self._patches.wrap(GraphLowering, "__init__", self._wrap_graph_init)
        self._patches.wrap(compile_fx, PRE_GRAD_FUNCTION, self._wrap_pre_grad)
        # on stock Inductor too: torch's own mapping then lists them
        inductor_setup.announce_fallbacks(self._patches, self.faults.fault)
        inductor_setup.keep_provenance_on(self._patches)
        if self.probe is None:
            graph_cache.keep(self._patches, self)
        else:  # the audit counts what every stage carries: only a compile has stages
            inductor_setup.bypass_graph_caches(self._patches)
        call_recording.record_call_sites(self._patches)  # who called each graph, in a profiled run's trace
        self.inductor.reset_handle_counter()  # same model, same N, whatever this process compiled before
        if self.probe is not None:
            inductor_setup.observe_for_audit(self._patches, self.probe, self.inductor, self.backend)

    def uninstall(self) -> None:
        try:
            self._patches.undo()
        finally:
            self.backend.uninstall()

    # -- seam 1: one record per call site ---------------------------------------------------

    def _wrap_tracing(self, original):
        def set_kernel_post_grad_provenance_tracing(node_schedule, kernel_name, is_extern=False):
            handle = original(node_schedule, kernel_name, is_extern)
            if handle is not None:
                try:
                    self._record(node_schedule, kernel_name, handle, is_extern)
                except Exception as exc:  # noqa: BLE001 - a bug outside the stages: still never fail
                    self.faults.fault("record collection", None, exc)
            return handle

        set_kernel_post_grad_provenance_tracing.__wrapped__ = original
        return set_kernel_post_grad_provenance_tracing

    def _wrap_graph_init(self, original):
        def __init__(graph: Any, *args: Any, **kwargs: Any) -> None:
            original(graph, *args, **kwargs)
            try:
                self.inductor.note_logged_post_grad_graph(graph)
            except Exception as exc:  # noqa: BLE001 - never break a compile
                self.faults.fault("record collection", None, exc)

        __init__.__wrapped__ = original
        return __init__

    def _log_moved_post_grad_graph(self, graph: Any, graph_key: int) -> None:
        """Log the post-grad graph again when the backend's own passes changed it after
        compile_fx logged it (torch-spyre inserts ``restickify_default*``, ``clone``s and
        ``constant_default*`` in its pre-scheduling passes): the kernels and handles name
        those nodes, so the graph the page shows and the log's coverage check read must
        hold them. Runs at a graph's first call site: every pass has run by then, and the
        wrapper code, which ends a graph in the log, is not logged yet."""
        with self.faults.stage("emit", graph_key):
            if self.inductor.post_grad_graph_moved(graph):
                self._moved_post_grad[graph_key] = self.inductor.log_post_grad_graph(graph)

    def _record(self, node_schedule: Any, kernel_name: str, handle: int, is_extern: bool) -> None:
        graph = self.inductor.graph()
        graph_key = id(graph)
        if graph_key not in self._pending:
            self._log_moved_post_grad_graph(graph, graph_key)
        record = None
        with self.faults.stage("record collection", graph_key):
            record = KernelRecord(
                name=str(kernel_name),
                handle=int(handle),
                post_grad_nodes=self.inductor.origin_names(node_schedule, is_extern),
                is_extern=is_extern,
                stack_traces=self.inductor.stack_traces(node_schedule, is_extern),
                module_stacks=self.inductor.module_stacks(node_schedule, is_extern),
            )
            record.held_by = self.inductor.holders()
            if not is_extern and not record.held_by:
                record.consumers = self.inductor.consumers(node_schedule, record.post_grad_nodes)
        if self.probe is not None:
            self.probe.call_site(graph_key, node_schedule, is_extern)
        if record is None:
            return
        with self.faults.stage("get_kernel_metadata", graph_key):
            record.source_nodes, record.original_aten = self.inductor.kernel_metadata(node_schedule)
        if not is_extern:
            with self.faults.stage("OpSpec handle reading", graph_key):
                record.opspecs = self.backend.opspecs_for(kernel_name, node_schedule)
            for spec in record.opspecs or ():
                if spec.missing_handle:  # counted in handleless_opspecs too, by mapping.cross_check
                    self.faults.note(
                        "OpSpec handle reading",
                        graph_key,
                        f"{record.key}: {spec.buffer or '?'} ({spec.op}) has no debug handle: {spec.missing_handle}",
                    )
        for fault in self.backend.take_faults():
            self.faults.note(fault.stage, graph_key, fault.error)
        self._pending.setdefault(graph_key, []).append(record)

    def record_call_site(self, node_schedule: Any, kernel_name: str) -> int | None:
        """For backends that write no handle comment: take an N and write the comment.

        Goes through Inductor's own tracing function so the counter stays shared with
        extern kernels; the comment lands on the line before the call the backend is
        about to write.
        """
        import torch._inductor.debug as inductor_debug
        from torch._inductor.virtualized import V

        handle = None
        with self.faults.stage("record collection", id(V.graph)):
            handle = getattr(inductor_debug, TRACING_FUNCTION)(node_schedule, kernel_name)
            if handle is not None:
                V.graph.wrapper_code.write_provenance_debug_handle(kernel_name, handle)
        return handle

    # -- seam 2: the graph is complete -----------------------------------------------------

    def _wrap_dump(self, original):
        def dump_inductor_provenance_info():
            upstream = original()
            try:
                ours = self._finish_graph(upstream)
            except Exception as exc:  # noqa: BLE001 - a bug outside the stages: log upstream's
                self.faults.fault("build", None, exc)
                self._abandon_current()
                ours = None
            return upstream if ours is None else ours

        dump_inductor_provenance_info.__wrapped__ = original
        return dump_inductor_provenance_info

    def _wrap_pre_grad(self, original):
        def run_pre_grad_passes(model_, example_inputs_):
            try:  # the graph as compile_fx logs it, before any pass: the ids from_node names
                self._subgraphs[id(model_.graph)] = self.inductor.pre_grad_subgraphs(model_)
            except Exception as exc:  # noqa: BLE001 - noted on the graphs it would have served
                self._subgraphs[id(model_.graph)] = f"{type(exc).__name__}: {exc}"
            return original(model_, example_inputs_)

        run_pre_grad_passes.__wrapped__ = original
        return run_pre_grad_passes

    def _pre_grad_subgraphs(self, pre_grad_id: int | None, graph_key: int) -> PreGradSubgraphs:
        read = self._subgraphs.get(pre_grad_id, PreGradSubgraphs()) if pre_grad_id is not None else PreGradSubgraphs()
        if isinstance(read, str):
            self.faults.note("build", graph_key, f"the pre-grad graph's subgraphs could not be read: {read}")
            return PreGradSubgraphs()
        return read

    def _finish_graph(self, upstream: dict[str, Any]) -> dict[str, Any] | None:
        """Build, validate, emit; returns the mapping compile_fx should log, or None.

        None means "fall back to upstream's own mapping": it is upstream-correct for what
        upstream knows, so the log never holds a mapping that is wrong.
        """
        self._current = None
        graph = self.inductor.graph()
        graph_key = id(graph)
        result = self._open_result(graph, graph_key, upstream)
        built = _Built()
        with self.faults.stage("build", graph_key):
            self._build(result, graph, upstream, built)
        validated = built.done and self._validate(result, graph_key)
        if validated:
            self._emit(result, graph_key)
        else:  # never emit what we could not check
            result.node_mappings = result.stack_traces = result.opspec_handles = None
            result.diagnostics.mapping = "upstream"
        linked: list[str] = []
        with self.faults.stage("build", graph_key):
            linked = self._judge(result, graph, upstream, built)
        if self.probe is not None:
            logged = msgspec.to_builtins(result.node_mappings) if result.node_mappings is not None else upstream
            self.probe.finish(graph_key, graph, result, logged, linked)
        self._emit_diagnostics(result, graph_key)
        return None if not validated else msgspec.to_builtins(result.node_mappings)

    def _open_result(self, graph: Any, graph_key: int, upstream: dict[str, Any]) -> GraphResult:
        """The graph's result, counted before anything can fail, with its bundles checked."""
        records = self._pending.pop(graph_key, [])
        compile_id = "unknown"  # a graph whose id cannot be read is still counted, and partial
        with self.faults.stage("build", graph_key):
            compile_id = self.inductor.compile_id()
        result = GraphResult(
            label=self.label,
            backend=self.backend.name,
            index=len(self.results),
            compile_id=compile_id,
            kind=self.inductor.graph_kind(graph),
            records=records,
            node_mappings=None,
            stack_traces=None,
            opspec_handles=None,
            upstream_node_mappings=upstream or None,
            diagnostics=GraphDiagnostics(),
            moved_post_grad=self._moved_post_grad.pop(graph_key, None),
        )
        self.results.append(result)
        self._current = (graph_key, result)
        with self.faults.stage("OpSpec handle reading", graph_key):
            result.diagnostics.bundle_handles = self._check_bundles(records, graph_key)
        for fault in self.backend.take_faults():
            self.faults.note(fault.stage, graph_key, fault.error)
        return result

    def _build(self, result: GraphResult, graph: Any, upstream: dict[str, Any], built: _Built) -> None:
        """The graph's three artifacts and what was inferred for them, into ``result``."""
        records, diag = result.records, result.diagnostics
        result.random_ops = _random_ops(self.inductor.random_ops(graph))
        graph_model = built.graph_model = self.inductor.post_grad_graph(graph)
        beyond = self.backend.extends_upstream
        if beyond:
            diag.inferred = mapping.infer_links(records, graph_model)
        pre_to_post, post_to_pre, found_pre_grad = self._pre_grad_links(result, graph, graph_model, built)
        result.node_mappings = mapping.build_node_mappings(records, pre_to_post, post_to_pre, diag.inferred)
        if beyond:  # stock Inductor's own mapping is kept as torch wrote it; the judge names its gaps
            built.left_out = mapping.leave_out_shadowed(result.node_mappings, graph_model.shadowed)
        listed_because = {(link.node, link.kernel): link.why for link in diag.inferred}
        found_sources = inference.infer_sources(
            result.node_mappings.cppCodeToPost,
            {r.key: r.stack_traces for r in records},
            graph_model,
            listed_because,
        )
        if beyond:
            diag.inferred_pre_grad, diag.inferred_sources = found_pre_grad, found_sources
        else:
            built.not_taken = (found_pre_grad, found_sources)
        borrowed = inference.borrowed_traces(diag.inferred_sources, graph_model)
        result.stack_traces = mapping.build_stack_traces(records, borrowed)
        result.opspec_handles = mapping.build_opspec_artifact(records)
        if self.redactor is not None:  # before validation: what is checked is what is emitted
            result.stack_traces = KINDS[KERNEL_STACK_TRACES].redact(result.stack_traces, self.redactor)
            result.opspec_handles = KINDS[OPSPEC_DEBUG_HANDLES].redact(result.opspec_handles, self.redactor)
        mapping.cross_check(records, diag, graph_model)
        if self.redactor is not None:  # its lines as the OpSpec artifact's handles write them
            diag.misnamed_handles = [self.redactor.misnamed_handle(m) for m in diag.misnamed_handles]
        diag.matches_upstream = mapping.matches_upstream(result.node_mappings, upstream)
        built.done = True

    def _pre_grad_links(
        self, result: GraphResult, graph: Any, graph_model: Any, built: _Built
    ) -> tuple[dict[str, list[str]], dict[str, list[str]], list]:
        """preToPost and postToPre as Inductor knows them, plus the pre-grad links inferred.

        Inferred on every backend; applied beyond upstream, else only named in the reasons
        of the kernels they would have served (stock Inductor keeps torch's own)."""
        beyond = self.backend.extends_upstream
        pre_grad_id = self._pre_grad_graph_id(result)
        pre_to_post, post_to_pre = self.inductor.pre_post_relation(graph, pre_grad_id)
        found_pre_grad: list = []
        if pre_grad_id is not None:
            forward, saved = (
                self._forward_links.get(result.compile_id, ({}, {})) if result.kind == "backward" else (None, None)
            )
            subgraphs = self._pre_grad_subgraphs(pre_grad_id, id(graph))
            held = self.inductor.subgraph_relation(graph, subgraphs)
            maps = (pre_to_post, post_to_pre) if beyond else (_copy_map(pre_to_post), _copy_map(post_to_pre))
            inference.prefer_own_line(graph_model, maps[1], maps[0], subgraphs.lines)
            found_pre_grad = inference.infer_pre_grad(graph_model, *maps, forward, saved, held, subgraphs.lines)
        if result.kind == "forward":
            self._forward_links[result.compile_id] = (
                inference.forward_links(graph_model, post_to_pre),
                _copy_map(post_to_pre),
            )
        if beyond and pre_grad_id is not None:  # stock Inductor's own mapping is kept as torch wrote it
            # after the forward's links are kept: a gradient of a hidden node says why it has none
            built.hidden = inference.hide_repeated(post_to_pre, pre_to_post, subgraphs.repeated)
            found_pre_grad = inference.drop_repeated(found_pre_grad, subgraphs.repeated)
        return pre_to_post, post_to_pre, found_pre_grad

    def _validate(self, result: GraphResult, graph_key: int) -> bool:
        """Are the built artifacts valid by their schemas? Never emit what was not checked."""
        with self.faults.stage("validate", graph_key):
            problems = schemas.check_built_artifacts(result.node_mappings, result.stack_traces, result.opspec_handles)
            if problems:
                raise ValueError("built artifact is invalid: " + "; ".join(problems[:3]))
            return True
        return False

    def _emit(self, result: GraphResult, graph_key: int) -> None:
        """Into the log (what tlparse and CI read), then into the graph's folders."""
        with self.faults.stage("emit", graph_key):
            self.inductor.replace_kernel_stack_traces(result.stack_traces)
        self._log_and_write(result, graph_key)

    def emit_replayed(self, result: GraphResult, graph_key: int) -> None:
        """A graph of an Inductor cache hit, logged and written as its miss was
        (``graph_cache``): the hit itself logs the mapping and the stack traces."""
        if result.node_mappings is not None:
            self._log_and_write(result, graph_key)
        self._emit_diagnostics(result, graph_key)

    def _log_and_write(self, result: GraphResult, graph_key: int) -> None:
        with self.faults.stage("emit", graph_key):
            if result.opspec_handles is not None:
                self.inductor.log_artifact(OPSPEC_DEBUG_HANDLES, result.opspec_handles)
            if self.label:  # the model's name for lookup and annotate, whatever the log's file name
                self.inductor.log_artifact(MODEL_LABEL, {"label": self.label})
        with self.faults.stage("file write", graph_key):
            emit.write_files(emit.artifact_files(result), self._folders(result))

    def _check_bundles(self, records: list[KernelRecord], graph_key: int) -> BundleHandlesV4 | None:
        """Each kernel's SuperDSC bundles as served against its OpSpecs; None: no backend
        bundles to check. Read when the graph is complete, not at ``define_kernel``:
        torch-spyre makes (or finds in its cache) a kernel's bundles when the generated
        module loads, which compile_fx does before it asks for the provenance."""
        total = None
        compile_id = self._current[1].compile_id if self._current is not None else None
        earlier = [r for g in self.results if g.compile_id == compile_id for r in g.records]
        compile_handles = mapping.handle_ids([*earlier, *records])
        for record in records:
            if record.is_extern or record.opspecs is None:
                continue
            record.provenance_key, record.bundle_folder = self.backend.kernel_bundle(record.name) or (None, None)
            served = self.backend.bundle_handles(record.name)
            if self.probe is not None:
                self.probe.bundles(graph_key, record.name, served)
            if served is not None:
                checked = mapping.check_bundle_handles(record.opspecs, served, compile_handles)
                total = (total or BundleHandlesV4()).add(checked)
        return total

    def _folders(self, result: GraphResult) -> list[Path]:
        return emit.graph_folders(result, self.inductor.debug_dir(), self.layout, self._first_order())

    def _first_order(self) -> int:
        """Where this session's graph folders start numbering: 0 with a label (the command
        removes a label's old folders first), else after the unlabeled folders the layout
        already holds, read once, at the session's first graph."""
        if self._first is None:
            out = self.layout.out if self.layout is not None and self.label is None else None
            names = [p.name for p in out.iterdir()] if out is not None and out.is_dir() else []
            self._first = folders.next_unlabeled_order(names)
        return self._first

    def _judge(
        self,
        result: GraphResult,
        graph: Any,
        upstream: dict[str, Any],
        built: _Built,
    ) -> list[str]:
        """Coverage of what the log will hold for this graph, judged as ``compile`` and
        ``golden`` judge it from the log: the same function on the same code and nodes.
        Returns the call sites tlparse links (the audit's per-kernel ``linked``)."""
        code, graph_model = self.inductor.output_code(graph), built.graph_model
        if code is None or graph_model is None:
            result.diagnostics.hints = ["coverage not judged: the graph's wrapper code is not at hand"]
            return []
        logged = msgspec.to_builtins(result.node_mappings) if result.node_mappings is not None else upstream
        verdict = coverage.judge(
            code,
            graph_model,
            logged,
            result.opspec_handles,
            result.stack_traces,
            upstream=not self.backend.extends_upstream,
        )
        diag = result.diagnostics
        diag.coverage, diag.violations, diag.hints = verdict.counts, verdict.violations, verdict.hints
        kernels = (logged or {}).get("cppCodeToPost") or {}
        pre_grad_not_taken, sources_not_taken = built.not_taken
        diag.without_source = inference.source_gaps(verdict.without_source, kernels, graph_model, sources_not_taken)
        diag.without_pre_grad = inference.pre_grad_gaps(
            verdict.without_pre_grad,
            kernels,
            graph_model,
            pre_grad_known=self._pre_grad_ids.get(result.compile_id) is not None,
            backward=result.kind == "backward",
            beyond=self.backend.extends_upstream,
            not_taken=pre_grad_not_taken,
            hidden=built.hidden,
            left_out=built.left_out,
        )
        return verdict.linked

    def _emit_diagnostics(self, result: GraphResult, graph_key: int) -> None:
        """Log and write the graph's ``spyre_provenance_diagnostics``, mapping or not.

        Logged first (the log is what tlparse and CI read), then written beside the other
        artifacts; a failure of either is one more fault of its stage. The file holds the
        faults known when it is written, so a failed log emission shows up in it.
        """
        self.faults.settle(result.diagnostics, graph_key)
        document = mapping.diagnostics_document(result)
        checked = False
        with self.faults.stage("validate", graph_key):
            _check_diagnostics(document)
            checked = True
        if checked:
            with self.faults.stage("emit", graph_key):
                self.inductor.log_artifact(DIAGNOSTICS, document)
            self.faults.settle(result.diagnostics, graph_key)
            document = mapping.diagnostics_document(result)
            with self.faults.stage("file write", graph_key):
                emit.write_files(emit.diagnostics_file(document), self._folders(result))
        self.faults.settle(result.diagnostics, graph_key)

    def _abandon_current(self) -> None:
        """After an unexpected failure in ``_finish_graph``: upstream's mapping is logged."""
        if self._current is None:
            return
        graph_key, result = self._current
        result.node_mappings = result.stack_traces = result.opspec_handles = None
        result.diagnostics.mapping = "upstream"
        self.faults.settle(result.diagnostics, graph_key)

    def _pre_grad_graph_id(self, result: GraphResult) -> int | None:
        """The pre-grad graph this graph's nodes descend from.

        A backward graph is compiled lazily, under a fresh set of Inductor's provenance
        globals, so the pre-grad graph id is gone by then (upstream's backward mapping
        is empty for that reason). Its nodes' ``from_node`` chains still lead to the
        forward's pre-grad graph, whose id we remember per compile id.
        """
        graph_id = self.inductor.pre_grad_graph_id()
        if graph_id is not None and result.kind != "backward":
            self._pre_grad_ids[result.compile_id] = graph_id
            return graph_id
        return self._pre_grad_ids.get(result.compile_id, graph_id)


def _copy_map(node_map: dict[str, list[str]]) -> dict[str, list[str]]:
    return {key: list(values) for key, values in node_map.items()}


def _random_ops(found: list[tuple[str, str | None]]) -> list[RandomOp]:
    """The random ops of a graph with the user's line each came from, once each."""
    from spyre_provenance.links.redact import shown_path
    from spyre_provenance.model.frames import user_frame

    ops: dict[RandomOp, None] = {}
    for op, trace in found:
        where = user_frame(trace)
        ops[RandomOp(op, None if where is None else f"{shown_path(where.file)}:{where.line}")] = None
    return list(ops)


def _check_diagnostics(document: dict[str, Any]) -> None:
    report = schemas.validate_bytes(msgspec.json.encode(document), DIAGNOSTICS)  # fast engine, like the gate
    if not report.ok:
        raise ValueError("built diagnostics are invalid: " + "; ".join(map(str, report.problems[:3])))
