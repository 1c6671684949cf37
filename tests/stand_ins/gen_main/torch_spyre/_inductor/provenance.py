"""Like torch-spyre's ``provenance.build_debug_handle``: a DebugHandle from a buffer's origins.

Rules (REFERENCE.md section 4): origins sorted by name; source = innermost non-torch frame of
``stack_trace``; aten_op only when the origins agree; ir_chain = origin names + buffer name;
one child handle per origin when there are several; id = 63-bit SHA-256 content hash.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from .op_spec import DebugHandle, SourceLoc

_FRAME = re.compile(r'File "([^"]+)", line (\d+)')


def _stable_id(source: SourceLoc | None, aten_op: str | None, ir_chain: tuple[str, ...]) -> int:
    text = "|".join([f"{source.file}:{source.start_line}" if source else "", aten_op or "", ",".join(ir_chain)])
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") >> 1


def _source(node: Any) -> SourceLoc | None:
    frames = _FRAME.findall((node.meta or {}).get("stack_trace") or "")
    user = [f for f in frames if "/torch/" not in f[0]]
    if not frames:
        return None
    file, line = (user or frames)[-1]
    return SourceLoc(file, int(line))


def _aten(node: Any) -> str | None:
    op = (node.meta or {}).get("original_aten")
    return None if op is None else str(op)


def _one(values: list[Any]) -> Any:
    distinct = {v for v in values if v is not None}
    return distinct.pop() if len(distinct) == 1 else None


def build_debug_handle(buffer: Any) -> DebugHandle | None:
    nodes = sorted(getattr(buffer, "origins", None) or (), key=lambda n: n.name)
    if not nodes:
        return None
    per_node = [(n.name, _source(n), _aten(n)) for n in nodes]
    source = _one([s for _, s, _ in per_node])
    aten_op = _one([a for _, _, a in per_node])
    ir_chain = tuple(name for name, _, _ in per_node) + (buffer.get_name(),)
    fused_from = ()
    if len(per_node) > 1:
        fused_from = tuple(DebugHandle(_stable_id(s, a, (name,)), s, a, (name,)) for name, s, a in per_node)
    return DebugHandle(_stable_id(source, aten_op, ir_chain), source, aten_op, ir_chain, fused_from)
