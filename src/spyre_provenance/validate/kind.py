"""An artifact kind is one record, ``Kind``: every part a reader or writer of its documents needs.

Each kind's module in ``validate/kinds/`` makes its record (``KIND``) from its own parts;
``validate.kinds`` collects them into the registry, ``KINDS``, checked here (``registry``)
against the one table of filings the lower layers read (``model.names.ARTIFACT_KINDS``).
This module holds the record and the parts any kind may share; it names no kind.

Pure: no torch, no jsonschema.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from spyre_provenance.links.redact import Redactor
from spyre_provenance.model import names
from spyre_provenance.model.detect import Problem, Shape, VersionReader
from spyre_provenance.model.names import ArtifactKind
from spyre_provenance.validate.decoding import Decoded, Decoding

#: The fast engine's decoder of a kind: msgspec from the text, through a ``Decoding`` (exact
#: problem paths, a tally of what was decoded). Returns the detection, the typed document for
#: the rules (None when they must not run: a problem came first, or the decoder ran them
#: itself) and the tally (None when the document did not decode cleanly).
FastDecoder = Callable[[Decoding], Decoded]
#: A schema-valid parsed document (of schema version N) as the typed values the rules take.
FullDecoder = Callable[[int, Mapping[str, Any]], Any]
#: What no schema can state, on the typed values (schema version N).
Rules = Callable[[int, Any], list[Problem]]
#: A machine-independent copy of a document (a copy the normalizer may change): golden files.
Normalizer = Callable[[Any, Redactor], Any]
#: A copy of a document with its absolute paths and user name rewritten (``--redact-paths``),
#: None staying None.
Redaction = Callable[[Any, Redactor], Any]


@dataclasses.dataclass(frozen=True)
class Kind:
    """One kind of document: every part a reader or writer of it needs."""

    #: where it is written and filed: TORCH_TRACE name (tlparse files it as ``<name>_<n>.json``),
    #: file-name pattern, writers, and whether it is logged, compared by golden, validated
    filing: ArtifactKind
    #: how its version is told from a document (``model.detect.versions`` for a ``version`` key)
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
    #: how it is told by its shape, when it has no file name (``model.detect.keyed`` and
    #: the like); None: only by its name
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


# --- parts a kind may share -------------------------------------------------------------------


def as_parsed(schema: int, doc: Mapping[str, Any]) -> Any:
    """The full decoder of a kind whose rules take the parsed document itself."""
    return doc


def no_rules(schema: int, doc: Any) -> list[Problem]:
    """The rules of a kind whose schema says all there is to say (the viewer's source lines)."""
    return []


def as_is(doc: Any, redactor: Redactor) -> Any:
    """The normalizer and the redaction of a kind with no machine-dependent text (node
    mappings hold only names)."""
    return doc
