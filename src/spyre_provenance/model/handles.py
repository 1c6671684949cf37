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


def handle_id(
    source: Mapping[str, Any] | None,
    aten_op: str | None,
    ir_chain: Iterable[str],
    fused_from: Iterable[Any],
    transform_history: Iterable[Mapping[str, Any]],
) -> int:
    """A handle's id: BLAKE2b-64 of its content as the artifact writes it (sorted-key
    JSON, children by their ids as text), masked to 63 bits.

    A pure function of content: the same across runs, processes and ``PYTHONHASHSEED``
    values, never of memory addresses or counters. It changes when a source path does,
    which is why the golden normalizer recomputes ids after rewriting paths. A transform's
    ``reason`` is text in the artifact (torch-spyre's ``None`` is written ``""``), so it
    is hashed that way.
    """
    content = {
        "source": dict(source) if source is not None else None,
        "aten_op": aten_op,
        "ir_chain": list(ir_chain),
        "fused_from": [str(child) for child in fused_from],
        "transform_history": [
            {**step, "reason": step.get("reason") or ""} if isinstance(step, Mapping) else step
            for step in transform_history
        ],
    }
    canonical = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    digest = hashlib.blake2b(canonical.encode("ascii"), digest_size=8).digest()
    return int.from_bytes(digest, "big") & (HANDLE_ID_LIMIT - 1)


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
