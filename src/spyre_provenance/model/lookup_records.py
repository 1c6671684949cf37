"""The answer of ``spyre-provenance lookup`` as typed records (``--format json``).

``schemas/provenance_lookup/v1.schema.json`` states the same shape; a test holds the two
equal (every document ``lookup`` prints validates against the schema and decodes into
``LookupDocument``). Pure: msgspec only.
"""

from __future__ import annotations

import msgspec

LOOKUP_VERSION = 3
#: How a name was read: a mapping key, an OpSpec debug-handle id, a kernel name (as the
#: wrapper calls it, or with a profiler prefix, a runtime suffix, as a bundle folder),
#: torch-spyre's device event or its bare provenance key, one of its CPU spans, or the
#: device-timeline name of IBM's trace analyzer (``runtime.kernel_names``).
QUERY_FORMS = ("key", "handle", "kernel", "event", "provenance_key", "cpu_span", "device_timeline")


class SourceLine(msgspec.Struct, frozen=True):
    """One frame of a kernel's stack traces: ``file:line`` and the code on that line."""

    file: str
    line: int
    code: str
    user: bool  # the user's frame (not torch's, not the standard library's)
    #: what the frame is (``runtime.lookup.source_lines``): "fused", a line whose node was fused
    #: into the kernel; "enclosing", a call outside such a line on its stack (a module call);
    #: "inner", a frame inside such a line (torch's code it ran)
    role: str


class ModuleEntry(msgspec.Struct, frozen=True):
    """A module a call site's nodes ran in (their ``nn_module_stack``), where no frame of its
    stack traces is the user's (``model.modules``): module evidence, never a source line."""

    path: str  # from the compiled module: "" for that module itself, "layers.0.self_attn"
    module_class: str  # qualified, as recorded: "torch.nn.modules.activation.MultiheadAttention"
    name: str  # "layers.0.self_attn: MultiheadAttention"
    #: "fused", a module whose own ops the kernel runs; "enclosing", a module around them
    role: str


class OwnNode(msgspec.Struct, frozen=True):
    """Where an OpSpec's handle names another op or line than its nodes (the diagnostics'
    ``misnamed_handles``, torch-spyre main's ``origin_node`` rule): what the nodes are."""

    nodes: list[str]
    aten_ops: list[str]
    sources: list[str]  # ``file:line`` of the nodes' own stack traces
    differs: list[str]  # "op", "line": what the handle names otherwise


class OpSpecEntry(msgspec.Struct, frozen=True):
    """One OpSpec of a Spyre kernel call site, with its debug handle."""

    op: str
    buffer: str | None
    debug_handle: str | None
    aten_op: str | None = None
    source: str | None = None  # ``file:line`` of the handle's SourceLoc
    own: OwnNode | None = None  # where the handle names another op or line than its nodes


class CallSite(msgspec.Struct, frozen=True):
    """One call of the kernel in its graph's wrapper: mapping key ``name:N``."""

    key: str
    handle: int
    post_grad_nodes: list[str]
    pre_grad_nodes: list[str]
    source: list[SourceLine]
    aten_ops: list[str]
    #: "wrapper comment" | "wrapper comment, own nodes" (an extern call's comment, kept to its
    #: own nodes' ops) | "OpSpec handles" | "post-grad nodes"; None: none known
    aten_from: str | None
    opspecs: list[OpSpecEntry]
    bundle_files: list[str]
    provenance_key: str | None = None  # torch-spyre's key of the bundle it runs (version 2)
    bundle_folder: str | None = None  # that bundle's folder name (version 2)
    #: where no frame of its stack traces is the user's: the modules its nodes ran in, the
    #: kernel's own first (``model.modules``; version 3)
    modules: list[ModuleEntry] = msgspec.field(default_factory=list)


class Match(msgspec.Struct, frozen=True):
    """One kernel of one compiled graph that the name matched, with every call site."""

    model: str
    compile_id: str
    graph: str  # inference | forward | backward | unknown
    kernel: str
    origin: str  # the log or folder it was read from
    call_sites: list[CallSite]
    per_op: str | None = None  # the ATen op when the graph is a per-op compile (links.per_op), version 3


class Answer(msgspec.Struct, frozen=True):
    """What one NAME matched; ``closest`` only when nothing did."""

    query: str
    form: str  # one of QUERY_FORMS
    matches: list[Match]
    closest: list[str] = msgspec.field(default_factory=list)


class LookupDocument(msgspec.Struct, frozen=True):
    version: int
    answers: list[Answer]
