"""Like torch-spyre main's ``_inductor/scheduler.py`` with open PR #3449: main plus one override.

Everything as in gen_main's ``scheduler.py`` except ``codegen_comment``: the PR overrides it
to keep the handle Inductor hands out. It imports ``set_kernel_post_grad_provenance_tracing``
lazily inside the method (as torch 2.13's base method does), calls it, writes the
``# [Provenance debug handles] name:N`` line, then records ``(kernel_name, N)`` for its
``spyre_provenance.json`` sidecar.

Stand-in only: the body is Inductor's CPU C++ (``cpu_body.CpuBody``, held, not inherited).
"""

from __future__ import annotations

from typing import Any

import cpu_body
from torch._inductor.scheduler import BaseScheduling
from torch._inductor.utils import get_fused_kernel_name, get_kernel_metadata
from torch._inductor.virtualized import V

from . import config
from .provenance_artifact import record_kernel_registration
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
        dsc_type = "ktir" if config.ktir_emitter else "sdsc"
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
        if not kernel_name:
            return
        from torch._inductor.debug import set_kernel_post_grad_provenance_tracing

        handle = set_kernel_post_grad_provenance_tracing(node_schedule, kernel_name)
        V.graph.wrapper_code.write_provenance_debug_handle(kernel_name, handle)
        record_kernel_registration(V.graph, kernel_name, handle)
