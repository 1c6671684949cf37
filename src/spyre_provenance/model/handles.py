"""A debug handle's two rules every layer shares: its id, and the post-grad nodes it names.

The reference backend makes ids with ``handle_id``, the golden normalizer recomputes them
with it after rewriting paths, the validator bounds them by ``HANDLE_ID_LIMIT``; the
mapping (on records), the coverage judge (on the artifact's flattened table) and the
diff read a handle's nodes with ``named_nodes``. Pure: imports nothing of torch.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

#: Ids are 63-bit: a non-negative signed 64-bit integer in every language that reads them.
HANDLE_ID_LIMIT = 2**63

H = TypeVar("H")


#: torch-spyre main's handle id rule (``_inductor/provenance.py``, ``_DEBUG_HANDLE_ID_VERSION``).
HANDLE_ID_VERSION = 2


def handle_id(
    source: Mapping[str, Any] | None,
    aten_op: str | None,
    ir_chain: Iterable[str],
    fused_from: Iterable[Any],
) -> int:
    """A handle's id by torch-spyre main's version-2 rule: SHA-256 of the canonical JSON
    (sorted keys, compact separators, ASCII) of ``{"version": 2, "source", "aten_op",
    "ir_chain", "fused_from": children's ids as text}``, its first 8 bytes big-endian,
    shifted right by one (63 bits). The transform history is not hashed: it says how an op
    was produced, not which op it is.

    So the reference backend's ids are the ids torch-spyre computes for the same content
    (tests/compile/test_reference_backend.py checks them against torch-spyre's own
    function). A pure function of content: the same across runs, processes and
    ``PYTHONHASHSEED`` values. It changes when a source path does, which is why the golden
    normalizer recomputes ids after rewriting paths.
    """
    content = {
        "version": HANDLE_ID_VERSION,
        "source": dict(source) if source is not None else None,
        "aten_op": aten_op,
        "ir_chain": list(ir_chain),
        "fused_from": [str(child) for child in fused_from],
    }
    canonical = json.dumps(content, ensure_ascii=True, allow_nan=False, sort_keys=True, separators=(",", ":"))
    digest = hashlib.sha256(canonical.encode("ascii")).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def named_nodes(
    root: H,
    chain: Callable[[H], Sequence[str]],
    children: Callable[[H], Iterable[H]],
    buffers: Iterable[str] = (),
) -> list[str]:
    """The post-grad nodes a handle names: its ``ir_chain`` and its fused constituents',
    breadth first, once each. ``ir_chain`` ends with the buffer an OpSpec writes, and
    buffers are not graph nodes: ``buffers`` are left out. ``chain`` and ``children`` read
    a handle in whatever form it comes (a record with nested handles, or an id into the
    artifact's flattened table); a handle met twice is read once (no cycle loops)."""
    skip = set(buffers)
    found: list[str] = []
    pending, seen = [root], set()
    while pending:
        current = pending.pop(0)
        key = current if isinstance(current, (str, int)) else id(current)
        if key in seen:
            continue
        seen.add(key)
        for name in chain(current):
            if name not in skip and name not in found:
                found.append(name)
        pending.extend(children(current))
    return found
