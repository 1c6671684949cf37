"""Like torch-spyre's ``_inductor/scheduler.py``: ``SuperDSCScheduling``, newest generation.

Same call order as the real ``codegen_node``: build the kernel and its OpSpecs ->
``define_kernel(src_code, node_schedule, kernel)`` -> ``codegen_comment(node_schedule,
kernel_name)`` -> ``kernel.call_kernel(kernel_name)``. This generation's ``codegen_comment``
takes the handle itself, through a by-name import of the tracing function (the case where
patching ``torch._inductor.debug`` alone would miss it).

Stand-in only: it subclasses Inductor's ``CppScheduling`` so the kernel body is CPU C++.
"""

from __future__ import annotations

from typing import Any

from torch._inductor.codegen.cpp import CppScheduling
from torch._inductor.debug import set_kernel_post_grad_provenance_tracing
from torch._inductor.utils import (
    IndentedBuffer,
    Placeholder,
    get_fused_kernel_name,
    get_kernel_metadata,
)
from torch._inductor.virtualized import V

from .spyre_kernel import SpyreKernel


class SuperDSCScheduling(CppScheduling):
    dsc_type = "sdsc"

    def codegen_node(self, node: Any) -> None:
        node_schedule = list(node.get_nodes())
        super().codegen_node(node)  # stand-in: Inductor's C++ body into self.kernel_group
        kernel = SpyreKernel(self.kernel_group)
        for snode in node_schedule:
            kernel.store(snode)
        src_code = kernel.codegen_kernel()
        kernel_name = self.define_kernel(src_code, node_schedule, kernel)
        kernel.kernel_name = kernel_name
        self.codegen_comment(node_schedule, kernel_name)
        kernel.call_kernel(kernel.kernel_name)
        # one kernel per codegen_node, as torch-spyre; nothing left for flush()
        self.reset_kernel_group()
        self._set_flush_status(False)

    def define_kernel(self, src_code: str, node_schedule: Any, kernel: Any) -> str:
        wrapper = V.graph.wrapper_code
        if src_code in wrapper.src_to_kernel:
            return wrapper.src_to_kernel[src_code]
        fused_name = get_fused_kernel_name(node_schedule, "original_aten")
        kernel_name = "_".join([self.dsc_type, fused_name, wrapper.next_kernel_suffix()])
        wrapper.src_to_kernel[src_code] = kernel_name
        wrapper.define_kernel(
            kernel_name,
            _cpu_body(src_code, kernel_name, kernel.kernel_group),
            "\n".join(get_kernel_metadata(node_schedule, wrapper)),
            gpu=False,
        )
        return kernel_name

    def codegen_comment(self, node_schedule: Any, kernel_name: str | None = None) -> None:
        if kernel_name:
            handle = set_kernel_post_grad_provenance_tracing(node_schedule, kernel_name)
            V.graph.wrapper_code.write_provenance_debug_handle(kernel_name, handle)


def _cpu_body(src_code: str, kernel_name: str, kernel_group: Any) -> str:
    """What torch-spyre writes as ``async_compile.sdsc(name, [OpSpecs])``, as a CPU binding."""
    src_code = src_code.replace(str(Placeholder.KERNEL_NAME), "kernel")
    src_code = src_code.replace(str(Placeholder.DESCRIPTIVE_NAME), kernel_name)
    src_code = src_code.replace("#pragma CMT", "//")
    _, _, arg_types = kernel_group.args.cpp_argdefs()
    body = IndentedBuffer()
    body.writeline(f"async_compile.cpp_pybinding({arg_types!r}, r'''")
    body.splice(src_code, strip=True)
    body.writeline("''')")
    return body.getvalue()
