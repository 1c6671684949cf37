"""An artifact kind is one record: its schema, decoders, rules, normalizer and filing.

``KINDS`` is the registry: every kind this project reads or writes, one ``Kind`` each, in
the order reports list them. The engines and golden read it and nothing else, so adding a
kind is adding its record here (with its name and filing row in ``model.names``, which the
lower layers read, and its ``schemas/<name>/v<N>.schema.json``):

- ``guess_artifact`` tells a document without a name by each kind's ``shape``;
- ``fastpath`` picks the kind's fast decoder, ``schemas`` its schema, full-path decoder and
  current version, both engines apply its ``rules``;
- ``golden.normalize`` applies its ``normalize``; ``--redact-paths`` its ``redact``;
- tlparse files a logged artifact by its TORCH_TRACE name as ``<name>_<n>.json``, which
  ``filing.file_pattern`` matches (``detect.artifact_for_filename``).

The record sits here, in validate, because its rules and decoders do; its normalizer and its
redaction are pure transforms a layer below (``links.portable``, ``links.redact``), so golden
and the hook read them through this record.

Pure: no torch, no jsonschema.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from spyre_provenance.links import portable
from spyre_provenance.links.redact import Redactor
from spyre_provenance.model import names
from spyre_provenance.model.detect import (
    Detected,
    Problem,
    Shape,
    VersionReader,
    audit_shape,
    audit_version,
    diagnostics_shape,
    diagnostics_version,
    guess_by_shape,
    kernel_information_shape,
    kernel_information_version,
    mapping_shape,
    mapping_version,
    opspec_shape,
    opspec_version,
    sidecar_shape,
    sidecar_version,
    source_lines_version,
    stack_traces_shape,
    stack_traces_version,
)
from spyre_provenance.model.names import ArtifactKind
from spyre_provenance.validate import decoders, diagnostics_rules, rules, spyre_sidecar
from spyre_provenance.validate.audit_rules import check_audit
from spyre_provenance.validate.decoding import Decoding

#: The fast engine's decoder of a kind (``validate.decoders``).
FastDecoder = Callable[[Decoding], decoders.Decoded]
#: A schema-valid parsed document (of schema version N) as the typed values the rules take.
FullDecoder = Callable[[int, Mapping[str, Any]], Any]
#: What no schema can state, on the typed values (schema version N).
Rules = Callable[[int, Any], list[Problem]]
#: A machine-independent copy of a document (a copy the normalizer may change).
Normalizer = Callable[[Any, Redactor], Any]
#: A copy of a document with its absolute paths and user name rewritten (``--redact-paths``):
#: a ``Redactor`` method, so the record names it unbound (``Redactor.stack_traces``).
Redaction = Callable[[Redactor, Any], Any]


@dataclasses.dataclass(frozen=True)
class Kind:
    """One kind of document: every part a reader or writer of it needs."""

    #: where it is written and filed: TORCH_TRACE name (tlparse files it as ``<name>_<n>.json``),
    #: file-name pattern, writers, and whether it is logged, compared by golden, validated
    filing: ArtifactKind
    #: how its version is told from a document (``model.detect``'s readers)
    version: VersionReader
    #: the version this project writes (``check_built_artifacts`` holds built documents to
    #: it); None for a kind only others write
    current: str | None
    #: the msgspec decoder, or None: a companion document only jsonschema reads (it is small)
    fast: FastDecoder | None
    full: FullDecoder
    rules: Rules
    normalize: Normalizer
    redact: Redaction
    #: how it is told by its shape, when it has no file name (``model.detect``'s shapes);
    #: None: only by its name
    shape: Shape | None
    #: its schema folder, ``schemas/<schema>/v<N>.schema.json``; by default its name
    schema: str = ""

    def __post_init__(self) -> None:
        if not self.schema:
            object.__setattr__(self, "schema", self.filing.name)
        for part in ("version", "full", "rules", "normalize", "redact"):
            if not callable(getattr(self, part)):
                raise TypeError(f"artifact kind {self.filing.name}: {part} is not a function")
        if self.fast is None and self.filing.provenance:
            raise TypeError(f"artifact kind {self.filing.name}: a provenance artifact needs its fast decoder")
        if self.shape is not None and not isinstance(self.shape, Shape):
            raise TypeError(f"artifact kind {self.filing.name}: shape is not a model.detect.Shape")
        if self.fast is not None and not callable(self.fast):
            raise TypeError(f"artifact kind {self.filing.name}: fast is not a function")

    @property
    def name(self) -> str:
        return self.filing.name


def registry(*kinds: Kind, table: tuple[ArtifactKind, ...] = names.ARTIFACT_KINDS) -> dict[str, Kind]:
    """The kinds by name, in the order of ``table`` (``model.names.ARTIFACT_KINDS``, which the
    lower layers read): each row of it has exactly one record, and nothing else is registered."""
    by_name = {kind.name: kind for kind in kinds}
    if len(by_name) != len(kinds):
        raise ValueError("an artifact kind is registered twice")
    rows = [row.name for row in table]
    if set(by_name) != set(rows):
        missing = ", ".join(sorted(set(rows) - set(by_name))) or "none"
        extra = ", ".join(sorted(set(by_name) - set(rows))) or "none"
        raise ValueError(f"artifact kinds without a record: {missing}; records without a row: {extra}")
    if any(by_name[row.name].filing != row for row in table):
        raise ValueError("an artifact kind's filing differs from its row in model.names.ARTIFACT_KINDS")
    return {name: by_name[name] for name in rows}


_FILING = names.KINDS

KINDS = registry(
    Kind(
        _FILING[names.NODE_MAPPINGS],
        version=mapping_version,
        current="2.0",
        fast=decoders.fast_node_mappings,
        full=decoders.typed_node_mappings,
        rules=rules.check_node_mappings,
        normalize=portable.as_is,  # names only
        redact=Redactor.unchanged,
        shape=mapping_shape,
    ),
    Kind(
        _FILING[names.KERNEL_STACK_TRACES],
        version=stack_traces_version,
        current="2",
        fast=decoders.fast_stack_traces,
        full=decoders.as_parsed,
        rules=rules.check_stack_traces,
        normalize=portable.normalize_stack_traces,
        redact=Redactor.stack_traces,
        shape=stack_traces_shape,
    ),
    Kind(
        _FILING[names.KERNEL_INFORMATION],
        version=kernel_information_version,
        current="1",
        fast=decoders.fast_kernel_information,
        full=decoders.typed_kernel_information,
        rules=rules.check_kernel_information,
        normalize=portable.normalize_kernel_information,
        redact=Redactor.kernel_information,
        shape=kernel_information_shape,
    ),
    Kind(
        _FILING[names.OPSPEC_DEBUG_HANDLES],
        version=opspec_version,
        current="2",
        fast=decoders.fast_opspec,
        full=decoders.typed_opspec,
        rules=rules.check_opspec,
        normalize=portable.normalize_opspecs,
        redact=Redactor.opspec_handles,
        shape=opspec_shape,
    ),
    Kind(
        _FILING[names.DIAGNOSTICS],
        version=diagnostics_version,
        current="6",
        fast=decoders.fast_diagnostics,
        full=decoders.typed_diagnostics,
        rules=diagnostics_rules.check_diagnostics,
        normalize=portable.as_is,  # never compared by golden files
        redact=Redactor.diagnostics,
        shape=diagnostics_shape,
    ),
    Kind(
        _FILING[names.AUDIT],
        version=audit_version,
        current="1",
        fast=decoders.fast_audit,
        full=decoders.typed_audit,
        rules=check_audit,
        normalize=portable.normalize_audit,
        redact=Redactor.unchanged,
        shape=audit_shape,
    ),
    Kind(
        _FILING[names.SOURCE_LINES],
        version=source_lines_version,
        current="1",
        fast=decoders.fast_source_lines,
        full=decoders.as_parsed,
        rules=rules.no_rules,
        normalize=portable.as_is,
        redact=Redactor.unchanged,
        shape=None,  # told by its file name only
    ),
    Kind(
        _FILING[names.SPYRE_SIDECAR],
        version=sidecar_version,
        current=None,  # torch-spyre writes it
        fast=None,
        full=decoders.as_parsed,
        rules=spyre_sidecar.check,
        normalize=portable.as_is,
        redact=Redactor.unchanged,
        shape=sidecar_shape,
    ),
)


def kind_of(artifact: str) -> Kind:
    """The record of ``artifact``; a name no kind has is a caller's error (ValueError)."""
    try:
        return KINDS[artifact]
    except KeyError:
        raise ValueError(f"unknown artifact {artifact!r}; known: {', '.join(names.ARTIFACTS)}") from None


def guess_artifact(doc: Mapping[str, Any], *, strict: bool = False) -> str | None:
    """The artifact a top-level object's shape says it is (each record's ``shape``), or None.

    Values may be decoded or still ``msgspec.Raw``. ``strict`` (for folder scans) also wants
    debug-handle keys on the two bare-map artifacts, so ``{"a": ["b"]}`` is not taken for one.
    """
    shapes = ((kind.name, kind.shape) for kind in KINDS.values() if kind.shape is not None)
    return guess_by_shape(doc, shapes, strict=strict)


def detect(artifact: str | None, doc: Mapping[str, Any]) -> Detected:
    """Artifact (given, else by shape: ``guess_artifact``) and version (its record's
    ``version`` reader). An unknown artifact name is a caller's error (ValueError)."""
    if artifact is None:
        artifact = guess_artifact(doc)
        if artifact is None:
            return Detected(None, None, None, Problem("$", "not a recognized provenance artifact"))
    return kind_of(artifact).version(artifact, doc)
