"""Like torch-spyre's ``SpyreKernel`` before provenance: OpSpecs in ``op_specs``, no handles.

Stand-in: the body is Inductor's CPU C++ (see gen_main's ``spyre_kernel.py`` for the longer note).
"""

from __future__ import annotations

from typing import Any

import sympy

import cpu_body
from torch_spyre._C import DataFormats

from .op_spec import OpSpec, TensorArg


class SpyreKernel:
    def __init__(self, body: Any) -> None:
        self.body = body
        self.op_specs: list[Any] = []
        self.current_node: Any = None
        self.kernel_name: str | None = None

    def store(self, snode: Any) -> None:
        self.current_node = snode
        op = "reduction" if snode.is_reduction() else "pointwise"
        self.op_specs.append(self.create_op_spec(op, snode.is_reduction(), {}))

    def create_op_spec(self, op: str, is_reduction: bool, op_info: dict) -> OpSpec:
        sizes = [s for group in self.current_node.get_ranges() for s in group]
        it_space = {sympy.Symbol(f"c{i}"): (size, 1) for i, size in enumerate(sizes)}
        call_args = self.body.args.python_argdefs()[1]
        args = [
            TensorArg(
                t.is_input,
                call_args.index(t.name) if t.name in call_args else -1,
                DataFormats.of(t.dtype),
                t.size,
                [] if t.index is None else [t.index],
                {"hbm": 0},
            )
            for t in cpu_body.tensors(self.current_node)
        ]
        return OpSpec(op, is_reduction, it_space, args, op_info)

    def codegen_kernel(self) -> str:
        return cpu_body.source(self.body)

    def call_kernel(self, name: str, node: Any = None) -> None:
        cpu_body.call(self.body, name)
