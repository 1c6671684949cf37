"""torch-spyre main's ``_inductor/scheduler.py`` with a ``codegen_comment`` that holds the
tracing function by name: no torch-spyre release does this.

The method is shaped like torch's own ``CppScheduling.codegen_comment`` (torch 2.13,
``torch/_inductor/codegen/cpp.py``): ``set_kernel_post_grad_provenance_tracing`` is imported at
module level, so patching ``torch._inductor.debug`` alone would miss every call made here. It
is the one case the adapter's ``tracing_modules`` answers; kept so that path stays tested.

Stand-in only: the body is Inductor's CPU C++, and what the generations share is
``cpu_body.SchedulingBody``.
"""

from __future__ import annotations

from typing import Any

from torch._inductor.debug import set_kernel_post_grad_provenance_tracing
from torch._inductor.scheduler import BaseScheduling
from torch._inductor.virtualized import V

import cpu_body
from torch_spyre.execution.async_compile import SpyreAsyncCompile

from . import config
from .spyre_kernel import SpyreKernel


class SuperDSCScheduling(cpu_body.SchedulingBody, BaseScheduling):
    kernel_type = SpyreKernel
    config = config
    async_compile = SpyreAsyncCompile()

    def codegen_comment(self, node_schedule: Any, kernel_name: str | None = None) -> None:
        if kernel_name:
            handle = set_kernel_post_grad_provenance_tracing(node_schedule, kernel_name)
            V.graph.wrapper_code.write_provenance_debug_handle(kernel_name, handle)
