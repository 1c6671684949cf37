"""Like torch-spyre's ``SpyreKernel``: one OpSpec per ComputedBuffer, kept in ``op_specs``.

The real kernel is an Inductor ``Kernel`` whose ``store``/``store_reduction`` build the OpSpecs
while Inductor generates the body. Here Inductor's CPU C++ ``KernelGroup`` holds the body, and
``store`` is called once per scheduler node by the scheduling.
"""

from __future__ import annotations

from typing import Any

import sympy
from torch._inductor.virtualized import V

from .op_spec import OpSpec
from .provenance import build_debug_handle


def _op_name(ir_node: Any) -> str:
    atens = {o.meta.get("original_aten") for o in ir_node.origins} - {None}
    return "_".join(sorted(str(a).split(".")[1] for a in atens)) or "unknown"


class SpyreKernel:
    def __init__(self, kernel_group: Any) -> None:
        self.kernel_group = kernel_group  # stand-in only: the CPU body
        self.op_specs: list[Any] = []
        self.current_node: Any = None
        self.kernel_name: str | None = None

    def store(self, snode: Any) -> None:
        self.current_node = snode
        op = _op_name(snode.node)
        self.op_specs.append(self.create_op_spec(op, snode.is_reduction(), [], {}))

    def create_op_spec(self, op: str, is_reduction: bool, args: list, op_info: dict) -> OpSpec:
        ir_node = self.current_node.node  # ComputedBuffer
        sizes = [s for group in self.current_node.get_ranges() for s in group]
        it_space = {sympy.Symbol(f"c{i}"): (size, 1) for i, size in enumerate(sizes)}
        try:  # as torch-spyre: provenance never fails a build
            debug_handle = build_debug_handle(ir_node)
        except Exception:  # noqa: BLE001
            debug_handle = None
        return OpSpec(op, is_reduction, it_space, args, op_info, debug_handle=debug_handle)

    def codegen_kernel(self) -> str:
        return self.kernel_group.codegen_group()

    def call_kernel(self, name: str, node: Any = None) -> None:
        # The real one writes f"{name}.run(args)"; the CPU body is called like Inductor's C++.
        self.kernel_group.call_kernel(V.graph.wrapper_code, name)
