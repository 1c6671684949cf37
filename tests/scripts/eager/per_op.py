"""Eager mode in torch-spyre's pattern (``torch_spyre/ops/eager.py``, ``compile_once``), written
for the CPU: each ATen op is compiled once, on its own, with ``torch.compile(op)`` at its first
call, and that compiled op serves every later call, from whichever line of the model it comes.
torch-spyre registers these as the ``spyre`` device's kernels; on the CPU the model calls them
by name (``ops.mm``), so the path from the user's line to the compiled op is the same shape:
the user's frame, this module's dispatch, the compiled op."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch


def compiled_once(op: Any) -> Callable[..., Any]:
    """``op`` compiled at its first call, and that compiled op reused by every call after."""
    compiled: Any = None

    @functools.wraps(op)
    def dispatch(*args: Any) -> Any:
        nonlocal compiled
        if compiled is None:
            compiled = torch.compile(op, dynamic=False)
        return compiled(*args)

    return dispatch


aten = torch.ops.aten
mm = compiled_once(aten.mm.default)
add = compiled_once(aten.add.Tensor)
relu = compiled_once(aten.relu.default)
