"""The wire form is derived from the records: one shape, strict on the way in."""

from __future__ import annotations

import msgspec
import pytest

from spyre_provenance.model import records, wire
from spyre_provenance.model.names import DIAGNOSTICS, KERNEL_INFORMATION, OPSPEC_DEBUG_HANDLES
from spyre_provenance.validate import rules, schemas


@pytest.mark.parametrize("version", [1, 2, 3])
def test_diagnostics_wire_fields_are_the_records_and_the_schemas(version):
    record = {1: records.DiagnosticsV1, 2: records.DiagnosticsV2, 3: records.DiagnosticsV3}[version]
    schema = schemas.load_schema(DIAGNOSTICS, version)
    assert wire.diagnostics_fields(version) == record.__struct_fields__
    assert list(schema["properties"]) == list(record.__struct_fields__)  # the order written


def test_the_opspec_wire_form_is_the_schemas():
    schema = schemas.load_schema(OPSPEC_DEBUG_HANDLES, 1)
    assert list(schema["properties"]) == list(wire.OPSPEC_ARTIFACT_FIELDS)
    handle = schemas._resolve(schema["properties"]["handles"]["additionalProperties"], schema)
    assert list(handle["properties"]) == list(wire.HandleEntry.__struct_fields__)
    source = schemas._resolve(handle["properties"]["source"], schema)
    source = next(
        schemas._resolve(s, schema)
        for s in source.get("anyOf", source.get("oneOf", [source]))
        if s.get("type") != "null"
    )
    assert list(source["properties"]) == list(records.SourceLoc.__struct_fields__)


@pytest.mark.parametrize("version", [1, 2])
def test_the_kernel_information_wire_forms_are_the_schemas(version):
    schema = schemas.load_schema(KERNEL_INFORMATION, version)
    entry = schema["additionalProperties"]
    struct = wire.KERNEL_INFO_ENTRIES[version]
    assert list(entry["properties"]) == list(struct.__struct_fields__)
    required = [f.name for f in msgspec.structs.fields(struct) if f.required]
    assert entry["required"] == required
    if version == 2:  # the pairs the fast path checks are the schema's, and so is the dtype pattern
        assert {k: [v] for k, v in rules.KERNEL_INFO_PAIRS.items()} == entry["dependentRequired"]
        assert schema["$defs"]["dtype"]["pattern"] == rules.DTYPE_PATTERN
        assert wire.KERNEL_INFO_V2_MARK in required and wire.KERNEL_INFO_V2_MARK not in wire.KERNEL_INFO_FIELDS


def test_a_derived_form_requires_every_field_and_refuses_unknown_ones():
    doc = {"stage": "emit", "error": "OSError: disk full"}
    assert msgspec.convert(doc, wire.wire_form(records.Fault)).stage == "emit"
    with pytest.raises(msgspec.ValidationError, match="missing required field `error`"):
        msgspec.convert({"stage": "emit"}, wire.wire_form(records.Fault))
    with pytest.raises(msgspec.ValidationError, match="unknown field `extra`"):
        msgspec.convert({**doc, "extra": 1}, wire.wire_form(records.Fault))


def test_integers_widen_as_json_schema_reads_them():
    # JSON Schema's "integer" accepts 3.0; the rules then demand an integral value
    hints = msgspec.structs.fields(wire.SourceEntry)
    by_name = {f.name: f.type for f in hints}
    assert by_name["start_line"] == int | float
    assert by_name["end_line"] == int | float | None
    assert by_name["file"] is str


def test_nested_records_are_replaced_by_their_wire_forms():
    fields = {f.name: f.type for f in msgspec.structs.fields(wire.DiagnosticsDocV2)}
    assert fields["faults"] == list[wire.wire_form(records.Fault)]
    assert fields["coverage"] == wire.wire_form(records.CoverageCounts) | None
    assert fields["partial"] is bool


def test_the_audit_wire_form_is_the_records_and_the_schema():
    """provenance_audit v1: every object's keys are its record's fields, in the order
    written, and the enums are the record module's stage and field names."""
    from spyre_provenance.model import audit_records
    from spyre_provenance.model.names import AUDIT

    schema = schemas.load_schema(AUDIT, 1)
    defs = schema["$defs"]
    pairs = [
        (schema, audit_records.AuditV1),
        (schema["properties"]["toolchain"], audit_records.Toolchain),
        (schema["properties"]["measured"], audit_records.Measured),
        (defs["graph"], audit_records.GraphAudit),
        (defs["stage"], audit_records.Stage),
        (defs["count"], audit_records.FieldCount),
        (defs["drop"], audit_records.Drop),
        (defs["kernel"], audit_records.KernelAudit),
        (defs["kernel"]["properties"]["opspecs"]["items"], audit_records.OpSpecAudit),
    ]
    for part, record in pairs:
        assert list(part["properties"]) == list(record.__struct_fields__) == part["required"], record
        assert part["additionalProperties"] is False
    assert wire.AUDIT_DOCS[1].__struct_fields__ == audit_records.AuditV1.__struct_fields__
    assert defs["stage"]["properties"]["name"]["enum"] == list(audit_records.AUDIT_STAGES)
    assert defs["stage"]["properties"]["fields"]["propertyNames"]["enum"] == list(audit_records.FIELDS)
    assert defs["drop"]["properties"]["since"]["enum"] == [*audit_records.AUDIT_STAGES, None]
