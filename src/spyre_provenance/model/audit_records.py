"""The provenance audit's records: which provenance fields survive each stage of a compile.

The audit regenerates the hand-made seed audit (``shared/seed/provenance_audit_analysis.txt``):
for each stage a compile passes (pre-grad FX graph ... emitted artifacts), the nodes of
that stage and, per provenance field, on how many of them it is present and which lack it.
``spyre_provenance.audit.report`` builds the drops and the comparison from these records and
renders them; ``capture.audit_probe`` fills them from the live objects during the compile.
The JSON file ``provenance_audit.json`` is ``AuditV1`` as it is (``model.wire`` derives its
wire form, ``schemas/provenance_audit/v1.schema.json`` states it).

Pure data: no torch import.
"""

from __future__ import annotations

import msgspec

# --- the stages, in the order a compile passes them ----------------------------------------

#: Stage id -> what the stage is, as the tables head it.
STAGE_TITLES = {
    "pre_grad": "pre-grad FX graph",
    "passes_in": "entering pre-scheduling passes",
    "passes_out": "leaving pre-scheduling passes",
    "post_grad": "post-grad FX graph",
    "scheduler": "scheduler nodes at define_kernel",
    "opspecs": "OpSpecs",
    "bundles": "SuperDSC bundles",
    "node_mappings": "emitted node mappings",
    "stack_traces": "emitted kernel stack traces",
    "opspec_handles": "emitted OpSpec handles",
}
#: Short column heads for the tables (the legend below the table spells them out).
STAGE_HEADS = {
    "pre_grad": "pre-grad",
    "passes_in": "passes in",
    "passes_out": "passes out",
    "post_grad": "post-grad",
    "scheduler": "scheduler",
    "opspecs": "OpSpecs",
    "bundles": "bundles",
    "node_mappings": "mappings",
    "stack_traces": "stack traces",
    "opspec_handles": "OpSpec handles",
}
AUDIT_STAGES = tuple(STAGE_TITLES)

# --- the fields, in the order the tables list them ---------------------------------------

#: FX node ``meta`` keys, read on the FX-graph stages.
FX_FIELDS = ("stack_trace", "nn_module_stack", "source_fn_stack", "original_aten", "from_node")
#: What an Inductor IR node (a scheduler node's buffer) holds.
IR_FIELDS = ("origins", "origin_node", "traceback", "get_stack_traces()")
#: An OpSpec's ``debug_handle`` and what the handle carries.
AUDITED_OPSPEC_FIELDS = ("debug_handle", "source", "aten_op", "ir_chain", "fused_from")
#: A SuperDSC bundle's handle.
BUNDLE_FIELDS = ("debug_handle_",)
#: What the emitted node mapping holds per kernel call site.
MAPPING_FIELDS = ("post_grad_nodes", "pre_grad_nodes")
FIELDS = tuple(dict.fromkeys(FX_FIELDS + IR_FIELDS + AUDITED_OPSPEC_FIELDS + BUNDLE_FIELDS + MAPPING_FIELDS))

#: The fields whose coverage varies with the pass schedule and with tracking on or off:
#: the audit says how they were measured (``Measured``), and never reads them as regressions
#: of the model.
RUN_DEPENDENT = ("origin_node", "from_node")


class FieldCount(msgspec.Struct, frozen=True):
    """One field at one stage: present on ``present`` of the ``total`` nodes it applies to;
    ``missing`` names the others, in stage order."""

    present: int
    total: int
    missing: list[str] = msgspec.field(default_factory=list)


class Stage(msgspec.Struct):
    """One stage of one graph: its nodes (names in the stage's order) and, for each field
    that applies to the stage, its count. A field not in ``fields`` does not apply there."""

    name: str  # one of AUDIT_STAGES
    nodes: list[str]
    fields: dict[str, FieldCount]


class Drop(msgspec.Struct, frozen=True):
    """Where a field's coverage first falls: ``stage``, and ``since`` the stage before it
    with a higher share (None: partial already where it is first measured); ``nodes`` lack
    it there."""

    field: str
    stage: str
    since: str | None
    nodes: list[str]


class OpSpecAudit(msgspec.Struct, frozen=True):
    """One OpSpec of a kernel: which buffer, which op, and whether it has a debug handle."""

    buffer: str | None
    op: str
    handle: bool


class KernelAudit(msgspec.Struct):
    """One kernel call site: its ``get_kernel_metadata`` line, its OpSpecs, the post-grad
    nodes the emitted mapping lists for it, and whether its call site is mapped (a mapping
    key with nodes) and linked (tlparse highlights its call and a post-grad line)."""

    key: str  # "<kernel>:<N>"
    metadata: str
    opspecs: list[OpSpecAudit] | None  # None: the backend has no OpSpecs
    nodes: list[str]
    mapped: bool
    linked: bool


class GraphAudit(msgspec.Struct):
    """The audit of one compiled graph. ``lost``: what the audit itself could not read
    (never a failure of the compile)."""

    compile_id: str
    graph: str  # one of GRAPH_KINDS
    stages: list[Stage]
    drops: list[Drop]
    kernels: list[KernelAudit]
    lost: list[str] = msgspec.field(default_factory=list)


class Toolchain(msgspec.Struct, frozen=True):
    """The compiler stack of a run, as far as it is known (None: not installed or unknown)."""

    torch: str | None
    torch_git: str | None
    torch_spyre: str | None
    torch_spyre_git: str | None
    spyre_provenance: str


class Measured(msgspec.Struct, frozen=True):
    """How the run-dependent fields were measured: with Inductor's provenance tracking at
    this level (the hook raises 0 to 1), the FX-graph and AOTAutograd caches bypassed."""

    provenance_tracking_level: int
    graph_caches: str  # "bypassed"
    run_dependent: list[str]


class AuditV1(msgspec.Struct, kw_only=True):
    """``provenance_audit`` version 1: one compile's audit, graph by graph. Field order is
    the order written; ``generated`` is the only field that differs between two runs of the
    same model on the same toolchain."""

    version: int = 1
    generated: str  # UTC, ISO 8601 to the second
    model: str
    dtype: str
    backend: str
    train: bool
    toolchain: Toolchain
    measured: Measured
    graphs: list[GraphAudit]
