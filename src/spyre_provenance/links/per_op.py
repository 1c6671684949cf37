"""Which compiled graphs are per-op compiles: torch-spyre's eager mode (``torch_spyre/ops/
eager.py``, ``compile_once``) compiles each ATen op once with ``torch.compile(op)`` and reuses
that one kernel from every line of the model that calls the op. The one rule, here; the
summaries, ``lookup`` and the viewer ask it.

Such a graph is one ATen op overload called on its own: Dynamo traced the op object itself
(no user function around it), so its pre-grad graph holds that one call, which Dynamo names
after the overload (``aten.mm.default`` -> ``mm_default``, ``aten.add.Tensor`` ->
``add_tensor``), and every call site of the graph runs that op alone. Its frames are none of
the user's code inside the graph: the only user frame a stack trace can carry is the caller
of the first call (measured, torch 2.13: ``File "model.py", line 7, in forward`` for a graph
every later call reuses from other lines), so a per-op graph's compile-time line is no answer
to "which line ran this"; the launch's own stack is (``runtime.launches``).

A whole-graph compile whose user function makes one ATen call is alike in every artifact,
and is one op compiled on its own: it is recognized the same. Pure: no torch.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

#: ``aten.<op>.<overload>``: an ATen op overload, as Original ATen names it
_OVERLOAD = re.compile(r"aten\.(?P<op>[A-Za-z0-9_]+)\.(?P<overload>[A-Za-z0-9_]+)")
_NOT_ALNUM = re.compile(r"[^a-z0-9]+")


def pre_grad_name(aten_op: str) -> str | None:
    """The name Dynamo gives a graph node calling ``aten_op`` itself (``aten.add.Tensor`` ->
    ``add_tensor``); None for a name that is no ATen overload."""
    match = _OVERLOAD.fullmatch(aten_op)
    if match is None:
        return None
    return _NOT_ALNUM.sub("_", f"{match['op']}_{match['overload']}".lower()).strip("_")


def per_op_kind(mapping: Mapping[str, Any], aten_ops: Iterable[Iterable[str]]) -> str | None:
    """The ATen op (``aten.mm.default``) when the graph of ``mapping`` (its node mappings)
    is a per-op compile, else None. ``aten_ops``: each call site's Original ATen ops.

    Per-op: one pre-grad node, named as Dynamo names a call of the overload itself (with its
    ``_<n>`` suffix when the name repeats), and every call site of the graph that op alone."""
    pre = mapping.get("preToPost")
    if not isinstance(pre, Mapping) or len(pre) != 1:
        return None
    (node,) = pre
    ops = {op for site in aten_ops for op in site}
    if len(ops) != 1:
        return None
    (op,) = ops
    expected = pre_grad_name(op)
    if expected is None or not isinstance(node, str):
        return None
    return op if node == expected or re.fullmatch(rf"{re.escape(expected)}_[0-9]+", node) else None
