"""Kernel stack traces (``inductor_provenance_tracking_kernel_stack_traces``): each kernel's
source frames, torch's and the hook's, a bare map ``{"<kernel>:<N>": ["File ...", ...]}``.

Its record and every part of it: no version key (kernel keys with ``:<N>`` make it version 2),
told by its shape as a bare map of lists, kernel keys unique, paths and addresses normalized
for golden files and redacted for ``--redact-paths``.

Pure: no torch, no jsonschema.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from spyre_provenance.links import portable
from spyre_provenance.links.redact import Redactor
from spyre_provenance.model.detect import KERNEL_KEY_RE, Detected, Problem, bare_map
from spyre_provenance.model.names import KERNEL_STACK_TRACES
from spyre_provenance.model.names import KINDS as FILINGS
from spyre_provenance.model.records import NodeMap
from spyre_provenance.validate.decoding import MISSING, Decoded, Decoding, tally_map
from spyre_provenance.validate.kind import Kind, as_parsed
from spyre_provenance.validate.rules import check_kernel_keys, check_unique_lists

# --- which version, which shape ---------------------------------------------------------------


def read_version(artifact: str, doc: Mapping[str, Any]) -> Detected:
    """Stack traces never have a version key: ``:<N>`` keys (or no keys) make them version 2."""
    v2 = not doc or any(KERNEL_KEY_RE.search(k) for k in doc)
    return Detected(artifact, "2", 2) if v2 else Detected(artifact, "1", 1)


SHAPE = bare_map("array")


# --- the two decoders ------------------------------------------------------------------------


def fast(run: Decoding) -> Decoded:
    doc = run.decode_map(run.data, list[str], "$", top=True)
    if doc is MISSING:
        return read_version(KERNEL_STACK_TRACES, {}), None, None
    det = read_version(KERNEL_STACK_TRACES, doc)
    assert det.schema is not None  # a kernel map's version is in its shape: never unknown
    return det, doc, tally_map(doc)


# --- the rules -------------------------------------------------------------------------------


def check(schema: int, doc: NodeMap) -> list[Problem]:
    problems: list[Problem] = []
    check_kernel_keys(doc, "$", schema == 2, problems)
    check_unique_lists(doc, "$", problems)
    return problems


# --- golden files and --redact-paths: its machine-dependent text -------------------------------


def normalize(doc: Any, redactor: Redactor) -> Any:
    if not isinstance(doc, dict):
        return doc
    return {k: portable.normalize_traces(v, redactor) for k, v in doc.items()}


def redact(traces: dict[str, list[str]] | None, redactor: Redactor) -> dict[str, list[str]] | None:
    if traces is None:
        return None
    return {key: [redactor.redact_text(t) for t in values] for key, values in traces.items()}


KIND = Kind(
    FILINGS[KERNEL_STACK_TRACES],
    version=read_version,
    current="2",
    fast=fast,
    full=as_parsed,
    rules=check,
    normalize=normalize,
    redact=redact,
    shape=SHAPE,
)
