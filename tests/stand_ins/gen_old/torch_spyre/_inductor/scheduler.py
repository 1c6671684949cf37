"""Like an older torch-spyre's ``_inductor/scheduler.py``: ``SuperDSCScheduling`` before provenance.

Base class and call order as main's (gen_main's ``scheduler.py``, read at torch-spyre
0b06ec7). The real class does not override ``codegen_comment``; the inherited Inductor method
of an older torch wrote nothing, which the no-op below stands for, so the adapter has to
write the handle comments.

Stand-in only: the body is Inductor's CPU C++ (``cpu_body.CpuBody``, held, not inherited).
"""

from __future__ import annotations

from typing import Any

import cpu_body
from torch._inductor.scheduler import BaseScheduling
from torch._inductor.utils import get_fused_kernel_name, get_kernel_metadata
from torch._inductor.virtualized import V

from .spyre_kernel import SpyreKernel


class SuperDSCScheduling(BaseScheduling):
    def __init__(self, scheduler: Any) -> None:
        super().__init__(scheduler)
        self._cpu = cpu_body.CpuBody(scheduler)

    def group_fn(self, sizes: Any) -> Any:
        return self._cpu.group_fn(sizes)

    def flush(self) -> None:
        pass  # every kernel is emitted by its own codegen_node

    def can_buffer_be_removed_through_fusion(self, name: str, fused_node_names: Any) -> bool:
        return False

    def can_fuse_vertical(self, node1: Any, node2: Any) -> bool:
        return False

    def can_fuse_horizontal(self, node1: Any, node2: Any) -> bool:
        return False

    def codegen_node(self, node: Any) -> None:
        node_schedule = [n for n in node.get_nodes() if n.get_name() not in self.scheduler.removed_ops]
        if not node_schedule:
            return
        kernel = SpyreKernel(self._cpu.generate(node))  # stand-in: also marks the nodes run
        for snode in node_schedule:
            kernel.store(snode)
        src_code = kernel.codegen_kernel()
        kernel_name = self.define_kernel(src_code, node_schedule, kernel)
        kernel.kernel_name = kernel_name
        self.codegen_comment(node_schedule, kernel_name)
        kernel.call_kernel(kernel.kernel_name)
        self.free_buffers_in_scheduler()

    def define_kernel(self, src_code: str, node_schedule: Any, kernel: Any) -> str:
        wrapper = V.graph.wrapper_code
        if src_code in wrapper.src_to_kernel:
            return wrapper.src_to_kernel[src_code]
        fused_name = get_fused_kernel_name(node_schedule, "original_aten")
        dsc_type = "sdsc"  # no KTIR emitter yet
        kernel_name = "_".join([dsc_type, fused_name, wrapper.next_kernel_suffix()])
        wrapper.src_to_kernel[src_code] = kernel_name
        wrapper.define_kernel(
            kernel_name,
            cpu_body.definition(kernel.body, src_code, kernel_name),
            "\n".join(get_kernel_metadata(node_schedule, wrapper)),
            gpu=False,
        )
        return kernel_name

    def codegen_comment(self, node_schedule: Any, kernel_name: str | None = None) -> None:
        pass  # the inherited Inductor method of that era: no handle, no comment
