"""Like an older torch-spyre's ``_inductor/scheduler.py``: ``SuperDSCScheduling`` before provenance.

Base class and call order as main's (gen_main's ``scheduler.py``, read at torch-spyre
0b06ec7). The real class does not override ``codegen_comment``; the inherited Inductor method
of an older torch wrote nothing, which the no-op below stands for, so the adapter has to
write the handle comments.

Stand-in only: the body is Inductor's CPU C++, and what the generations share is
``cpu_body.SchedulingBody``.
"""

from __future__ import annotations

from typing import Any

from torch._inductor.scheduler import BaseScheduling

import cpu_body

from .spyre_kernel import SpyreKernel


class SuperDSCScheduling(cpu_body.SchedulingBody, BaseScheduling):
    kernel_type = SpyreKernel  # no KTIR emitter yet: sdsc_ names only

    def codegen_comment(self, node_schedule: Any, kernel_name: str | None = None) -> None:
        pass  # the inherited Inductor method of that era: no handle, no comment
