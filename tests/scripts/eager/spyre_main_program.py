"""torch-spyre's eager pattern on torch-spyre main's own compiler, through the suite's stand-in:
each ATen op compiled once on its own and reused from two functions, tracked with the
``spyre`` backend, the calls profiled with ``with_stack=True``.

Run in a process booted by ``spyre_main.boot`` (``python spyre_main_program.py OUT TRACE``,
``TORCH_TRACE`` set by the caller). What the stand-in allows: torch-spyre main's ``eager.py``
cannot be reached through the dispatcher (the stand-in's ``spyre`` tensors run every op on
their CPU values in ``__torch_dispatch__``, so Dynamo would trace the stand-in, not the op),
and its kernels cannot run. So each op is compiled as ``compile_once`` does it,
``torch.compile(op, dynamic=False)``, with the route's backend (``spyre_inductor``: torch-spyre
main's ``compile_fx`` on fake ``spyre`` inputs), and the compiled op runs its graph on the CPU."""

from __future__ import annotations

import sys

from spyre_main import boot

boot.boot_from_env()  # torch-spyre imported on the stand-in before anything else touches torch

import torch  # noqa: E402

import spyre_provenance  # noqa: E402
from spyre_main.route import spyre_inductor  # noqa: E402

aten = torch.ops.aten


def compiled_once(op):
    compiled = None

    def dispatch(*args):
        nonlocal compiled
        if compiled is None:
            compiled = torch.compile(op, backend=spyre_inductor, dynamic=False)
        return compiled(*args)

    return dispatch


mm = compiled_once(aten.mm.default)
add = compiled_once(aten.add.Tensor)


def attend(a, b):
    return add(mm(a, b), a)


def mix(a, b):
    return mm(b, a)


def main(out: str, trace: str) -> None:
    a = torch.randn(64, 64, dtype=torch.float16)
    b = torch.randn(64, 64, dtype=torch.float16)
    with spyre_provenance.tracking("spyre", out_dir=out):
        attend(a, b)
        mix(a, b)
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], with_stack=True) as prof:
            attend(a, b)
            mix(a, b)
    prof.export_chrome_trace(trace)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
