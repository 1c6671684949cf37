"""torch-spyre's ``op_spec.py`` dataclasses, the fields the adapter reads (same names, order)."""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence


@dataclasses.dataclass(frozen=True)
class SourceLoc:
    file: str
    start_line: int
    start_col: int = 0
    end_line: int | None = None
    end_col: int | None = None


@dataclasses.dataclass(frozen=True)
class ProvenanceTransform:
    kind: str  # rewrite | fusion | decomposition | clone | remap
    pass_name: str
    reason: str | None = None


@dataclasses.dataclass(frozen=True)
class DebugHandle:
    id: int
    source: SourceLoc | None
    aten_op: str | None
    ir_chain: tuple[str, ...]
    fused_from: tuple[DebugHandle, ...] = ()
    transform_history: tuple[ProvenanceTransform, ...] = ()


@dataclasses.dataclass
class TensorArg:
    is_input: bool
    arg_index: int
    device_dtype: Any
    device_size: list[int]
    device_coordinates: list[Any]
    allocation: dict[str, Any]
    name: str | None = None


@dataclasses.dataclass
class OpSpec:
    op: str
    is_reduction: bool
    iteration_space: dict[Any, tuple[Any, int]]  # Symbol -> (range, work division)
    args: Sequence[TensorArg]
    op_info: dict[str, Any]
    tiled_symbols: list[list[Any]] = dataclasses.field(default_factory=list)
    debug_handle: DebugHandle | None = None


@dataclasses.dataclass
class UnimplementedOp:
    op: str


@dataclasses.dataclass
class LoopSpec:
    count: Any
    body: list[Any]
