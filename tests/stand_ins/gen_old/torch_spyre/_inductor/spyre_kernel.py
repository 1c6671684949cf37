"""Like torch-spyre's ``SpyreKernel`` before provenance: OpSpecs in ``op_specs``, no handles.

Stand-in: Inductor's CPU C++ ``KernelGroup`` holds the body (see gen_new for the longer note).
"""

from __future__ import annotations

from typing import Any

import sympy
from torch._inductor.virtualized import V

from .op_spec import OpSpec


class SpyreKernel:
    def __init__(self, kernel_group: Any) -> None:
        self.kernel_group = kernel_group
        self.op_specs: list[Any] = []
        self.current_node: Any = None
        self.kernel_name: str | None = None

    def store(self, snode: Any) -> None:
        self.current_node = snode
        op = "reduction" if snode.is_reduction() else "pointwise"
        self.op_specs.append(self.create_op_spec(op, snode.is_reduction(), [], {}))

    def create_op_spec(self, op: str, is_reduction: bool, args: list, op_info: dict) -> OpSpec:
        sizes = [s for group in self.current_node.get_ranges() for s in group]
        it_space = {sympy.Symbol(f"c{i}"): (size, 1) for i, size in enumerate(sizes)}
        return OpSpec(op, is_reduction, it_space, args, op_info)

    def codegen_kernel(self) -> str:
        return self.kernel_group.codegen_group()

    def call_kernel(self, name: str, node: Any = None) -> None:
        self.kernel_group.call_kernel(V.graph.wrapper_code, name)
