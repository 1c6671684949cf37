"""Like torch-spyre main's ``_inductor/scheduler.py`` with open PR #3449: main plus one override.

Everything as in gen_main's ``scheduler.py`` except ``codegen_comment``: the PR overrides it
to keep the handle Inductor hands out. It imports ``set_kernel_post_grad_provenance_tracing``
lazily inside the method (as torch 2.13's base method does), calls it, writes the
``# [Provenance debug handles] name:N`` line, then records ``(kernel_name, N)`` for its
``spyre_provenance.json`` sidecar.

Stand-in only: the body is Inductor's CPU C++, and what the generations share is
``cpu_body.SchedulingBody``.
"""

from __future__ import annotations

from typing import Any

from torch._inductor.scheduler import BaseScheduling
from torch._inductor.virtualized import V

import cpu_body
from torch_spyre.execution.async_compile import SpyreAsyncCompile

from . import config
from .provenance_artifact import record_kernel_registration
from .spyre_kernel import SpyreKernel


class SuperDSCScheduling(cpu_body.SchedulingBody, BaseScheduling):
    kernel_type = SpyreKernel
    config = config
    async_compile = SpyreAsyncCompile()

    def codegen_comment(self, node_schedule: Any, kernel_name: str | None = None) -> None:
        if not kernel_name:
            return
        from torch._inductor.debug import set_kernel_post_grad_provenance_tracing

        handle = set_kernel_post_grad_provenance_tracing(node_schedule, kernel_name)
        V.graph.wrapper_code.write_provenance_debug_handle(kernel_name, handle)
        record_kernel_registration(V.graph, kernel_name, handle)
