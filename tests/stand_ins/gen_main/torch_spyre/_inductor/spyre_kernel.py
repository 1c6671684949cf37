"""Like torch-spyre's ``SpyreKernel``: one OpSpec per ComputedBuffer, kept in ``op_specs``.

The real kernel is an Inductor ``Kernel`` whose ``store``/``store_reduction`` build the OpSpecs
while ``node.codegen`` runs. Here the body is Inductor's CPU C++ (``cpu_body``, outside the
package) and the scheduling calls ``store`` once per scheduler node.
"""

from __future__ import annotations

from typing import Any

import sympy

import cpu_body
from torch_spyre._C import DataFormats

from .op_spec import OpSpec, TensorArg
from .provenance import build_debug_handle


def _op_name(ir_node: Any) -> str:
    atens = {o.meta.get("original_aten") for o in ir_node.origins} - {None}
    return "_".join(sorted(str(a).split(".")[1] for a in atens)) or "unknown"


class SpyreKernel:
    def __init__(self, body: Any) -> None:
        self.body = body  # stand-in only: the CPU C++ kernel group
        self.op_specs: list[Any] = []
        self.current_node: Any = None
        self.kernel_name: str | None = None

    def store(self, snode: Any) -> None:
        self.current_node = snode
        self.op_specs.append(self.create_op_spec(_op_name(snode.node), snode.is_reduction(), {}))

    def create_op_spec(self, op: str, is_reduction: bool, op_info: dict) -> OpSpec:
        ir_node = self.current_node.node  # ComputedBuffer
        sizes = [s for group in self.current_node.get_ranges() for s in group]
        it_space = {sympy.Symbol(f"c{i}"): (size, 1) for i, size in enumerate(sizes)}
        try:  # as torch-spyre: provenance never fails a build
            debug_handle = build_debug_handle(ir_node)
        except Exception:  # noqa: BLE001
            debug_handle = None
        return OpSpec(
            op,
            is_reduction,
            it_space,
            self._args(),
            op_info,
            node_output_ranges=tuple(ir_node.get_size()),
            debug_handle=debug_handle,
        )

    def _args(self) -> list[TensorArg]:
        call_args = self.body.args.python_argdefs()[1]  # the kernel's argument list
        return [
            TensorArg(
                is_input=t.is_input,
                arg_index=call_args.index(t.name) if t.name in call_args else -1,
                device_dtype=DataFormats.of(t.dtype),
                device_size=t.size,
                device_coordinates=[] if t.index is None else [t.index],
                allocation={"hbm": 0},
                name=t.name,
            )
            for t in cpu_body.tensors(self.current_node)
        ]

    def codegen_kernel(self) -> str:
        return cpu_body.source(self.body)

    def call_kernel(self, name: str, node: Any = None) -> None:
        cpu_body.call(self.body, name)
