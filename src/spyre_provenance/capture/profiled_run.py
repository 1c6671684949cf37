"""``compile --profile``: the tracked compile's model run once more under torch.profiler,
its Chrome trace written to ``OUT/profile/<model>.trace.json`` already annotated.

Inductor's C++ kernels are profiler events only when generated with
``torch._inductor.config.cpp.enable_kernel_profile`` (torch/_inductor/codegen/cpp.py: a
``RAIIAtenRecordFunctionHandle`` named ``graph_<graph id>_<kernel name>`` at the top of each
kernel), so it is on for the whole compile. The reference backend is a ``CppScheduling``,
so its kernels carry the same record, under their ``sdsc_`` names:
``graph_0_sdsc_fused_addmm_relu_t_0``. ``runtime.names`` reads the ``graph_<i>_`` off.

The run reuses the compiled code: ``compile_run._run`` is wrapped (``patches.Patches``) so
that, after the tracked run, the same compiled function runs once more under the profiler
(inference, or forward + backward with ``--train``). No second compile, no record added to
the TORCH_TRACE log. The trace is annotated from this model's log after ``compile`` has
claimed it.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from spyre_provenance.model import folders
from spyre_provenance.patches import Patches

PROFILE_FOLDER = "profile"
_ENV = "TORCHINDUCTOR_CPP_ENABLE_KERNEL_PROFILE"


def trace_path(out: Path, label: str) -> Path:
    return out / PROFILE_FOLDER / f"{label}.trace.json"


@contextlib.contextmanager
def profiling(enabled: bool, out: Path, label: str) -> Iterator[None]:
    """Around ``compile``'s run: kernel profiling on, the profiled run, the annotated trace
    and its summary line at the end. Does nothing when not ``enabled``."""
    if not enabled:
        yield
        return
    raw = out / PROFILE_FOLDER / f".{label}.raw.trace.json"
    failed: list[str] = []
    with Patches() as patches:
        _kernel_profile_on(patches)
        from spyre_provenance.capture import compile_run  # imports no torch

        patches.wrap(compile_run, "_run", lambda run: _profiled(run, raw, failed))
        try:
            yield
        finally:
            if sys.exc_info()[0] is not None:
                raw.unlink(missing_ok=True)
    if failed:
        print(f"  PROFILE NOT WRITTEN: the profiled run failed: {failed[0]}")
    elif raw.is_file():
        print(_annotate(raw, out, label))


def _kernel_profile_on(patches: Patches) -> None:
    """Before torch is imported the environment variable sets it (and ``compile`` must not
    import torch before pointing TORCH_TRACE); after, the config value."""
    if "torch" in sys.modules:
        import torch._inductor.config as inductor_config

        patches.setattr(inductor_config.cpp, "enable_kernel_profile", True)
    else:
        patches.setitem(os.environ, _ENV, "1")


def _profiled(run: Any, raw: Path, failed: list[str]) -> Any:
    done = False

    def wrapper(fn: Any, module: Any, calls: list[tuple[Any, ...]], train: bool) -> list[Any]:
        nonlocal done
        got = run(fn, module, calls, train)
        if not done and fn is not module:  # the tracked compiled run (not eager; a fallback run compiles anew)
            done = True
            try:
                import torch.profiler

                with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
                    run(fn, module, calls, train)
                raw.parent.mkdir(parents=True, exist_ok=True)
                prof.export_chrome_trace(str(raw))
            except Exception as exc:  # noqa: BLE001 - the profile is a by-product: never fail the compile
                raw.unlink(missing_ok=True)
                failed.append(f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}")
        return got

    return wrapper


def _annotate(raw: Path, out: Path, label: str) -> str:
    from spyre_provenance.errors import UnusableInput
    from spyre_provenance.runtime import index
    from spyre_provenance.runtime.annotate import annotate

    target = trace_path(out, label)
    try:
        summary = annotate(raw, index.build([out / folders.TRACE_FOLDER / f"{label}.log"]), target)
    except UnusableInput as exc:
        return f"  PROFILE NOT WRITTEN: {exc}"
    finally:
        raw.unlink(missing_ok=True)
    line = f"  profile: {summary.line()}"
    if summary.annotated != summary.kernel_events:
        line += "\n  PROFILE INCOMPLETE: kernel events without provenance (listed above)"
    return line
