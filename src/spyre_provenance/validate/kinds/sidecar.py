"""torch-spyre's own provenance (``spyre_provenance``, its PR #3449): the sidecar
``spyre_provenance.json`` and the TORCH_TRACE record of that name. Written by torch-spyre,
never by this project: a small companion document jsonschema reads (no fast decoder), whose
rules are ``validate.spyre_sidecar``'s (which compile's cross-check and lookup read too).

Pure: no torch, no jsonschema.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from spyre_provenance.model.detect import Detected, Problem, explicit_version, keyed
from spyre_provenance.model.names import KINDS as FILINGS
from spyre_provenance.model.names import SPYRE_SIDECAR
from spyre_provenance.validate import spyre_sidecar
from spyre_provenance.validate.kind import Kind, as_is, as_parsed


def read_version(artifact: str, doc: Mapping[str, Any]) -> Detected:
    """torch-spyre's sidecar names its version ``schemaVersion``."""
    if "schemaVersion" in doc:
        found = explicit_version(artifact, doc["schemaVersion"], {1: ("1", 1)})
        if found.problem is not None:
            return Detected(artifact, None, None, Problem("$.schemaVersion", found.problem.message))
        return found
    return Detected(artifact, "1", 1)  # validation reports the missing key


KIND = Kind(
    FILINGS[SPYRE_SIDECAR],
    version=read_version,
    current=None,  # torch-spyre writes it
    fast=None,
    full=as_parsed,
    rules=spyre_sidecar.check,
    normalize=as_is,
    redact=as_is,
    shape=keyed("schemaVersion", "kernelIdentities"),
)
