"""Normalization for golden files: what varies between machines rewritten, nothing else;
and the serializer.

Each artifact kind's normalizer is its record's (``validate.kinds``, made of ``links.portable``'s
pure transforms); this module gives them golden's conventions (``Roots``: absolute paths become relative to the project root, or
``<site-packages>/...``, ``<stdlib>/...``, ``<tmp>/...``, the path rules being ``redact``'s
through ``Roots.redactor``) and picks the one of a document's kind. Kernel names, handle
numbers, node names and every order stay as compiled. Normalizing twice changes nothing.

Pure: no torch import.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import json
import os
import sysconfig
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from spyre_provenance.golden.cases import source_checkout
from spyre_provenance.links import portable
from spyre_provenance.links.redact import Redactor, path_variants
from spyre_provenance.validate.kinds import KINDS

#: Not a provenance artifact but normalized like one: the golden file of the SuperDSC
#: bundles' ``debug_handle_`` values (``{"format": 1, "bundles": {path: handle}}``).
BUNDLE_HANDLES = "superdsc_bundle_handles"


@dataclasses.dataclass(frozen=True)
class Roots:
    """Folders whose absolute paths are rewritten: ``project`` ones to relative paths,
    ``tmp`` ones to ``<tmp>/...``. Any ``site-packages`` folder becomes ``<site-packages>``."""

    project: tuple[str, ...] = ()
    tmp: tuple[str, ...] = ()
    stdlib: tuple[str, ...] = ()

    @classmethod
    def default(cls, *project: str | os.PathLike[str] | None) -> Roots:
        """The given project roots (None skipped), else this source checkout, else the
        current folder; the temp dir; the standard library."""
        roots = [Path(p) for p in project if p is not None]
        if not roots:
            roots = [source_checkout() or Path.cwd()]
        tmp = {tempfile.gettempdir(), "/tmp"}
        stdlib = {sysconfig.get_paths()["stdlib"]}
        return cls(project=_variants(roots), tmp=_variants(tmp), stdlib=_variants(stdlib))

    def rules(self) -> list[tuple[str, str]]:
        """(prefix, replacement), longest prefix first: a project inside /tmp stays relative."""
        pairs = [(r, "") for r in self.project] + [(r, "<tmp>/") for r in self.tmp]
        pairs += [(r, "<stdlib>/") for r in self.stdlib]
        return sorted(pairs, key=lambda p: -len(p[0]))

    @functools.cached_property
    def redactor(self) -> Redactor:
        """These rules as a ``redact.Redactor``, the one path rewriter: any site-packages
        folder first, then the longest root; no home or user rule (the roots cover them)."""
        return Redactor(tuple(self.rules()), user=None)


def _variants(paths: Iterable[str | os.PathLike[str]]) -> tuple[str, ...]:
    """Each path as given and resolved, with a trailing separator (redact's rule)."""
    return tuple(path_variants(paths))


def normalize_path(path: str, roots: Roots) -> str:
    """An absolute path as the machine-independent text a golden file holds."""
    return portable.normalize_path(path, roots.redactor)


def normalize_text(text: str, roots: Roots) -> str:
    """A stack trace: the path of every ``File "..."`` frame, and memory addresses."""
    return portable.normalize_text(text, roots.redactor)


def normalize(artifact: str | None, doc: Any, roots: Roots | None = None) -> Any:
    """The one normalize function: a machine-independent copy of one artifact document
    (``artifact`` None: a file no artifact pattern names, copied as it is).

    Each kind's record (``validate.kinds``) holds its normalizer: node
    mappings hold only names, so they come back as they are; stack traces and handle sources
    lose their machine's paths and addresses; handle ids are recomputed from the normalized
    content (children first) and remapped wherever they are referenced. A name no kind has
    comes back as it is.
    """
    roots = roots if roots is not None else Roots.default()
    doc = copy.deepcopy(doc)
    if artifact == BUNDLE_HANDLES:  # no artifact kind: golden's own file
        if isinstance(doc, dict) and isinstance(doc.get("bundles"), dict):
            return {**doc, "bundles": portable.normalize_bundle_handles(doc["bundles"], roots.redactor)}
        return doc
    kind = KINDS.get(artifact) if artifact is not None else None
    return doc if kind is None else kind.normalize(doc, roots.redactor)


def normalize_bundle_handles(bundles: Mapping[str, Any], roots: Roots | None = None) -> dict[str, Any]:
    """SuperDSC bundles' ``debug_handle_`` values (bundle path -> handle dict or None), each
    normalized as the OpSpec table's handles are: paths, addresses, and every ``id`` in the
    tree recomputed from the normalized content, so a bundle handle and the OpSpec handle
    it copies get the same id."""
    roots = roots if roots is not None else Roots.default()
    return portable.normalize_bundle_handles(copy.deepcopy(dict(bundles)), roots.redactor)


# --- the serializer -------------------------------------------------------------------------------


def dumps(doc: Any) -> bytes:
    """The one serializer for golden files: key order as built, 2-space indent, UTF-8, final
    newline. Readable in a code review; ``golden update``, ``pytest --force-regen`` and the
    pytest plugin all write through it."""
    return (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
