"""torch-spyre main's ``op_spec.py`` dataclasses: field names, order and defaults as there.

Left out: ``TensorArg``'s ``device_tile_advance_expr``, ``element_arrangement`` and
``work_division`` (coarse tiling and work division; the adapter reads none of them), and the
constant-tensor cache.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from torch_spyre._C import DataFormats


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

    def to_dict(self) -> dict[str, Any]:
        """What a bundle's ``debug_handle_`` holds; the id a string, as torch-spyre writes it."""
        return {
            "id": str(self.id),
            "source": dataclasses.asdict(self.source) if self.source else None,
            "aten_op": self.aten_op,
            "ir_chain": list(self.ir_chain),
            "fused_from": [child.to_dict() for child in self.fused_from],
            "transform_history": [dataclasses.asdict(t) for t in self.transform_history],
        }


@dataclasses.dataclass
class TensorArg:
    is_input: bool
    arg_index: int
    device_dtype: DataFormats
    device_size: list[int]
    device_coordinates: list[Any]  # sympy Exprs over the OpSpec's iteration_space symbols
    allocation: dict[str, Any]  # exactly one of "hbm", "lx", "hbm_pool"
    name: str | None = None


@dataclasses.dataclass
class OpSpec:
    op: str
    is_reduction: bool
    iteration_space: dict[Any, tuple[Any, int]]  # Symbol -> (range, work division)
    args: Sequence[TensorArg]
    op_info: dict[str, Any]
    tiled_symbols: list[list[Any]] = dataclasses.field(default_factory=list)
    tiled_symbol_trip_counts: dict[Any, int] = dataclasses.field(default_factory=dict)
    symbolic_dim_bounds: dict[str, tuple[int, int]] = dataclasses.field(default_factory=dict)
    node_output_ranges: tuple[Any, ...] | None = None
    debug_handle: DebugHandle | None = None


@dataclasses.dataclass
class UnimplementedOp:
    op: str


@dataclasses.dataclass
class LoopSpec:
    count: Any
    body: list[Any]  # OpSpec | UnimplementedOp | LoopSpec
