"""The registry of artifact kinds: one module per kind in this folder, each its own ``KIND``.

``KINDS`` is every kind this project reads or writes, one ``validate.kind.Kind`` each, in the
order reports list them (``model.names.ARTIFACT_KINDS``). It is collected from the modules
here, none of them named anywhere else, so adding a kind is three things: its module here,
its filing row in ``model.names`` (which the lower layers read) and its
``schemas/<name>/v<N>.schema.json``. The engines and golden read the registry and nothing else:

- ``guess_artifact`` tells a document without a name by each kind's ``shape``;
- ``fastpath`` picks the kind's fast decoder, ``schemas`` its schema, full-path decoder and
  current version, both engines apply its ``rules``;
- ``golden.normalize`` applies its ``normalize``; ``--redact-paths`` (the hook) its ``redact``;
- tlparse files a logged artifact by its TORCH_TRACE name as ``<name>_<n>.json``, which
  ``filing.file_pattern`` matches (``detect.artifact_for_filename``).

A kind's module holds all of it: its record, version reader, decoders, rules, normalizer,
redaction and shape. What kinds share stays beside them: ``validate.rules`` (kernel keys,
unique lists, the problems' wording), ``links.portable`` (paths, addresses, handle ids),
``links.redact`` (the one path rewriter), ``model.detect`` (shape tests, version readers).

Pure: no torch, no jsonschema.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from spyre_provenance.model import names
from spyre_provenance.model.detect import Detected, Problem, guess_by_shape
from spyre_provenance.validate.kind import Kind, registry

__all__ = ["KINDS", "Kind", "detect", "guess_artifact", "kind_of", "registry"]


def _collect() -> dict[str, Kind]:
    """Every module of this folder's ``KIND``, checked against the table (``registry``)."""
    modules = sorted(path.stem for path in Path(__file__).parent.glob("*.py") if path.stem != "__init__")
    return registry(*(importlib.import_module(f"{__name__}.{module}").KIND for module in modules))


KINDS = _collect()


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
