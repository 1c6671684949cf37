"""torch-spyre's OpSpec and DebugHandle, modelled without torch-spyre.

torch-spyre builds one ``OpSpec`` per ComputedBuffer of a kernel and (newer releases) hangs a
``DebugHandle`` on it that says where the op came from. The dataclasses below have the field
names, order and defaults of torch-spyre main's (``torch_spyre/_inductor/op_spec.py``), so code
written against them reads real OpSpecs too: the reference backend builds them
(``reference.handles_from_origins``, ``reference.opspecs_from_nodes``) and the torch-spyre adapter's readers
(``torch_spyre.opspecs``) turn them into records as they do torch-spyre's own. No torch import.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

# --- the dataclasses (field names, order and defaults as in torch-spyre main) -------------
# They stand for torch-spyre's own classes (REFERENCE.md section 4), which the adapter reads
# as they are; the reference backend builds them too, so both backends hand the hook the
# same shapes. The rest of the package reads the records ``debug_handle_record`` and
# ``opspec_record`` make of either (``model.records``): the fields repeat there on purpose.


@dataclasses.dataclass(frozen=True)
class SourceLoc:
    file: str
    start_line: int
    start_col: int = 0
    end_line: int | None = None
    end_col: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class ProvenanceTransform:
    kind: str  # rewrite | fusion | decomposition | clone | remap
    pass_name: str
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class DebugHandle:
    id: int
    source: SourceLoc | None = None
    aten_op: str | None = None
    ir_chain: tuple[str, ...] = ()
    fused_from: tuple[DebugHandle, ...] = ()
    transform_history: tuple[ProvenanceTransform, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON shape; the id is a string because 63 bits overflow a JavaScript number."""
        return {
            "id": str(self.id),
            "source": self.source.to_dict() if self.source else None,
            "aten_op": self.aten_op,
            "ir_chain": list(self.ir_chain),
            "fused_from": [h.to_dict() for h in self.fused_from],
            "transform_history": [t.to_dict() for t in self.transform_history],
        }


@dataclasses.dataclass
class TensorArg:
    """One tensor an OpSpec reads or writes: torch-spyre main's first seven fields.

    ``device_dtype`` is torch-spyre's ``DataFormats`` enum there, text here; ``allocation``
    holds one of ``hbm``, ``lx``, ``hbm_pool``. Left out: ``device_tile_advance_expr``,
    ``element_arrangement``, ``work_division`` (tiling and core ownership; nothing here reads
    them).
    """

    is_input: bool
    arg_index: int  # position in the kernel's argument list; -1 for kernel-local buffers
    device_dtype: str
    device_size: list[int | str]
    device_coordinates: list[str]  # index expressions, as text
    allocation: dict[str, Any] = dataclasses.field(default_factory=dict)
    name: str | None = None


@dataclasses.dataclass
class OpSpec:
    """torch-spyre main's OpSpec, every field: symbols and sympy expressions as text."""

    op: str
    is_reduction: bool
    iteration_space: dict[str, tuple[int | str, int]]  # symbol -> (range, work division)
    args: Sequence[TensorArg]
    op_info: dict[str, Any]
    #: per enclosing loop, innermost first, the symbols that loop tiles ([] outside loops)
    tiled_symbols: list[list[str]] = dataclasses.field(default_factory=list)
    tiled_symbol_trip_counts: dict[str, int] = dataclasses.field(default_factory=dict)
    #: a dynamic-shape symbol's name -> (max, granularity)
    symbolic_dim_bounds: dict[str, tuple[int, int]] = dataclasses.field(default_factory=dict)
    #: the written node's full logical output ranges; None when it exposes none
    node_output_ranges: tuple[int | str, ...] | None = None
    debug_handle: DebugHandle | None = None

    def __post_init__(self) -> None:
        # debug_handle was the sixth field before main put its tiling fields in between: a
        # handle passed by position would silently become tiled_symbols and the op handleless
        if isinstance(self.tiled_symbols, DebugHandle):
            raise TypeError("OpSpec: pass debug_handle by keyword; the sixth field is tiled_symbols")
