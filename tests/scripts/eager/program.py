"""A small model run in eager mode with per-op compiles (``per_op``), then profiled with Python
stacks, as torch-spyre's end-to-end profiling guide profiles Granite.

``python program.py OUT TRACE [--no-stacks TRACE2]``: tracks the compiles with the reference
backend (``OUT``; ``TORCH_TRACE`` is set by the caller), runs the model once (every op compiles
there), then twice under ``torch.profiler`` with ``with_stack=True`` and exports ``TRACE``.
Under ``spyre-provenance run`` (``SPYRE_PROVENANCE_OUT`` set) the run tracks it, into the
run's folder, and ``OUT`` is not written: the program leaves the tracking to it.
``mm`` is launched from three functions (``attend``, ``mix``, ``project``) and ``add`` from
two, each with its own operand shapes in some, so one compiled op serves several functions and
an op kind has one or more graphs. ``head`` is one whole graph (``torch.compile`` of a
function), launched from two functions: a whole-graph kernel with two launching places."""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

import torch
import torch._inductor.config as inductor_config

sys.path.insert(0, str(Path(__file__).resolve().parent))

import per_op as ops

import spyre_provenance

torch.manual_seed(0)
W1, W2, W3 = torch.randn(16, 16), torch.randn(16, 16), torch.randn(16, 8)
BIAS = torch.randn(16)


def attend(x):
    scores = ops.mm(x, W1)
    return ops.add(scores, BIAS)


def mix(x):
    return ops.relu(ops.mm(x, W2))


def project(x):
    return ops.mm(x, W3)


@torch.compile
def head(y):
    return torch.tanh(y) * 2.0


def first_head(y):
    return head(y)


def second_head(y):
    return head(y + 1.0)


def forward(x):
    h = attend(x)
    h = ops.add(mix(h), x)
    y = project(h)
    return first_head(y) + second_head(y)


def main(out: str, trace: str) -> None:
    inductor_config.cpp.enable_kernel_profile = True  # each kernel a profiler event (graph_<i>_...)
    x = torch.randn(4, 16)
    under_run = bool(os.environ.get("SPYRE_PROVENANCE_OUT"))  # plugin.startup already tracks it
    tracking = contextlib.nullcontext() if under_run else spyre_provenance.tracking("reference", out_dir=out)
    with tracking:
        forward(x)  # every op compiles here
        activities = [torch.profiler.ProfilerActivity.CPU]
        with torch.profiler.profile(activities=activities, with_stack=True) as prof:
            forward(x)
            forward(x)
    prof.export_chrome_trace(trace)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
