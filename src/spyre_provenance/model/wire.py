"""The artifacts as they are on disk: the typed form both validators decode into.

Every field is required and every object closed, as in the schemas. Integers are typed
``int | float`` because JSON Schema's "integer" accepts 3.0; the rules
(each kind's ``check_types``, ``validate/kinds/``) then demand integral values, so both engines agree.

Where the hook writes a record as it is (diagnostics, a handle's source and transforms),
the wire form is derived from that record (``wire_form``): one definition of the shape,
the record's, with its field order as the wire order. The OpSpec artifact is written
flattened (handles by id, see ``mapping.build_opspec_artifact``) and AOTInductor's
``kernel_information.json`` is only read; their wire forms are written out here.

Pure: no torch.
"""

from __future__ import annotations

import functools
import types
import typing
from typing import TYPE_CHECKING, Any, Union

import msgspec

from spyre_provenance.model import audit_records, records


@functools.cache
def wire_form(record: type[msgspec.Struct]) -> type[msgspec.Struct]:
    """``record`` with every field required, unknown fields refused, integers widened to
    ``int | float`` and nested records replaced by their own wire forms."""
    hints = typing.get_type_hints(record)
    fields = [(f.encode_name, _widen(hints[f.name])) for f in msgspec.structs.fields(record)]
    return msgspec.defstruct(f"{record.__name__}Wire", fields, forbid_unknown_fields=True, module=__name__)


def _widen(hint: Any) -> Any:
    if hint is int:
        return int | float
    if isinstance(hint, type) and issubclass(hint, msgspec.Struct):
        return wire_form(hint)
    origin = typing.get_origin(hint)
    if origin in (Union, types.UnionType):
        members: list[Any] = []
        for arg in typing.get_args(hint):
            for widened in typing.get_args(_widen(arg)) if arg is int else (_widen(arg),):
                if widened not in members:
                    members.append(widened)
        return Union[tuple(members)]  # noqa: UP007 - members known only at run time: no `|` spelling
    if origin in (list, tuple):
        (item, *_rest) = typing.get_args(hint)
        return types.GenericAlias(list, (_widen(item),))  # list[...] of a run-time type
    if origin is dict:
        key, value = typing.get_args(hint)
        return types.GenericAlias(dict, (key, _widen(value)))
    return hint


# --- derived from the records the hook writes ---------------------------------------------

if TYPE_CHECKING:
    # A class msgspec.defstruct makes at run time is no type to a checker: it reads each wire
    # form as the record it is derived from (the same fields; integers typed int where the
    # wire also takes 3.0). One caveat: the records subclass each other (V4 of V3 of V2), the
    # wire forms do not, so an isinstance chain is narrowed more than it is at run time.
    SourceEntry = records.SourceLoc
    TransformEntry = records.ProvenanceTransform
    DiagnosticsDocV1 = records.DiagnosticsV1
    DiagnosticsDocV2 = records.DiagnosticsV2
    DiagnosticsDocV3 = records.DiagnosticsV3
    DiagnosticsDocV4 = records.DiagnosticsV4
    DiagnosticsDocV5 = records.DiagnosticsV5
    DiagnosticsDocV6 = records.DiagnosticsV6
    AuditDocV1 = audit_records.AuditV1
else:
    SourceEntry = wire_form(records.SourceLoc)
    TransformEntry = wire_form(records.ProvenanceTransform)
    DiagnosticsDocV1 = wire_form(records.DiagnosticsV1)
    DiagnosticsDocV2 = wire_form(records.DiagnosticsV2)
    DiagnosticsDocV3 = wire_form(records.DiagnosticsV3)
    DiagnosticsDocV4 = wire_form(records.DiagnosticsV4)
    DiagnosticsDocV5 = wire_form(records.DiagnosticsV5)
    DiagnosticsDocV6 = wire_form(records.DiagnosticsV6)
    AuditDocV1 = wire_form(audit_records.AuditV1)

#: The wire form of each provenance audit version, by the N of its schema file.
AUDIT_DOCS: dict[int, type[AuditDocV1]] = {1: AuditDocV1}

#: The wire form of each diagnostics version, by the N of its schema file.
DIAGNOSTICS_DOCS: dict[
    int,
    type[
        DiagnosticsDocV1 | DiagnosticsDocV2 | DiagnosticsDocV3 | DiagnosticsDocV4 | DiagnosticsDocV5 | DiagnosticsDocV6
    ],
] = {
    1: DiagnosticsDocV1,
    2: DiagnosticsDocV2,
    3: DiagnosticsDocV3,
    4: DiagnosticsDocV4,
    5: DiagnosticsDocV5,
    6: DiagnosticsDocV6,
}


def diagnostics_fields(schema: int) -> tuple[str, ...]:
    """The keys of a diagnostics document of schema version ``schema``, in the order written."""
    return tuple(DIAGNOSTICS_DOCS[schema].__struct_fields__)


@functools.cache
def diagnostics_field_types(schema: int) -> dict[str, Any]:
    """Field name -> wire type, for decoding a diagnostics document field by field."""
    return field_types(DIAGNOSTICS_DOCS[schema])


@functools.cache
def field_types(doc_type: type[msgspec.Struct]) -> dict[str, Any]:
    """Field name -> wire type of a wire form, in field order (for decoding field by field)."""
    hints = typing.get_type_hints(doc_type)
    return {name: hints[name] for name in doc_type.__struct_fields__}


# --- written out: no record has these shapes ----------------------------------------------


class KernelInfoEntry(msgspec.Struct, forbid_unknown_fields=True):
    """One value of AOTInductor's ``kernel_information.json`` version 1 (torch 2.9-2.13)."""

    stack_traces: list[str]
    post_grad_nodes: list[str]
    pre_grad_nodes: list[str]


Dim = int | float | str  # a static size (integral: kinds.kernel_information.check_types) or a symbolic one


class KernelInfoEntryV2(msgspec.Struct, forbid_unknown_fields=True):
    """Version 2 (torch 2.14): version 1 plus the extern semantic key on every entry, and
    the shapes and dtypes torch records for extern kernels only (absent: UNSET)."""

    stack_traces: list[str]
    post_grad_nodes: list[str]
    pre_grad_nodes: list[str]
    extern_semantic_key: str | None
    input_shapes: list[list[Dim]] | msgspec.UnsetType = msgspec.UNSET
    input_dtypes: list[str] | msgspec.UnsetType = msgspec.UNSET
    output_shape: list[Dim] | msgspec.UnsetType = msgspec.UNSET
    output_dtype: str | msgspec.UnsetType = msgspec.UNSET


KERNEL_INFO_ENTRIES: dict[int, type[msgspec.Struct]] = {1: KernelInfoEntry, 2: KernelInfoEntryV2}
KERNEL_INFO_V2_MARK = "extern_semantic_key"  # the field whose presence makes an entry version 2


class HandleEntry(msgspec.Struct, forbid_unknown_fields=True):
    """A debug handle (``records.DebugHandle``) without its id, which is its key in
    ``OpSpecDebugHandles.handles``; its children referenced by id (``fused_from``)."""

    source: SourceEntry | None
    aten_op: str | None
    ir_chain: list[str]
    fused_from: list[str]
    transform_history: list[TransformEntry]


class OpSpecEntry(msgspec.Struct, forbid_unknown_fields=True):
    """An OpSpec (``records.OpSpecRecord`` without what no artifact carries)."""

    op: str
    is_reduction: bool
    iteration_space: list[int | float | str]
    buffer: str | None
    debug_handle: str | None  # an id in OpSpecDebugHandles.handles


class OpSpecDebugHandles(msgspec.Struct, forbid_unknown_fields=True):
    """``spyre_opspec_debug_handles`` version 1, field order as written."""

    version: int | float
    kernels: dict[str, list[OpSpecEntry]]
    handles: dict[str, HandleEntry]


class BundleEntry(msgspec.Struct, forbid_unknown_fields=True):
    """The bundle a call site runs: torch-spyre's kernel provenance key and the folder name."""

    provenance_key: str | None
    folder: str | None


class OpSpecDebugHandlesV2(msgspec.Struct, forbid_unknown_fields=True):
    """Version 2: version 1 plus ``bundles`` (call site -> its bundle's key and folder)."""

    version: int | float
    kernels: dict[str, list[OpSpecEntry]]
    handles: dict[str, HandleEntry]
    bundles: dict[str, BundleEntry]


#: The wire form of each OpSpec artifact version, by the N of its schema file.
OPSPEC_DOCS: dict[int, type[OpSpecDebugHandles] | type[OpSpecDebugHandlesV2]] = {
    1: OpSpecDebugHandles,
    2: OpSpecDebugHandlesV2,
}
OPSPEC_ARTIFACT_FIELDS = OpSpecDebugHandles.__struct_fields__  # version 1's; opspec_fields(N) for any


def opspec_fields(schema: int) -> tuple[str, ...]:
    return tuple(OPSPEC_DOCS[schema].__struct_fields__)


KERNEL_INFO_FIELDS = KernelInfoEntry.__struct_fields__  # the lists each entry of every version has


class SourceLinesFile(msgspec.Struct, forbid_unknown_fields=True):
    """What ``spyre_source_lines`` holds of one file (``viewer.sources.snapshot``)."""

    made: list[int | float]  # integral, >= 1, each once: kinds.source_lines.check_types
    lines: dict[str, str]  # keys are line numbers: kinds.source_lines.check_types
    error: str | None


class SourceLinesDoc(msgspec.Struct, forbid_unknown_fields=True):
    """``spyre_source_lines`` version 1, field order as written."""

    version: int | float
    context: int | float  # integral, >= 0: kinds.source_lines.check_types
    files: dict[str, SourceLinesFile]


# --- a SuperDSC bundle's debug_handle_ (torch-spyre's DebugHandle.to_dict()) ---------------
# Another shape than HandleEntry: constituents nested (not ids), a transform's reason may be null.


class BundleTransform(msgspec.Struct, forbid_unknown_fields=True):
    """A transform step as ``ProvenanceTransform.to_dict()`` writes it."""

    kind: str
    pass_name: str
    reason: str | None = None


class BundleHandle(msgspec.Struct, forbid_unknown_fields=True):
    """A bundle's ``debug_handle_``: ``DebugHandle.to_dict()``, children nested."""

    id: str
    source: SourceEntry | None
    aten_op: str | None
    ir_chain: list[str]
    fused_from: list[BundleHandle]
    transform_history: list[BundleTransform]
