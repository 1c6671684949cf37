"""Typed records for every artifact this project reads or writes.

Pure data: no torch import. The JSON Schemas under ``schemas/`` are the source of truth for
the on-disk shape; these Structs are the fast decode path and must agree with them (a test
checks that on a corpus of valid and invalid documents).
"""

from __future__ import annotations

import msgspec

# Artifact names as they appear in a TORCH_TRACE envelope (``"artifact": {"name": ...}``).
NODE_MAPPINGS = "inductor_provenance_tracking_node_mappings"
KERNEL_STACK_TRACES = "inductor_provenance_tracking_kernel_stack_traces"
KERNEL_INFORMATION = "kernel_information"
OPSPEC_DEBUG_HANDLES = "spyre_opspec_debug_handles"
DIAGNOSTICS = "spyre_provenance_diagnostics"

# The hook's fault stages, in the order a graph passes through them (``hook.STAGES``; the
# diagnostics schema lists the same names).
FAULT_STAGES = (
    "record collection",
    "get_kernel_metadata",
    "OpSpec handle reading",
    "build",
    "validate",
    "emit",
    "file write",
)
GRAPH_KINDS = ("inference", "forward", "backward")

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


class NodeMappingsV1(msgspec.Struct, forbid_unknown_fields=False):
    """Legacy mapping (torch before debug handles): no ``version``, bare kernel names."""

    preToPost: NodeMap = msgspec.field(default_factory=dict)
    postToPre: NodeMap = msgspec.field(default_factory=dict)
    cppCodeToPost: NodeMap = msgspec.field(default_factory=dict)
    postToCppCode: NodeMap = msgspec.field(default_factory=dict)


# ``inductor_provenance_tracking_kernel_stack_traces``: {"<kernel>:<N>": [stack trace, ...]}
KernelStackTraces = dict[str, list[str]]


class KernelInfo(msgspec.Struct, forbid_unknown_fields=False):
    """One entry of AOTInductor's ``kernel_information.json``."""

    stack_traces: list[str] = msgspec.field(default_factory=list)
    post_grad_nodes: list[str] = msgspec.field(default_factory=list)
    pre_grad_nodes: list[str] = msgspec.field(default_factory=list)


KernelInformation = dict[str, KernelInfo]


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
    """What the hook keeps of one OpSpec: its identity and its (optional) debug handle."""

    op: str
    is_reduction: bool
    iteration_space: list[int | str] = msgspec.field(default_factory=list)
    buffer: str | None = None
    debug_handle: DebugHandle | None = None


# --- what the hook collects per kernel call site ------------------------------------------


class KernelRecord(msgspec.Struct):
    """One kernel call site of one graph, as seen at kernel definition.

    ``handle`` is the N of the wrapper's ``[Provenance debug handles] name:N`` comment.
    ``post_grad_nodes`` is in the order the mapping will list them; ``opspecs`` is None for
    backends that have no OpSpecs (stock Inductor) and a list (maybe empty) otherwise.
    """

    name: str
    handle: int
    post_grad_nodes: list[str]
    is_extern: bool = False
    original_aten: list[str] = msgspec.field(default_factory=list)
    source_nodes: list[str] = msgspec.field(default_factory=list)
    stack_traces: list[str] = msgspec.field(default_factory=list)
    opspecs: list[OpSpecRecord] | None = None

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
