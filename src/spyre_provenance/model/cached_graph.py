"""What a tracked compile stores with its Inductor cache entry, so a hit is recorded as fully
as the miss that wrote it (``capture.graph_cache`` puts it there and reads it back).

One ``CachedGraph`` per compiled graph: the graph's ``GraphResult`` as the hook finished it
(records, the three artifacts, diagnostics), the pre-grad graph compile_fx logged before
it (upstream's own replay leaves that out, so tlparse's page of a hit would link no
pre-grad node), and the bundle files a backend wrote at code generation. Encoded as
msgpack: bytes an entry's pickle carries as they are. Pure: no torch.
"""

from __future__ import annotations

import msgspec

from spyre_provenance.model.records import GraphResult

#: The stored form's version. It is part of tracking's own cache-key component
#: (``capture.graph_cache.key_component``), so an entry of another form is never hit: a
#: change here recompiles once instead of misreading an old entry.
#: 2: the diagnostics judge misnamed handles, which a form-1 entry never did; 3: the records
#: keep their nodes' module stacks, which a form-2 entry never did
CACHE_FORMAT = 3


class CachedGraph(msgspec.Struct, kw_only=True):
    """One graph's provenance as stored with its cache entry.

    :ivar result: the graph as the hook finished it; a hit takes its records, artifacts and
        diagnostics, and its own place, compile id and label.
    :ivar pre_grad_graph: the ``before_pre_grad_graph`` text compile_fx logged for the
        compile (forward or inference graph only; None where it was not logged).
    :ivar bundles: kernel name -> its bundle folder's name, then each bundle file's text
        (``Backend.written_bundles``).
    """

    result: GraphResult
    pre_grad_graph: str | None = None
    bundles: dict[str, list[str]] = {}
    format: int = CACHE_FORMAT


def encode(cached: CachedGraph) -> bytes:
    return msgspec.msgpack.encode(cached)


def decode(data: object) -> CachedGraph | None:
    """The stored graph, or None when ``data`` is none of ours or of another format."""
    if not isinstance(data, bytes):
        return None
    try:
        cached = msgspec.msgpack.decode(data, type=CachedGraph)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    return cached if cached.format == CACHE_FORMAT else None
