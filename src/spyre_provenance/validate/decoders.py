"""Each artifact kind's two decoders into the typed values its rules take.

- fast (``fast_*``): msgspec from the text, through a ``decoding.Decoding`` (exact problem
  paths, a tally of what was decoded). Returns the detection, the typed document (None when
  the rules must not run: a problem came first, or the decoder ran them itself) and the
  tally (None when the document did not decode cleanly).
- full (``typed_*``): a parsed document that jsonschema found well typed, converted.

The types mirror the schema files; where a type cannot say a rule (integral numbers, enums,
key patterns, uniqueness) ``rules`` checks it, so the two engines agree on every document
(tests/unit/test_validator_agreement.py). Read through the kinds' records (``validate.kinds``).

Pure: no torch, no jsonschema.
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from typing import Any

import msgspec

from spyre_provenance.model import detect, wire
from spyre_provenance.model.detect import Detected, Problem
from spyre_provenance.model.names import (
    AUDIT,
    DIAGNOSTICS,
    KERNEL_INFORMATION,
    KERNEL_STACK_TRACES,
    MAP_FIELDS,
    NODE_MAPPINGS,
    OPSPEC_DEBUG_HANDLES,
    SOURCE_LINES,
)
from spyre_provenance.model.records import NodeMap
from spyre_provenance.validate import diagnostics_rules, rules
from spyre_provenance.validate.decoding import MISSING, Decoding, Tally, add, tally, tally_keys, tally_map

#: What a fast decoder returns: the detection, the typed document for the rules, the tally.
Decoded = tuple[Detected, Any, Tally]


def fast_node_mappings(run: Decoding) -> Decoded:
    top = run.top()
    det = _explicit_v2(top)
    if det is not None:
        return _node_mappings_by_map(run, top, det)
    fields: dict[str, NodeMap] = {}
    for name in MAP_FIELDS:
        if name in top:
            value = run.decode_map(top[name], list[str], f"$.{name}")
            if value is not MISSING:
                fields[name] = value
    shape: dict[str, Any] = dict(fields)
    if "version" in top:
        shape["version"] = run.decode(top["version"], Any, "$.version")
    det = detect.mapping_version(NODE_MAPPINGS, shape)
    if det.problem is not None:
        run.problems[:] = [det.problem]
        return det, None, None
    if det.schema == 2 and "version" not in top:
        run.problems.append(Problem("$", 'missing required key "version"'))
    assert det.schema is not None
    run.problems.extend(rules.missing_maps(det.schema, top))
    if run.problems:
        return det, None, None
    # keys this validator does not know are allowed; decoded only to be counted
    extra = [run.decode(raw, Any, "$") for key, raw in top.items() if key not in shape]
    return det, fields, add(tally_keys(top), *map(tally_map, fields.values()), tally(extra))


def _node_mappings_by_map(run: Decoding, top: dict[str, msgspec.Raw], det: Detected) -> Decoded:
    """``fast_node_mappings`` for a document that says ``"version": 2.0``, one map at a time.

    Same problems, same order, same tally; but each map is decoded, checked, tallied
    and let go before the next is decoded, so a 100 MB mapping needs its text plus its
    largest map in memory, not all four (about 2.7x the text instead of 5.8x). Only a
    failed inverse check decodes its two maps again, to name the pairs that differ. The
    rules run here, from each map's facts: no typed document is returned.
    """
    facts: dict[str, rules.NodeMapFacts] = {}
    tallies: list[tuple[int, int]] = []
    run.problems.extend(rules.missing_maps(2, top))
    for name in MAP_FIELDS:
        if name not in top:
            continue
        value = run.decode_map(top[name], list[str], f"$.{name}")
        if value is MISSING or run.problems:  # the rules will not run: only decode
            continue
        facts[name] = rules.node_map_facts(name, value, True)
        tallies.append(tally_map(value))
        del value
    if run.problems:
        return det, None, None
    extra = [run.decode(raw, Any, "$") for key, raw in top.items() if key not in MAP_FIELDS and key != "version"]
    counted = add(tally_keys(top), *tallies, tally(extra))
    reload = lambda name: msgspec.json.decode(top[name], type=NodeMap)  # noqa: E731
    run.problems.extend(rules.check_node_map_facts(facts, reload))
    return det, None, counted


def _explicit_v2(top: dict[str, msgspec.Raw]) -> Detected | None:
    """The detection of node mappings whose ``version`` is 2.0, else None (a missing,
    unreadable or other version takes the general route, which reports it)."""
    if "version" not in top:
        return None
    try:
        version = msgspec.json.decode(top["version"])
    except msgspec.DecodeError:
        return None
    det = detect.mapping_version(NODE_MAPPINGS, {"version": version})
    return det if det.problem is None and det.schema == 2 else None


def fast_stack_traces(run: Decoding) -> Decoded:
    doc = run.decode_map(run.data, list[str], "$", top=True)
    if doc is MISSING:
        return detect.stack_traces_version(KERNEL_STACK_TRACES, {}), None, None
    det = detect.stack_traces_version(KERNEL_STACK_TRACES, doc)
    assert det.schema is not None  # a kernel map's version is in its shape: never unknown
    return det, doc, tally_map(doc)


def fast_kernel_information(run: Decoding) -> Decoded:
    """Its version is in its entries' shape (``detect``): the entries are decoded once
    as raw values to tell, then as the entry type of that version."""
    det = detect.kernel_information_version(KERNEL_INFORMATION, run.top())
    assert det.schema is not None
    doc = run.decode_map(run.data, wire.KERNEL_INFO_ENTRIES[det.schema], "$", top=True)
    if doc is MISSING:
        return det, None, None
    if det.schema == 2:
        run.problems.extend(rules.check_kernel_info_types(doc))
        if run.problems:
            return det, None, None
    return det, doc, tally(doc)


def fast_opspec(run: Decoding) -> Decoded:
    det, version = run.versioned(OPSPEC_DEBUG_HANDLES, detect.opspec_version)
    if det.schema is None:
        return det, None, None
    top = run.top()
    run.keys_of(wire.opspec_fields(det.schema))
    kernels = run.decode_map(top["kernels"], list[wire.OpSpecEntry], "$.kernels") if "kernels" in top else None
    handles = run.decode_map(top["handles"], wire.HandleEntry, "$.handles") if "handles" in top else None
    bundles = run.decode_map(top["bundles"], wire.BundleEntry, "$.bundles") if "bundles" in top else None
    if run.problems:
        return det, None, None
    assert kernels is not None and handles is not None  # a missing key is a problem above
    doc: wire.OpSpecDebugHandles | wire.OpSpecDebugHandlesV2 = (
        wire.OpSpecDebugHandles(version, kernels, handles)
        if bundles is None  # a version 2 document without it has a problem above
        else wire.OpSpecDebugHandlesV2(version, kernels, handles, bundles)
    )
    run.problems.extend(rules.check_types(doc))
    if run.problems:
        return det, None, None
    return det, doc, add(tally_keys(top), tally(kernels), tally(handles), tally(bundles or {}))


def fast_diagnostics(run: Decoding) -> Decoded:
    det, version = run.versioned(DIAGNOSTICS, detect.diagnostics_version)
    if det.schema is None:
        return det, None, None
    top = run.top()
    run.keys_of(wire.diagnostics_fields(det.schema))
    values = {}
    for name, type_ in wire.diagnostics_field_types(det.schema).items():
        if name in top and name != "version":
            values[name] = run.decode(top[name], type_, f"$.{name}")
    if run.problems:
        return det, None, None
    doc = wire.DIAGNOSTICS_DOCS[det.schema](version=version, **values)
    run.problems.extend(diagnostics_rules.check_diagnostics_types(doc))
    if run.problems:
        return det, None, None
    return det, doc, add(tally_keys(top), tally(list(values.values())))


def fast_audit(run: Decoding) -> Decoded:
    """A provenance audit: top-level keys one by one (exact paths), then the rules."""
    det, version = run.versioned(AUDIT, detect.audit_version)
    if det.schema is None:
        return det, None, None
    top = run.top()
    doc_type = wire.AUDIT_DOCS[det.schema]
    run.keys_of(doc_type.__struct_fields__)
    values = {}
    for name, type_ in wire.field_types(doc_type).items():
        if name in top and name != "version":
            values[name] = run.decode(top[name], type_, f"$.{name}")
    if run.problems:
        return det, None, None
    doc = doc_type(version=version, **values)
    run.problems.extend(rules.check_audit_types(doc))
    if run.problems:
        return det, None, None
    return det, doc, add(tally_keys(top), tally(list(values.values())))


def fast_source_lines(run: Decoding) -> Decoded:
    """The viewer's source lines: small, but checked in every tracked process as the hook
    writes them, where importing jsonschema alone would cost more than the compile's check."""
    det, version = run.versioned(SOURCE_LINES, detect.source_lines_version)
    if det.schema is None:
        return det, None, None
    top = run.top()
    run.keys_of(wire.SourceLinesDoc.__struct_fields__)
    context = run.decode(top["context"], int | float, "$.context") if "context" in top else MISSING
    files = run.decode_map(top["files"], wire.SourceLinesFile, "$.files") if "files" in top else MISSING
    if run.problems:
        return det, None, None
    doc = wire.SourceLinesDoc(version, context, files)
    run.problems.extend(rules.check_source_lines_types(doc))
    if run.problems:
        return det, None, None
    return det, doc, add(tally_keys(top), tally(files))


# --- the full path: a parsed, schema-valid document (of schema version ``schema``) --------


def as_parsed(schema: int, doc: Mapping[str, Any]) -> Any:
    """The rules take the parsed document itself (a map of lists, or a companion's)."""
    return doc


def typed_node_mappings(schema: int, doc: Mapping[str, Any]) -> dict[str, Any]:
    return {f: doc[f] for f in MAP_FIELDS if f in doc}


def typed_kernel_information(schema: int, doc: Mapping[str, Any]) -> Any:
    return msgspec.convert(dict(doc), types.GenericAlias(dict, (str, wire.KERNEL_INFO_ENTRIES[schema])))


def typed_opspec(schema: int, doc: Mapping[str, Any]) -> Any:
    return msgspec.convert(dict(doc), wire.OPSPEC_DOCS[schema])


def typed_diagnostics(schema: int, doc: Mapping[str, Any]) -> Any:
    return msgspec.convert(dict(doc), wire.DIAGNOSTICS_DOCS[schema])


def typed_audit(schema: int, doc: Mapping[str, Any]) -> Any:
    return msgspec.convert(dict(doc), wire.AUDIT_DOCS[schema])
