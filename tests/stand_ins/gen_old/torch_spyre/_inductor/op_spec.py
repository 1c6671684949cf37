"""torch-spyre's ``op_spec.py`` before provenance and tiling: five OpSpec fields, six TensorArg."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from torch_spyre._C import DataFormats


@dataclasses.dataclass
class TensorArg:
    is_input: bool
    arg_index: int
    device_dtype: DataFormats
    device_size: list[int]
    device_coordinates: list[Any]
    allocation: Any


@dataclasses.dataclass
class OpSpec:
    op: str
    is_reduction: bool
    iteration_space: dict[Any, tuple[Any, int]]  # Symbol -> (range, core division)
    args: Sequence[TensorArg]
    op_info: dict[str, Any]


@dataclasses.dataclass
class UnimplementedOp:
    op: str
