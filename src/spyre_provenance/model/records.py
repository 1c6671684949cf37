"""Typed records: what the hook collects per call site and what it writes.

Pure data: no torch import. The post-grad graph the checks read is ``model.post_grad_graph``. The JSON Schemas under ``schemas/`` are the source of truth for
the on-disk shape. Records written as they are (node mappings, diagnostics) give the wire
form the validators decode into (``model.wire``), so a test that the schemas and the fast
engine agree on a corpus of valid and invalid documents also holds these to the schemas.
"""

from __future__ import annotations

from typing import Any

import msgspec

from spyre_provenance.model.audit_records import GraphAudit

NodeMap = dict[str, list[str]]


# --- upstream artifacts -------------------------------------------------------------------


class NodeMappingsV2(msgspec.Struct, kw_only=True, forbid_unknown_fields=False):
    """``inductor_provenance_tracking_node_mappings`` version 2.0: keys ``<kernel>:<N>``.

    Every map may be absent: upstream writes a bare ``{"version": 2.0}`` for a graph it could
    not link (a backward graph, for one). Field order is upstream's key order, ``version``
    last, so encoding gives the same bytes upstream writes.
    """

    preToPost: NodeMap = msgspec.field(default_factory=dict)
    postToPre: NodeMap = msgspec.field(default_factory=dict)
    cppCodeToPost: NodeMap = msgspec.field(default_factory=dict)
    postToCppCode: NodeMap = msgspec.field(default_factory=dict)
    version: float


# ``inductor_provenance_tracking_kernel_stack_traces``: {"<kernel>:<N>": [stack trace, ...]}
KernelStackTraces = dict[str, list[str]]


# --- Spyre OpSpec debug handles (REFERENCE.md section 4) ----------------------------------


class SourceLoc(msgspec.Struct, frozen=True, omit_defaults=False):
    file: str
    start_line: int
    start_col: int = 0
    end_line: int | None = None
    end_col: int | None = None


class ProvenanceTransform(msgspec.Struct, frozen=True):
    kind: str  # rewrite | fusion | decomposition | clone | remap
    pass_name: str
    reason: str = ""


class DebugHandle(msgspec.Struct, frozen=True):
    """torch-spyre's DebugHandle, nested as the compiler holds it (fused_from are handles)."""

    id: int
    source: SourceLoc | None = None
    aten_op: str | None = None
    ir_chain: tuple[str, ...] = ()
    fused_from: tuple[DebugHandle, ...] = ()
    transform_history: tuple[ProvenanceTransform, ...] = ()


class OpSpecRecord(msgspec.Struct, frozen=True):
    """What the hook keeps of one OpSpec: its identity and its (optional) debug handle.

    ``missing_handle`` says why an OpSpec that should carry a handle has none (a fault the
    hook reports); None when it has one, or when its generation of OpSpec has no such field.
    It is not part of any artifact.
    """

    op: str
    is_reduction: bool
    iteration_space: list[int | str] = msgspec.field(default_factory=list)
    buffer: str | None = None
    debug_handle: DebugHandle | None = None
    missing_handle: str | None = None


# --- what the hook collects per kernel call site ------------------------------------------


class KernelRecord(msgspec.Struct):
    """One kernel call site of one graph, as seen at kernel definition.

    ``handle`` is the N of the wrapper's ``[Provenance debug handles] name:N`` comment.
    ``post_grad_nodes`` is in the order the mapping will list them; ``opspecs`` is None for
    backends that have no OpSpecs (stock Inductor) and a list (maybe empty) otherwise.
    ``original_aten``, ``source_nodes`` and ``stack_traces`` are what Inductor's
    ``get_kernel_metadata`` says of the call site; ``key`` is ``"<name>:<handle>"``, the
    mapping's key for it.
    """

    name: str
    handle: int
    post_grad_nodes: list[str]
    is_extern: bool = False
    original_aten: list[str] = msgspec.field(default_factory=list)
    source_nodes: list[str] = msgspec.field(default_factory=list)
    stack_traces: list[str] = msgspec.field(default_factory=list)
    opspecs: list[OpSpecRecord] | None = None
    #: post-grad nodes outside this call site that read what it writes (scheduler users)
    consumers: list[str] = msgspec.field(default_factory=list)
    #: the bundle it runs: torch-spyre's kernel provenance key and the folder's name
    #: (``Backend.kernel_bundle``); both None where unknown
    provenance_key: str | None = None
    bundle_folder: str | None = None
    #: a call site of a higher-order op's subgraph (a ``cond`` branch, a ``while_loop`` body),
    #: lowered apart: the top-level post-grad nodes holding it, which the mapping lists
    #: instead of the subgraph's own nodes (their names repeat the top level's)
    held_by: list[str] = msgspec.field(default_factory=list)
    #: the distinct ``nn_module_stack`` of its own nodes, each ``[[path, class], ...]``
    #: outermost first (``model.modules``): what names it where no frame is the user's
    module_stacks: list[list[list[str]]] = msgspec.field(default_factory=list)

    @property
    def key(self) -> str:
        return f"{self.name}:{self.handle}"


# --- what the hook lost on a graph (``spyre_provenance_diagnostics``) ---------------------


class Fault(msgspec.Struct, frozen=True):
    stage: str  # one of FAULT_STAGES
    error: str  # "<exception type>: <message>"


class DiagnosticsV1(msgspec.Struct, kw_only=True):
    """``spyre_provenance_diagnostics`` version 1: one per compiled graph, always emitted.

    ``mapping`` says whose node mapping the TORCH_TRACE log holds for the graph: ``hook``
    (ours, validated) or ``upstream`` (Inductor's, logged instead when ours could not be
    built or validated). Field order is the order written.
    """

    version: int = 1
    compile_id: str
    graph: str  # one of GRAPH_KINDS
    partial: bool
    mapping: str  # "hook" | "upstream"
    faults: list[Fault] = msgspec.field(default_factory=list)
    kernels: int = 0
    opspecs: int = 0
    handleless_opspecs: int = 0
    disagreements: list[str] = msgspec.field(default_factory=list)
    matches_upstream: bool | None = None


class ExemptNodes(msgspec.Struct, kw_only=True):
    """Post-grad nodes that need no kernel, by reason (``coverage.judge``)."""

    view: int = 0  # view and metadata ops: folded into the indexing of their users' kernels
    dead: int = 0  # no user and not an output
    constant: int = 0  # a constant whose users reach no kernel either


class CoverageCounts(msgspec.Struct, kw_only=True):
    """What the coverage judge counted on one graph."""

    call_sites: int = 0  # kernel calls in the wrapper, announced or not
    linked_call_sites: int = 0  # announced, a mapping key, and linked to a node tlparse can highlight
    compute_nodes: int = 0  # post-grad nodes that compute (views and metadata ops excluded)
    reached_nodes: int = 0  # compute nodes some kernel maps to
    exempt_nodes: ExemptNodes = msgspec.field(default_factory=ExemptNodes)


class Inferred(msgspec.Struct, frozen=True):
    """A post-grad node the hook listed under a kernel beyond the kernel's own origins."""

    node: str
    kernel: str  # "<kernel>:<N>"
    why: str  # one of INFERRED_REASONS


class Violation(msgspec.Struct, frozen=True):
    """One broken coverage rule: which, where (graph, kernel, OpSpec), and what is wrong."""

    rule: str  # one of COVERAGE_RULES
    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message} [{self.rule}]"


# Not a subclass of DiagnosticsV1: version 2 puts ``backend`` and ``complete`` between
# version 1's fields, and the wire order is the field order (``wire.wire_form``). Each
# version's fields stay as its schema states them, so the shared run of fields is kept.
class DiagnosticsV2(msgspec.Struct, kw_only=True):
    """``spyre_provenance_diagnostics`` version 2: version 1 plus the coverage judgement.

    ``partial``: a stage of the hook failed (``faults``). ``complete``: nothing was lost
    and nothing is missing: not partial, coverage judged, no violation. ``coverage`` is None
    when it could not be judged (no wrapper code at hand). ``hints`` are gaps that are not
    failures: a stock-Inductor mapping's gaps are upstream's own.
    """

    version: int = 2
    compile_id: str
    graph: str  # one of GRAPH_KINDS
    backend: str | None  # the backend's name: "reference", "inductor", "spyre"
    partial: bool
    complete: bool
    mapping: str  # "hook" | "upstream"
    faults: list[Fault] = msgspec.field(default_factory=list)
    kernels: int = 0
    opspecs: int = 0
    handleless_opspecs: int = 0
    disagreements: list[str] = msgspec.field(default_factory=list)
    matches_upstream: bool | None = None
    coverage: CoverageCounts | None = None
    inferred: list[Inferred] = msgspec.field(default_factory=list)
    violations: list[Violation] = msgspec.field(default_factory=list)
    hints: list[str] = msgspec.field(default_factory=list)


class BundleHandles(msgspec.Struct, kw_only=True):
    """The SuperDSC bundles of a graph's kernels, checked against this compile's OpSpecs.

    A bundle served from torch-spyre's kernel cache (keyed on the specs without their
    ``debug_handle_``) may carry the handle of an earlier compile: ``stale``. ``missing``:
    no ``debug_handle_`` (or no bundle) where the OpSpec has a handle.
    """

    checked: int = 0
    stale: int = 0
    missing: int = 0

    def add(self, other: BundleHandles) -> BundleHandles:
        return BundleHandles(
            checked=self.checked + other.checked, stale=self.stale + other.stale, missing=self.missing + other.missing
        )


class DiagnosticsV3(DiagnosticsV2, kw_only=True):
    """``spyre_provenance_diagnostics`` version 3: version 2 plus ``bundle_handles`` (None
    where the backend has no bundles to check). Stale or missing bundle handles change
    neither ``partial`` nor ``complete``: the mapping and the OpSpec artifact come from this
    compile's OpSpecs, never from bundles. Fields keep version 2's order, the new one last."""

    version: int = 3
    bundle_handles: BundleHandles | None = None


class CoverageCountsV4(CoverageCounts, kw_only=True):
    """Version 4 of the coverage counts: version 2's, plus the kernels (mapping keys) and
    how many of them have a source line (a non-empty stack trace) and how many reach a
    pre-grad node (list a post-grad node that ``postToPre`` links)."""

    kernels: int = 0
    kernels_with_source: int = 0
    kernels_with_pre_grad: int = 0


class BundleHandlesV4(BundleHandles, kw_only=True):
    """Version 4: ``shared`` bundles carry the handle of another call site of the same
    compile (one kernel called from several call sites: its bundles are written once,
    from the first), ``stale`` ones the handle of no call site of this compile."""

    shared: int = 0

    def add(self, other: BundleHandles) -> BundleHandlesV4:
        return BundleHandlesV4(
            checked=self.checked + other.checked,
            stale=self.stale + other.stale,
            missing=self.missing + other.missing,
            shared=self.shared + getattr(other, "shared", 0),
        )


class InferredSource(msgspec.Struct, frozen=True):
    """A kernel whose own nodes carry no stack trace took the one of ``node``: the value a
    write-back copies (``write-back``) or a node reading what it writes (``consumer``)."""

    kernel: str  # "<kernel>:<N>"
    node: str
    why: str  # one of INFERRED_SOURCE_REASONS


class InferredPreGrad(msgspec.Struct, frozen=True):
    """A post-grad node linked to pre-grad nodes beyond its ``from_node`` chain: through
    the forward op it differentiates (``seq_nr``), the value it writes back
    (``write-back``) or the nodes reading what it computes (``consumer``)."""

    node: str
    pre_grad: list[str]
    why: str  # one of INFERRED_PRE_GRAD_REASONS


class KernelGap(msgspec.Struct, frozen=True):
    """A kernel without a source line or without a pre-grad node, and why it has none."""

    kernel: str  # "<kernel>:<N>"
    why: str


class DiagnosticsV4(DiagnosticsV3, kw_only=True):
    """``spyre_provenance_diagnostics`` version 4: version 3, with the kernels' source and
    pre-grad reach counted (``coverage``), shared bundles told from stale ones
    (``bundle_handles.shared``), and what the hook inferred beyond the kernels' own nodes
    (``inferred_sources``, ``inferred_pre_grad``) or could not (``without_source``,
    ``without_pre_grad``, each kernel with its reason). Fields keep version 3's order, the
    new ones last."""

    version: int = 4
    coverage: CoverageCountsV4 | None = None
    bundle_handles: BundleHandlesV4 | None = None
    inferred_sources: list[InferredSource] = msgspec.field(default_factory=list)
    inferred_pre_grad: list[InferredPreGrad] = msgspec.field(default_factory=list)
    without_source: list[KernelGap] = msgspec.field(default_factory=list)
    without_pre_grad: list[KernelGap] = msgspec.field(default_factory=list)


#: How a graph's mapping relates to the one Inductor builds for it (``UpstreamComparison``).
UPSTREAM_RELATIONS = ("equal", "extends", "differs")
#: Differences listed in an ``UpstreamComparison``; the rest are only counted.
SHOWN_UPSTREAM_DIFFERENCES = 20


class UpstreamLink(msgspec.Struct, frozen=True):
    """One link of a mapping: ``value`` listed under ``key`` in the map ``map``
    (``preToPost``: a post-grad node under a pre-grad one; ``cppCodeToPost``: under a kernel)."""

    map: str
    key: str
    value: str


class UpstreamComparison(msgspec.Struct, kw_only=True):
    """The graph's mapping beside Inductor's own for the same graph, link by link
    (``preToPost`` and ``cppCodeToPost``; the two other maps are their inverses). The order
    inside one list is no difference. ``equal``: the same links; ``extends``: every link of
    Inductor's and ``added`` more (the links the hook adds on purpose); ``differs``:
    ``missing`` links of Inductor's are not in it, the first of them in ``differences``."""

    relation: str  # one of UPSTREAM_RELATIONS
    added: int = 0
    missing: int = 0
    differences: list[UpstreamLink] = msgspec.field(default_factory=list)


class DiagnosticsV5(DiagnosticsV4, kw_only=True):
    """``spyre_provenance_diagnostics`` version 5: version 4, with ``matches_upstream`` an
    ``UpstreamComparison`` (how the mapping relates to Inductor's own) instead of a boolean
    that was false whenever the hook had added a link; null as before when Inductor had
    nothing comparable. Fields keep version 4's order."""

    version: int = 5
    matches_upstream: UpstreamComparison | None = None  # type: ignore[assignment]


#: Where a graph's provenance came from (``GraphDiagnostics.cache``, diagnostics version 6):
#: recorded while Inductor compiled it; replayed from an Inductor cache entry the tracked
#: compile that wrote it stored it in (FX-graph cache, AOTAutograd cache, a loaded
#: ``CompiledArtifact``); or an entry that held none, so nothing could be recorded.
CACHE_STATES = ("compiled", "cached", "cached without provenance")


#: What a misnamed handle names otherwise than its nodes (``MisnamedHandle.differs``).
MISNAMED_PARTS = ("op", "line")


class MisnamedHandle(msgspec.Struct, frozen=True):
    """An OpSpec whose debug handle names another ATen op or source line than the post-grad
    nodes it says the OpSpec computes (its ``ir_chain``) carry themselves: torch-spyre
    main's ``origin_node`` rule (``links.misnamed``), a disagreement of torch-spyre's
    provenance, not of this project's. Lines are ``file:line``."""

    kernel: str  # "<kernel>:<N>"
    opspec: str  # the OpSpec's op ("mul")
    buffer: str | None
    handle: str  # the handle's id, as the OpSpec artifact writes it
    nodes: list[str]  # the post-grad nodes the handle names
    handle_op: str | None
    handle_line: str | None
    node_ops: list[str]  # the nodes' own ``original_aten``
    node_lines: list[str]  # the nodes' own lines (their stack traces' user frames)
    differs: list[str]  # of MISNAMED_PARTS: what the handle names otherwise


class DiagnosticsV6(DiagnosticsV5, kw_only=True):
    """``spyre_provenance_diagnostics`` version 6: version 5, with ``cache`` saying whether
    the graph was compiled or came from an Inductor cache entry (``CACHE_STATES``), and
    ``misnamed_handles``, the OpSpecs whose handle names another op or line than its nodes
    do (their kernels are among ``disagreements``), and ``module_stacks``, each call site's
    modules (``model.modules``: what names it where no frame is the user's). Fields keep version 5's order, the new
    ones last."""

    version: int = 6
    cache: str = "compiled"
    misnamed_handles: list[MisnamedHandle] = msgspec.field(default_factory=list)
    #: call site -> its nodes' distinct ``nn_module_stack``s, ``[[path, class], ...]`` each,
    #: outermost first (``model.modules``); call sites whose nodes carry none are left out
    module_stacks: dict[str, list[list[list[str]]]] = msgspec.field(default_factory=dict)


# --- what the hook produced per graph ---------------------------------------------------


class GraphDiagnostics(msgspec.Struct):
    """What the hook lost on a graph and how complete its provenance is; written and logged
    as the ``spyre_provenance_diagnostics`` artifact.

    :ivar faults: the failed hook stages, ``"stage: ExcType: message"``.
    :ivar partial: true exactly when ``faults`` is not empty.
    :ivar mapping: whose node mapping the log holds: ``hook`` or ``upstream``.
    :ivar opspecs: the graph's OpSpecs; ``handleless_opspecs`` of them without a debug handle.
    :ivar disagreements: kernel keys whose OpSpec handles and Inductor origins disagree: on
        the nodes, or on the op or line of a node (``misnamed_handles``).
    :ivar coverage: the coverage judge's counts (None: not judged).
    :ivar violations: the coverage rules the graph breaks, one per finding.
    :ivar hints: gaps that are no failure (stock Inductor's own mapping).
    :ivar inferred: post-grad nodes listed beyond the kernels' origins, with the reason.
    :ivar bundle_handles: the SuperDSC bundles' ``debug_handle_`` check (None: no bundles).
    :ivar without_source: kernels with no source line, and why.
    :ivar without_pre_grad: kernels reaching no pre-grad node, and why.
    :ivar misnamed_handles: OpSpecs whose handle names another op or line than its nodes
        (torch-spyre main's ``origin_node`` rule, ``links.misnamed``).
    """

    faults: list[str] = []  # "stage: ExcType: message"
    fault_records: list[Fault] = []  # the same, as (stage, "ExcType: message")
    partial: bool = False
    mapping: str = "hook"  # whose node mapping the log holds: "hook" (ours) | "upstream"
    handleless_opspecs: int = 0
    opspecs: int = 0
    disagreements: list[str] = []  # kernel keys whose handles and origins disagree
    matches_upstream: UpstreamComparison | None = None  # None: upstream had nothing comparable
    coverage: CoverageCountsV4 | None = None  # None: not judged (no wrapper code at hand)
    inferred: list[Inferred] = []  # nodes listed beyond the kernels' origins, and why
    violations: list[Violation] = []  # coverage rules the graph breaks
    hints: list[str] = []  # gaps that are not failures (stock Inductor's own)
    bundle_handles: BundleHandlesV4 | None = None  # None: the backend has no bundles to check
    inferred_sources: list[InferredSource] = []  # source lines a kernel took from another node
    inferred_pre_grad: list[InferredPreGrad] = []  # pre-grad links beyond from_node chains
    without_source: list[KernelGap] = []  # kernels with no source line, and why
    without_pre_grad: list[KernelGap] = []  # kernels reaching no pre-grad node, and why
    cache: str = "compiled"  # one of CACHE_STATES: compiled, or replayed from a cache entry
    misnamed_handles: list[MisnamedHandle] = []  # handles naming another op or line than their nodes

    @property
    def complete(self) -> bool:
        """Nothing lost, nothing missing: the one verdict summary, exit status and the
        diagnostics artifact all give."""
        return not self.partial and self.coverage is not None and not self.violations


class RandomOp(msgspec.Struct, frozen=True):
    """An op of a compiled graph that draws random numbers (dropout, ``torch.rand``), and
    the user's source line it comes from (``file:line``; None when it has no stack trace)."""

    op: str
    source: str | None = None

    def __str__(self) -> str:
        return self.op if self.source is None else f"{self.op} at {self.source}"


class GraphResult(msgspec.Struct):
    """What one graph's compile produced, in the order graphs were compiled.

    :ivar index: the graph's place in the session (0, 1, ...).
    :ivar compile_id: Dynamo's compile id, ``"0/0"`` (frame/compile).
    :ivar kind: ``inference``, ``forward`` or ``backward``.
    :ivar records: one ``KernelRecord`` per kernel call site, in call-site order.
    :ivar node_mappings: the node mappings logged for tlparse (upstream format 2.0); None
        when the hook's mapping was left out (a fault: upstream's was logged instead).
    :ivar stack_traces: kernel call site -> user stack traces (the stack-traces artifact).
    :ivar opspec_handles: the ``spyre_opspec_debug_handles`` artifact (None: no OpSpecs).
    :ivar upstream_node_mappings: what Inductor itself would have logged (the cross-check).
    :ivar diagnostics: what was lost and how complete the graph is (``GraphDiagnostics``).
    :ivar label: the model label graph folders are named with.
    :ivar backend: the backend's name (``reference``, ``inductor``, ``spyre``).
    :ivar audit: the graph's provenance audit (tracking with ``audit=True``), else None.
    :ivar random_ops: the graph's ops that draw random numbers (compiled and eager draw
        different ones, so ``compile`` checks such a model on a run that draws as eager does).
    """

    index: int
    compile_id: str
    kind: str  # inference | forward | backward
    records: list[KernelRecord]
    node_mappings: NodeMappingsV2 | None
    stack_traces: dict[str, list[str]] | None
    opspec_handles: dict[str, Any] | None
    upstream_node_mappings: dict[str, Any] | None
    diagnostics: GraphDiagnostics
    label: str | None = None  # the model label graph folders are named with (compile --out)
    backend: str | None = None  # the backend's name ("reference", "inductor", "spyre")
    audit: GraphAudit | None = None  # the provenance audit of the graph (tracking with audit=True)
    #: the graph's ops that draw random numbers: compiled and eager draw different ones
    random_ops: list[RandomOp] = []
    #: the post-grad graph as the backend's own passes left it, logged again because they
    #: changed it after compile_fx logged it (torch-spyre's restickify nodes); None: unchanged.
    #: Stored with the cache entry, so a hit logs the graph the kernels name.
    moved_post_grad: str | None = None
