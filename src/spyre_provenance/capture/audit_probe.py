"""The audit's eyes: which provenance fields the live objects of each stage carry.

A session with ``audit=True`` holds one ``AuditProbe``. It reads the objects the compile
passes through, while they are alive, never text written afterwards:

- the pre-grad FX graph, through ``config.pre_grad_custom_pass`` (an observer that changes
  nothing; it runs at the end of Inductor's pre-grad passes);
- the nodes entering and leaving the backend's pre-scheduling passes, where the backend has
  such passes and reports them (``Backend.pass_observer``; the reference backend's
  post-grad ``addmm`` split counts as one);
- the post-grad FX graph Inductor lowered (``GraphLowering.module``), the scheduler nodes
  of every call site at ``define_kernel`` (the hook's tracing seam), the OpSpecs and
  SuperDSC bundles the hook reads, and the artifacts it built.

Audit off, none of this is installed: the hook's only cost is a ``None`` check per call
site. Nothing here may break a compile: a failure is one warning and a line in the graph's
``lost``, and the audit goes on without that stage.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.metadata
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from spyre_provenance.audit import report
from spyre_provenance.base import errors
from spyre_provenance.base.version import __version__
from spyre_provenance.model.audit_records import FX_FIELDS, KernelAudit, OpSpecAudit, Stage, Toolchain
from spyre_provenance.model.records import GraphResult, KernelRecord

#: FX ops that are nodes of a stage (graph inputs, outputs and attributes are not ops).
_FX_OPS = ("call_function", "call_module", "call_method")
#: Pre-grad nodes are torch-level calls: no ATen op exists yet, so original_aten does not apply.
PRE_GRAD_FIELDS = tuple(f for f in FX_FIELDS if f != "original_aten")


def _present(value: Any) -> bool:
    if value is None:
        return False
    try:
        return len(value) > 0
    except TypeError:  # an OpOverload, an fx.Node: present by being there
        return True


def fx_stage(name: str, fx_graph: Any, fields: Sequence[str] = FX_FIELDS) -> Stage:
    """An FX graph's op nodes and, per ``meta`` field, on which of them it is set."""
    nodes = [n for n in fx_graph.nodes if n.op in _FX_OPS]
    names = [str(n.name) for n in nodes]
    return Stage(name, names, {f: report.count(names, (_present(n.meta.get(f)) for n in nodes)) for f in fields})


def _ir_nodes(node_schedule: Any, is_extern: bool) -> list[Any]:
    """The IR nodes (buffers, an extern kernel) of one call site's schedule, in order."""
    if is_extern:
        return [node_schedule]
    found = []
    for item in node_schedule:
        inner = item.get_nodes() if hasattr(item, "get_nodes") else [item]
        for snode in inner:
            ir_node = getattr(snode, "node", None)  # reduction markers carry none
            if ir_node is not None:
                found.append(ir_node)
    return found


def _ir_name(ir_node: Any) -> str:
    try:
        return str(ir_node.get_name())
    except Exception:  # noqa: BLE001 - an unnamed node still counts
        return type(ir_node).__name__


class _IRNode:
    """What one IR node carries, read at ``define_kernel`` (None: the slot does not exist)."""

    __slots__ = ("name", "origins", "origin_node", "traceback", "stack_traces")

    def __init__(self, ir_node: Any) -> None:
        self.name = _ir_name(ir_node)
        self.origins = _present(getattr(ir_node, "origins", None))
        self.origin_node = getattr(ir_node, "origin_node", None) is not None
        self.traceback = _present(ir_node.traceback) if hasattr(ir_node, "traceback") else None
        getter = getattr(ir_node, "get_stack_traces", None)
        self.stack_traces = _present(getter()) if callable(getter) else None


def _ir_stage(nodes: Sequence[_IRNode]) -> Stage:
    names = [n.name for n in nodes]
    fields = {
        "origins": report.count(names, (n.origins for n in nodes)),
        "origin_node": report.count(names, (n.origin_node for n in nodes)),
    }
    for field, attr in (("traceback", "traceback"), ("get_stack_traces()", "stack_traces")):
        applies = [n for n in nodes if getattr(n, attr) is not None]
        if applies:
            fields[field] = report.count([n.name for n in applies], (getattr(n, attr) for n in applies))
    return Stage("scheduler", names, fields)


def _counts(nodes: Sequence[str], fields: dict[str, list[bool | None]]) -> dict[str, Any]:
    """Counts over the nodes each field applies to (None: not applicable to that node); a
    field that applies to none is left out."""
    out = {}
    for field, flags in fields.items():
        applies = [(n, f) for n, f in zip(nodes, flags, strict=True) if f is not None]
        if applies:
            out[field] = report.count([n for n, _ in applies], (bool(f) for _, f in applies))
    return out


def opspec_stage(records: Sequence[KernelRecord]) -> Stage | None:
    """Every OpSpec of the graph's kernels and what its debug handle carries."""
    specs = [(rec, i, spec) for rec in records for i, spec in enumerate(rec.opspecs or ())]
    if all(rec.opspecs is None for rec in records):
        return None
    names = _unique([spec.buffer or f"{rec.key}#{i}" for rec, i, spec in specs])
    handles = [spec.debug_handle for _, _, spec in specs]

    def origins(spec: Any) -> int:
        return len([n for n in spec.debug_handle.ir_chain if n != spec.buffer])

    fields: dict[str, list[bool | None]] = {
        "debug_handle": [h is not None for h in handles],
        "source": [None if h is None else h.source is not None for h in handles],
        "aten_op": [None if h is None else h.aten_op is not None for h in handles],
        "ir_chain": [None if h is None else bool(h.ir_chain) for h in handles],
        # several origins fused into one buffer: one child handle per origin expected
        "fused_from": [
            None if h is None or origins(spec) < 2 else bool(h.fused_from)
            for (_, _, spec), h in zip(specs, handles, strict=True)
        ],
    }
    return Stage("opspecs", names, _counts(names, fields))


def artifact_stages(result: GraphResult, logged: dict[str, Any] | None) -> list[Stage]:
    """The emitted artifacts: the node mapping the log holds, the kernel stack traces and
    the OpSpec handles, over the graph's call sites (and OpSpecs)."""
    keys = _unique([rec.key for rec in result.records])
    cpp_to_post = (logged or {}).get("cppCodeToPost") or {}
    post_to_pre = (logged or {}).get("postToPre") or {}
    stages = [
        Stage(
            "node_mappings",
            keys,
            {
                "post_grad_nodes": report.count(keys, (bool(cpp_to_post.get(k)) for k in keys)),
                "pre_grad_nodes": report.count(
                    keys, (any(post_to_pre.get(n) for n in cpp_to_post.get(k, ())) for k in keys)
                ),
            },
        ),
    ]
    if result.stack_traces is not None:
        traces = result.stack_traces
        stages.append(
            Stage(
                "stack_traces",
                keys,
                {
                    "stack_trace": report.count(keys, (any(t.strip() for t in traces.get(k, ())) for k in keys)),
                },
            )
        )
    if result.opspec_handles is not None:
        entries = [
            (f"{key}#{i}" if entry.get("buffer") is None else entry["buffer"], entry.get("debug_handle") is not None)
            for key, specs in result.opspec_handles.get("kernels", {}).items()
            for i, entry in enumerate(specs)
        ]
        names = _unique([n for n, _ in entries])
        stages.append(Stage("opspec_handles", names, {"debug_handle": report.count(names, (ok for _, ok in entries))}))
    return stages


def _unique(names: Iterable[str]) -> list[str]:
    """Names made unique in order (a buffer listed twice gets ``#2``), so counts name nodes."""
    seen: dict[str, int] = {}
    out = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        out.append(name if seen[name] == 1 else f"{name}#{seen[name]}")
    return out


def metadata_line(record: KernelRecord) -> str:
    """The first line ``get_kernel_metadata`` wrote for the call site, from the parts the
    hook read out of it."""
    if not record.source_nodes and not record.original_aten:
        return ""
    return (
        f"Topologically Sorted Source Nodes: [{', '.join(record.source_nodes)}],"
        f" Original ATen: [{', '.join(record.original_aten)}]"
    )


def kernels(result: GraphResult, logged: dict[str, Any] | None, linked: Iterable[str]) -> list[KernelAudit]:
    cpp_to_post = (logged or {}).get("cppCodeToPost") or {}
    linked = set(linked)
    out = []
    for rec in result.records:
        specs = (
            None
            if rec.opspecs is None
            else [OpSpecAudit(s.buffer, s.op, s.debug_handle is not None) for s in rec.opspecs]
        )
        nodes = list(cpp_to_post.get(rec.key, ()))
        out.append(
            KernelAudit(rec.key, metadata_line(rec), specs, nodes, bool(nodes), rec.key in linked and bool(nodes))
        )
    return out


class AuditProbe:
    """Counts per graph, filled through the seams above, handed out by ``finish``."""

    def __init__(self) -> None:
        self._pre_grad: dict[str, Stage] = {}  # compile id -> its pre-grad graph's stage
        self._passes: dict[int, tuple[Any, dict[str, Stage]]] = {}  # id(fx graph) -> (graph, in/out)
        self._ir: dict[int, dict[str, _IRNode]] = {}  # graph key -> IR nodes at define_kernel
        self._bundles: dict[int, dict[str, list[bool]]] = {}  # graph key -> kernel -> handle present
        self._lost: list[str] = []  # failures not yet tied to a graph
        self._warned = False
        self.tracking_level = 0

    # -- the seams ---------------------------------------------------------------------------

    def pre_grad(self, fx_graph: Any, compile_id: str) -> None:
        with self._guard("pre-grad FX graph"):
            self._pre_grad[compile_id] = fx_stage("pre_grad", fx_graph, PRE_GRAD_FIELDS)

    def pass_boundary(self, fx_graph: Any, moment: str) -> None:
        """The backend's pre-scheduling pass is about to run (``in``) or has run (``out``)."""
        with self._guard(f"pre-scheduling pass ({moment})"):
            graph, seen = self._passes.setdefault(id(fx_graph), (fx_graph, {}))
            name = "passes_in" if moment == "in" else "passes_out"
            if name == "passes_out" or name not in seen:  # the first entry, the last exit
                seen[name] = fx_stage(name, fx_graph)

    def call_site(self, graph_key: int, node_schedule: Any, is_extern: bool) -> None:
        with self._guard("scheduler nodes"):
            nodes = self._ir.setdefault(graph_key, {})
            for ir_node in _ir_nodes(node_schedule, is_extern):
                read = _IRNode(ir_node)
                nodes.setdefault(read.name, read)

    def bundles(self, graph_key: int, kernel_name: str, served: Sequence[Any] | None) -> None:
        if served is None:
            return
        with self._guard("SuperDSC bundles"):
            self._bundles.setdefault(graph_key, {})[kernel_name] = [h is not None for h in served]

    # -- a graph is done ---------------------------------------------------------------------

    def finish(self, graph_key: int, graph: Any, result: GraphResult, logged: Any, linked: Iterable[str]) -> None:
        """The graph's audit, put on ``result.audit``."""
        stages: list[Stage] = []
        lost, self._lost = self._lost, []
        fx_graph = getattr(getattr(graph, "module", None), "graph", None)
        pre = self._pre_grad.get(result.compile_id)
        if pre is not None:
            stages.append(pre)
        _, passes = self._passes.pop(id(fx_graph), (None, {}))
        stages += [passes[name] for name in ("passes_in", "passes_out") if name in passes]
        steps = (
            ("post-grad FX graph", lambda: [fx_stage("post_grad", fx_graph)] if fx_graph is not None else []),
            ("scheduler nodes", lambda: [_ir_stage(list(self._ir.pop(graph_key, {}).values()))]),
            ("OpSpecs", lambda: [s for s in [opspec_stage(result.records)] if s is not None]),
            ("SuperDSC bundles", lambda: self._bundle_stage(graph_key)),
            ("emitted artifacts", lambda: artifact_stages(result, logged)),
        )
        for what, step in steps:
            try:
                stages += step()
            except Exception as exc:  # noqa: BLE001 - the audit never breaks a compile
                lost.append(self._failed(what, exc))
        try:
            found_kernels = kernels(result, logged, linked)
        except Exception as exc:  # noqa: BLE001
            found_kernels = []
            lost.append(self._failed("kernels", exc))
        result.audit = report.make_graph(result.compile_id, result.kind, stages, found_kernels, lost)

    def _bundle_stage(self, graph_key: int) -> list[Stage]:
        served = self._bundles.pop(graph_key, None)
        if served is None:
            return []
        names = [f"{kernel}/sdsc_{i}.json" for kernel, flags in served.items() for i in range(len(flags))]
        flags = [flag for values in served.values() for flag in values]
        return [Stage("bundles", names, {"debug_handle_": report.count(names, flags)})]

    # -- never break a compile ---------------------------------------------------------------

    @contextlib.contextmanager
    def _guard(self, what: str) -> Iterator[None]:
        try:
            yield
        except Exception as exc:  # noqa: BLE001 - the audit never breaks a compile
            self._lost.append(self._failed(what, exc))

    def _failed(self, what: str, exc: BaseException) -> str:
        line = f"{what}: {type(exc).__name__}: {' '.join(str(exc).split())[:300]}"
        if not self._warned:
            self._warned = True
            errors.warn(
                f"spyre-provenance: audit: {line} (the compile goes on; the audit lacks this stage)", stacklevel=3
            )
        return line


def _version(*names: str) -> str | None:
    for name in names:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def toolchain() -> Toolchain:
    """The compiler stack this process compiles with, where known."""
    torch_git = None
    try:
        import torch

        torch_git = getattr(torch.version, "git_version", None) or None
    except Exception:  # noqa: BLE001 - no torch: nothing to say about its commit
        pass
    spyre_git = None
    spyre = _version("torch-spyre", "torch_spyre")
    if spyre is not None:
        try:
            spyre_git = getattr(importlib.import_module("torch_spyre.version"), "git_version", None)
        except Exception:  # noqa: BLE001 - a torch-spyre without a version module
            spyre_git = None
    return Toolchain(_version("torch"), torch_git, spyre, spyre_git, __version__)
