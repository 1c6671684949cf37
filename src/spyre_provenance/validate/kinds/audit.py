"""The provenance audit (``provenance_audit``, ``compile --audit``): one per compile, where
each field of provenance was dropped on the way through the compile.

Its record and every part of it: a ``version`` key, told by its keys ``graphs`` and
``toolchain``, the fast decoder, ``check_audit_types`` (what the wire types leave open:
enums, integral non-negative counts, the kernel-key pattern, a non-empty backend) and
``check_audit`` (its record's ``rules``, the invariants no schema can state: a count's
``present <= total`` and ``missing`` naming exactly the other nodes of its stage; a stage
once per graph; a drop at a stage of its graph where its field is counted; kernel keys once
per graph; a linked kernel is mapped). Both engines run both
(tests/unit/test_validator_agreement.py). For the audit golden case its generated time and
toolchain are fixed and its model's path normalized.

Pure: no torch, no jsonschema.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from spyre_provenance.links import portable
from spyre_provenance.links.redact import Redactor
from spyre_provenance.model import wire
from spyre_provenance.model.audit_records import AUDIT_STAGES, FIELDS
from spyre_provenance.model.detect import KERNEL_KEY_RE, Problem, key_path, keyed, quote, versions
from spyre_provenance.model.names import AUDIT, GRAPH_KINDS
from spyre_provenance.model.names import KINDS as FILINGS
from spyre_provenance.validate.decoding import Decoded, Decoding, add, tally, tally_keys
from spyre_provenance.validate.kind import Kind, as_is

MSG_KERNEL_KEY = 'not a kernel key "<kernel>:<N>" (N a positive integer)'
GRAPH_CACHES = ("bypassed",)
read_version = versions(1)


def _one_of(options: Any, value: Any) -> str:
    return f"expected one of {', '.join(map(quote, options))}, got {quote(value)}"


def _count_problem(path: str, value: Any) -> Problem | None:
    if isinstance(value, float) and not value.is_integer():
        return Problem(path, "expected integer, got number")
    if value < 0:
        return Problem(path, f"must be >= 0, got {quote(value)}")
    return None


def check_audit_types(doc: Any) -> list[Problem]:
    """Enums, counts, key patterns of an ``AuditDocV1`` (decoded, well typed otherwise)."""
    problems: list[Problem] = []
    add = problems.append
    if doc.backend == "":
        add(Problem("$.backend", "must not be empty"))
    measured = doc.measured
    bad = _count_problem("$.measured.provenance_tracking_level", measured.provenance_tracking_level)
    if bad:
        add(bad)
    if measured.graph_caches not in GRAPH_CACHES:
        add(Problem("$.measured.graph_caches", _one_of(GRAPH_CACHES, measured.graph_caches)))
    for i, name in enumerate(measured.run_dependent):
        if name not in FIELDS:
            add(Problem(f"$.measured.run_dependent[{i}]", _one_of(FIELDS, name)))
    dup = _first_duplicate(measured.run_dependent)
    if dup is not None:
        add(Problem("$.measured.run_dependent", f"duplicate entry {quote(dup)}"))
    for g, graph in enumerate(doc.graphs):
        base = f"$.graphs[{g}]"
        if graph.graph not in GRAPH_KINDS:
            add(Problem(f"{base}.graph", _one_of(GRAPH_KINDS, graph.graph)))
        for s, stage in enumerate(graph.stages):
            where = f"{base}.stages[{s}]"
            if stage.name not in AUDIT_STAGES:
                add(Problem(f"{where}.name", _one_of(AUDIT_STAGES, stage.name)))
            for field, count in stage.fields.items():
                path = key_path(f"{where}.fields", field)
                if field not in FIELDS:
                    add(Problem(path, _one_of(FIELDS, field)))
                for name in ("present", "total"):
                    bad = _count_problem(f"{path}.{name}", getattr(count, name))
                    if bad:
                        add(bad)
        for d, drop in enumerate(graph.drops):
            where = f"{base}.drops[{d}]"
            if drop.field not in FIELDS:
                add(Problem(f"{where}.field", _one_of(FIELDS, drop.field)))
            if drop.stage not in AUDIT_STAGES:
                add(Problem(f"{where}.stage", _one_of(AUDIT_STAGES, drop.stage)))
            if drop.since is not None and drop.since not in AUDIT_STAGES:
                add(Problem(f"{where}.since", _one_of((*AUDIT_STAGES, None), drop.since)))
        for k, kernel in enumerate(graph.kernels):
            if not KERNEL_KEY_RE.search(kernel.key):
                add(Problem(f"{base}.kernels[{k}].key", MSG_KERNEL_KEY))
    return problems


def check_audit(schema: int, doc: Any) -> list[Problem]:
    """The invariants of a well-typed audit."""
    problems: list[Problem] = []
    add = problems.append
    for g, graph in enumerate(doc.graphs):
        base = f"$.graphs[{g}]"
        counted: dict[str, set[str]] = {}
        for s, stage in enumerate(graph.stages):
            where = f"{base}.stages[{s}]"
            if stage.name in counted:
                add(Problem(f"{where}.name", f"stage {quote(stage.name)} is listed twice in this graph"))
            counted[stage.name] = set(stage.fields)
            nodes = set(stage.nodes)
            for field, count in stage.fields.items():
                path = key_path(f"{where}.fields", field)
                if count.present > count.total:
                    add(
                        Problem(
                            f"{path}.present", f"{quote(count.present)} is more than the total {quote(count.total)}"
                        )
                    )
                elif len(count.missing) != count.total - count.present:
                    add(
                        Problem(
                            f"{path}.missing",
                            f"names {len(count.missing)} node(s), but total - present is {count.total - count.present}",
                        )
                    )
                if count.total > len(stage.nodes):
                    add(
                        Problem(
                            f"{path}.total", f"{quote(count.total)} is more than the stage's {len(stage.nodes)} nodes"
                        )
                    )
                dup = _first_duplicate(count.missing)
                if dup is not None:
                    add(Problem(f"{path}.missing", f"duplicate entry {quote(dup)}"))
                for i, name in enumerate(count.missing):
                    if name not in nodes:
                        add(Problem(f"{path}.missing[{i}]", f"{quote(name)} is not a node of this stage"))
        for d, drop in enumerate(graph.drops):
            where = f"{base}.drops[{d}]"
            for attr in ("stage", "since"):
                stage = getattr(drop, attr)
                if stage is not None and drop.field not in counted.get(stage, ()):
                    add(
                        Problem(
                            f"{where}.{attr}",
                            f"{quote(drop.field)} is not counted at stage {quote(stage)} of this graph",
                        )
                    )
        keys = [kernel.key for kernel in graph.kernels]
        dup = _first_duplicate(keys)
        if dup is not None:
            add(Problem(f"{base}.kernels", f"kernel {quote(dup)} is listed twice"))
        for k, kernel in enumerate(graph.kernels):
            if kernel.linked and not kernel.mapped:
                add(Problem(f"{base}.kernels[{k}].linked", "is true, but mapped is false"))
    return problems


def _first_duplicate(items: Any) -> Any:
    seen: set[Any] = set()
    for item in items:
        if item in seen:
            return item
        seen.add(item)
    return None


# --- the two decoders ------------------------------------------------------------------------


def fast(run: Decoding) -> Decoded:
    """A provenance audit: top-level keys one by one (exact paths), then the rules."""
    det, version = run.versioned(AUDIT, read_version)
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
    run.problems.extend(check_audit_types(doc))
    if run.problems:
        return det, None, None
    return det, doc, add(tally_keys(top), tally(list(values.values())))


def full(schema: int, doc: Mapping[str, Any]) -> Any:
    return msgspec.convert(dict(doc), wire.AUDIT_DOCS[schema])


# --- golden files and --redact-paths: its machine-dependent text -------------------------------


#: What a golden provenance audit holds for its ``generated`` time (the one field that
#: differs between two runs of the same model on the same toolchain).
GENERATED_TEXT = "<generated>"
#: What a golden audit holds for each part of its toolchain: a golden case's manifest says
#: which torch made it, and a torch change is a hint there, never a change of the case.
TOOLCHAIN_TEXT = "<in manifest.json>"


def normalize(doc: Any, redactor: Redactor) -> Any:
    """A provenance audit with its generated time and toolchain fixed (the manifest holds
    the toolchain) and the model's path (a ``PATH.py:FACTORY`` model) normalized; counts,
    node and kernel names stay."""
    if not isinstance(doc, dict):
        return doc
    doc = dict(doc)
    if "generated" in doc:
        doc["generated"] = GENERATED_TEXT
    if isinstance(doc.get("toolchain"), dict):
        doc["toolchain"] = dict.fromkeys(doc["toolchain"], TOOLCHAIN_TEXT)
    if isinstance(doc.get("model"), str) and ":" in doc["model"]:
        path, _, factory = doc["model"].rpartition(":")
        doc["model"] = f"{portable.normalize_path(path, redactor)}:{factory}"
    return doc


KIND = Kind(
    FILINGS[AUDIT],
    version=read_version,
    current="1",
    fast=fast,
    full=full,
    rules=check_audit,
    normalize=normalize,
    redact=as_is,
    shape=keyed("graphs", "toolchain"),
)
