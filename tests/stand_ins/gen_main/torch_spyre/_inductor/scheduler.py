"""Like torch-spyre main's ``_inductor/scheduler.py``: ``SuperDSCScheduling(BaseScheduling)``.

What the adapter relies on, as in main: the base class, no ``codegen_comment`` of its own (so
torch 2.13's ``BaseScheduling.codegen_comment`` runs: a lazy import of
``set_kernel_post_grad_provenance_tracing`` from ``torch._inductor.debug``, the call, the
``# [Provenance debug handles] name:N`` line), and ``codegen_node``'s order: OpSpecs into a
``SpyreKernel`` -> ``define_kernel(src_code, node_schedule, kernel)`` -> ``codegen_comment``
-> ``kernel.call_kernel(name)`` -> free buffers. No fusion, as in main.

Stand-in only: the body is Inductor's CPU C++, and what the generations share is
``cpu_body.SchedulingBody``.
"""

from __future__ import annotations

from torch._inductor.scheduler import BaseScheduling

import cpu_body
from torch_spyre.execution.async_compile import SpyreAsyncCompile

from . import config
from .spyre_kernel import SpyreKernel


class SuperDSCScheduling(cpu_body.SchedulingBody, BaseScheduling):
    kernel_type = SpyreKernel
    config = config
    async_compile = SpyreAsyncCompile()
    # and no codegen_comment: BaseScheduling's runs, as in main
