"""``compile --profile``: the tracked compile's model run once more under torch.profiler,
its Chrome trace written to ``OUT/profile/<model>.trace.json`` already annotated.

Inductor's C++ kernels are profiler events only when generated with
``torch._inductor.config.cpp.enable_kernel_profile`` (torch/_inductor/codegen/cpp.py: a
``RAIIAtenRecordFunctionHandle`` named ``graph_<graph id>_<kernel name>`` at the top of each
kernel), so it is on for the whole compile. The reference backend is a ``CppScheduling``,
so its kernels carry the same record, under their ``sdsc_`` names:
``graph_0_sdsc_fused_addmm_relu_t_0``. ``runtime.kernel_names`` reads the ``graph_<i>_`` off.

The run reuses the compiled code: the tracked compile hands ``Profiler.after_run`` a rerun
of the same compiled function (``compile.tracked.compile_model``'s ``after_run``), which runs
once more under the profiler (inference, or forward + backward with ``--train``), on the
compile's own inputs, from the model state its first run started from (a KV cache or a
step counter the first run changed is put back). No second compile, no record added to the
TORCH_TRACE log: a rerun that would recompile fails, and the profile says so, rather than
profile graphs the compile never had. The trace is annotated from this model's log after ``compile`` has
claimed it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from spyre_provenance.base.patches import Patches
from spyre_provenance.capture import trace_log
from spyre_provenance.model.layout import Layout
from spyre_provenance.viewer.pages import ProfileRun


class Profiler:
    """``compile --profile`` for one compile: ``after_run`` runs the tracked compiled model
    once more under torch.profiler and exports its trace; ``run`` is what the page writer
    annotates (``viewer.pages``)."""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self.raw = layout.profile_raw
        self.failed: str | None = None

    def after_run(self, rerun: Callable[[], object]) -> None:
        try:
            import torch.profiler

            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
                rerun()
            self.raw.parent.mkdir(parents=True, exist_ok=True)
            prof.export_chrome_trace(str(self.raw))
        except Exception as exc:  # noqa: BLE001 - the profile is a by-product: never fail the compile
            self.raw.unlink(missing_ok=True)
            text = str(exc).strip()
            self.failed = f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"

    @property
    def run(self) -> ProfileRun:
        """The rerun as the page writer (``viewer.pages.write``) annotates it, from the
        compile's log, claimed by then."""
        return ProfileRun(self.raw, self.layout.profile_trace, self.layout.trace_log, self.failed)


@contextlib.contextmanager
def profiling(layout: Layout) -> Iterator[Profiler]:
    """Around a compile: Inductor's C++ kernel profiling on (so kernels are profiler events),
    and the profiler its run hands the compiled model to. A compile that fails leaves no
    raw trace behind."""
    with Patches() as patches:
        trace_log.kernel_profile_on(patches)
        profiler = Profiler(layout)
        try:
            yield profiler
        except BaseException:
            profiler.raw.unlink(missing_ok=True)
            raise
