"""The reference backend's graph-level half: what it changes before kernels are made.

- ``label_linear``, ``batch_linear`` and ``split_addmm`` (a post-grad device pass,
  ``SplitAddmmPass``): the nodes of a ``linear`` or a ``layer_norm`` say so
  (``original_aten``), a ``linear`` on a batch is a ``bmm`` over it, and ``addmm`` becomes
  ``mm`` + a bias ``add``, all with the linear's stack trace: Linear = permute + mm + add,
  as torch-spyre main decomposes it (REFERENCE.md section 4.1).
- ``clone_shared_inputs`` and ``lx_relayout_copies`` (``scratchpad``, run by the same pass):
  the copies main's scratchpad makes, of a graph input read more than once, and of a result
  its reader takes in other slices among the cores (an LX relayout, by main's work
  division: ``core_division``).
- ``realize_every_op``: every pointwise op its own buffer (one buffer, one op, one OpSpec).

``backend.ReferenceBackend.install`` puts them in place and takes them out again.
"""

from __future__ import annotations

import functools
import math
from pathlib import Path
from typing import Any

import torch
from torch._inductor.custom_graph_pass import CustomGraphModulePass, get_hash_for_files

from spyre_provenance.backends.base import Backend
from spyre_provenance.backends.reference.handles_from_origins import TRANSFORMS_META_KEY
from spyre_provenance.backends.reference.ops import DEVICE
from spyre_provenance.backends.reference.scratchpad import (
    clone_shared_inputs,
    fake_value,
    lx_relayout_copies,
    static_shape,
)

aten = torch.ops.aten

SPLIT_ADDMM_PASS = "spyre_reference.split_addmm"
#: Bumped when generated code changes in a way the source-file hash would not show.
CACHE_FORMAT = "spyre-reference-backend/1"
#: The reference backend's own code: its hash joins Inductor's cache keys (``_cache_uuid``).
CODE_FILES = tuple(
    str(Path(__file__).parent / name)
    for name in (
        "backend.py",
        "lowering.py",
        "ops.py",
        "opspecs_from_nodes.py",
        "handles_from_origins.py",
        "lookalike.py",
        "core_division.py",
        "scratchpad.py",
        "../spyre/opspecs.py",
        "../base.py",
        "../../model/frames.py",
    )
)


# --- the addmm split (post-grad graph pass) -------------------------------------------------


def _cache_uuid() -> bytes:
    """Identity of this backend's code: joins Inductor's FX-graph (and AOTAutograd) cache key.

    Inductor puts ``uuid()`` of every registered device pass into ``FxGraphHashDetails``
    (``custom_backend_passes``), so a reference compile can never hit an entry written by a
    stock-Inductor compile of the same graph, or the other way round, and editing this backend
    invalidates its old entries.
    """
    return get_hash_for_files(CODE_FILES, extra=CACHE_FORMAT)


# What every node of the split inherits from the addmm node. torch-spyre main decomposes
# ``linear`` while AOTAutograd traces (``decompositions.py``), so each of its nodes (permute,
# mm, bias add) carries the traced op's stack trace: the bias add included.
_SPLIT_META_KEYS = ("stack_trace", "nn_module_stack", "source_fn_stack", "original_aten", "seq_nr")


_SPLIT_TRANSFORM = (("decomposition", SPLIT_ADDMM_PASS, "addmm -> mm + bias add"),)


def _emit_split_node(
    graph: torch.fx.Graph,
    addmm: torch.fx.Node,
    created: list[torch.fx.Node],
    name: str,
    target: Any,
    args: tuple[Any, ...],
    transform: tuple[tuple[str, str, str], ...] = _SPLIT_TRANSFORM,
) -> torch.fx.Node:
    """One node of ``addmm``'s split, inserted where the graph's insertion point is and
    appended to ``created``: ``addmm``'s stack trace and original aten op, a fake value, and
    the split (``transform``) in its transform history."""
    new = graph.create_node("call_function", target, args, name=name)
    new.meta.update({k: addmm.meta[k] for k in _SPLIT_META_KEYS if k in addmm.meta})
    new.meta["original_aten"] = addmm.meta.get("original_aten", aten.addmm.default)
    new.meta["val"] = fake_value(target, args)
    new.meta[TRANSFORMS_META_KEY] = transform
    created.append(new)
    return new


def _replace(graph: torch.fx.Graph, old: torch.fx.Node, result: torch.fx.Node, created: list[torch.fx.Node]) -> None:
    """``old`` replaced by the nodes ``created`` for it, ``result`` taking its uses: each new
    node records in ``from_node`` that the pass made it from ``old`` (``result`` that it also
    replaced it), so Inductor's pre/post mapping still reaches ``old``'s pre-grad node."""
    from torch.fx.traceback import NodeSource, NodeSourceAction

    for new in created:
        action = [NodeSourceAction.CREATE]
        if new is result:
            action.insert(0, NodeSourceAction.REPLACE)
        new.meta["from_node"] = [NodeSource(old, SPLIT_ADDMM_PASS, action)]
    old.replace_all_uses_with(result)
    graph.erase_node(old)


def _traced_from(node: torch.fx.Node, sources: tuple[Any, ...]) -> bool:
    """Whether Dynamo traced the node from one of ``sources`` (its innermost source_fn)."""
    stack: list[Any] = node.meta.get("source_fn_stack") or []
    return bool(stack) and stack[-1][1] in sources


#: What the CPU dispatcher decomposes before any table sees it and torch-spyre main keeps
#: whole: the op main's nodes name (``original_aten``), the modules and functions it is
#: traced from, and the op the CPU's nodes say instead (None: any). Main registers an
#: ``AutogradPrivateUse1`` fallthrough and a ``PrivateUse1`` kernel for every aten op it
#: decomposes (``torch_spyre/_inductor/decompositions.py:183-210``), so ``linear``
#: (``:373-383``) and ``layer_norm`` (``:301-322``) reach its decompositions whole.
WHOLE_OPS: tuple[tuple[Any, tuple[Any, ...], Any], ...] = (
    (aten.linear.default, (torch.nn.Linear, torch.nn.functional.linear), None),
    (aten.layer_norm.default, (torch.nn.LayerNorm, torch.nn.functional.layer_norm), aten.native_layer_norm.default),
)


def label_linear(graph: torch.fx.Graph) -> int:
    """Name the nodes a ``linear`` or a ``layer_norm`` became by it (``original_aten =
    aten.linear.default``, ``aten.layer_norm.default``), as on torch-spyre main, whose
    kernel names and handles say ``linear`` and ``layer_norm`` (``sdsc_fused_layer_norm_..``).

    torch-spyre routes both past autograd's decomposition into its own (``WHOLE_OPS``). On
    the CPU the dispatcher has made ``linear`` ``t`` + ``addmm`` and ``layer_norm``
    ``native_layer_norm`` before any decomposition table is asked; the nodes'
    ``source_fn_stack`` still says what they were traced from. Returns how many nodes were
    relabelled.
    """
    count = 0
    for node in graph.nodes:
        if node.op != "call_function" or "original_aten" not in node.meta:
            continue
        for whole, sources, made in WHOLE_OPS:
            # by name: the OpOverload in the meta can be another instance of the same op
            if (made is None or str(node.meta["original_aten"]) == str(made)) and _traced_from(node, sources):
                node.meta["original_aten"] = whole
                count += 1
                break
    return count


#: ops that only view their input with another shape (no copy, no layout change)
_RESHAPES = frozenset((aten.view.default, aten.reshape.default, aten._unsafe_view.default))
_BATCH_TRANSFORM = (("decomposition", SPLIT_ADDMM_PASS, "linear on a batch -> bmm over the batch + bias add"),)


def _flattened_batch(node: torch.fx.Node) -> tuple[torch.fx.Node, list[int]] | None:
    """The input of a ``linear`` on 3 or more dimensions that the CPU flattened to 2 for
    its ``addmm``/``mm`` (``x.reshape(-1, K)``): that input and its shape; else None."""
    mat1, mat2 = node.args[-2], node.args[-1]
    if (
        not isinstance(mat1, torch.fx.Node)
        or mat1.target not in _RESHAPES
        or not isinstance(mat1.args[0], torch.fx.Node)
    ):
        return None
    source, flat, weight = mat1.args[0], static_shape(mat1), static_shape(mat2)
    shape = static_shape(source)
    if shape is None or flat is None or weight is None or len(shape) < 3 or len(weight) != 2:
        return None
    if flat != [math.prod(shape[:-1]), shape[-1]]:
        return None
    return source, shape


def batch_linear(gm: torch.fx.GraphModule) -> int:
    """Make each ``linear`` on an input of 3 or more dimensions a ``bmm`` over its batch,
    with the nodes torch-spyre main's graph has for it: its ``spyre_linear``
    (``decompositions.py:373-383``) unsqueezes the transposed weight to the input's rank and
    writes ``input @ weight``, which torch's matmul makes an ``expand`` of the input to its
    own shape, the weight's ``expand`` to ``[B, K, N]``, a ``bmm`` (a ``batchmatmul``
    ``[B, M, N, K]``), then the bias ``add`` on ``[B, M, N]``, read as it is. On the CPU the
    dispatcher made it ``addmm`` (``mm`` without a bias) on the input viewed as 2-D
    ``[B*M, K]``, read through a view back to ``[B, M, N]``; those views go (a reader that
    wants the 2-D tensor reads a view of the result). The input's no-op ``expand`` stays:
    Inductor lowers it to the input itself, which re-points the input's ``origin_node`` to
    it (``handles_from_origins``), as on main. Returns how many linears changed."""

    graph = gm.graph
    count = 0
    for node in list(graph.nodes):
        if node.op != "call_function" or str(node.meta.get("original_aten")) != str(aten.linear.default):
            continue
        if node.target not in (aten.addmm.default, aten.mm.default) or node.kwargs.get("beta", 1) != 1:
            continue
        found = _flattened_batch(node)
        if found is None or node.kwargs.get("alpha", 1) != 1:
            continue
        source, shape = found
        flat_input, weight = node.args[-2], node.args[-1]
        created: list[torch.fx.Node] = []
        emit = functools.partial(_emit_split_node, graph, node, created, transform=_BATCH_TRANSFORM)
        with graph.inserting_before(node):
            result = _batched_linear(emit, node, source, shape, weight)
            _read_unflattened(graph, node, result)
            if node.users:
                result = emit(
                    "view", aten.view.default, (result, [math.prod(shape[:-1]), result.meta["val"].shape[-1]])
                )
        _replace(graph, node, result, created)
        if not flat_input.users:
            graph.erase_node(flat_input)
        count += 1
    if count:
        gm.recompile()
    return count


def _batched_linear(emit: Any, node: torch.fx.Node, source: Any, shape: list[int], weight: Any) -> torch.fx.Node:
    """The nodes of main's ``input @ weight`` (+ bias) on ``source`` of ``shape``: the
    input's ``expand``, the weight's ``unsqueeze`` and ``expand``, the ``bmm`` (over one
    batch dimension: a deeper batch is viewed as one, and the result viewed back), the
    bias ``add``; the last of them."""
    *batch, rows, depth = shape
    columns = static_shape(weight)[1]  # type: ignore[index]  # checked by _flattened_batch
    batched = emit("expand", aten.expand.default, (source, shape))
    if len(batch) > 1:  # matmul views a deeper batch as one
        batched = emit("view", aten.view.default, (batched, [math.prod(batch), rows, depth]))
    expanded = emit(
        "expand",
        aten.expand.default,
        (emit("unsqueeze", aten.unsqueeze.default, (weight, 0)), [math.prod(batch), depth, columns]),
    )
    result = emit("bmm", aten.bmm.default, (batched, expanded))
    if len(batch) > 1:
        result = emit("view", aten.view.default, (result, [*batch, rows, columns]))
    if node.target is aten.addmm.default:
        result = emit("add", aten.add.Tensor, (result, node.args[0]))
    return result


def _read_unflattened(graph: torch.fx.Graph, flat: torch.fx.Node, result: torch.fx.Node) -> None:
    """Each reader of the 2-D ``flat`` that only views it back as ``result``'s shape reads
    ``result`` itself, and the view goes: main's graph has no such views."""
    for user in list(flat.users):
        if user.target in _RESHAPES and static_shape(user) == static_shape(result):
            user.replace_all_uses_with(result)
            graph.erase_node(user)


def _matmul_op(addmm: torch.fx.Node, weight: Any) -> Any:
    """The op an addmm's matmul was traced from: a linear's, when its weight operand is a
    node ``label_linear`` named by it, else the addmm's own. Inductor folds ``x + linear(h)``
    into one addmm that keeps the add's ``original_aten``; main keeps the linear whole
    (``WHOLE_OPS``), so its matmul's handle says ``aten.linear``, the add's ``aten.add``."""
    whole = {str(op) for op, _, _ in WHOLE_OPS}
    mine = addmm.meta.get("original_aten", aten.addmm.default)
    theirs = weight.meta.get("original_aten") if isinstance(weight, torch.fx.Node) else None
    return theirs if str(theirs) in whole and str(mine) not in whole else mine


def split_addmm(gm: torch.fx.GraphModule) -> int:
    """Rewrite every ``addmm(bias, a, b, beta, alpha)`` as ``alpha*mm(a, b) + beta*bias``.

    New nodes record where they came from twice over: ``from_node`` (so Inductor's pre/post
    graph mapping still reaches the pre-grad ``linear``) and a ``decomposition`` entry under
    ``handles.TRANSFORMS_META_KEY`` (so their OpSpecs' transform history shows the split).
    Returns how many nodes were split.
    """

    graph = gm.graph
    count = 0
    for node in list(graph.nodes):
        if node.op != "call_function" or node.target is not aten.addmm.default:
            continue
        val = node.meta.get("val")
        if not isinstance(val, torch.Tensor) or val.device.type != DEVICE:
            continue  # another device's addmm in a mixed graph: not this backend's to change
        bias, mat1, mat2 = node.args[:3]
        beta = node.kwargs.get("beta", 1)
        alpha = node.kwargs.get("alpha", 1)
        created: list[torch.fx.Node] = []
        emit = functools.partial(_emit_split_node, graph, node, created)
        with graph.inserting_before(node):
            result = emit("mm", aten.mm.default, (mat1, mat2))
            result.meta["original_aten"] = _matmul_op(node, mat2)
            if alpha != 1:
                result = emit("mul", aten.mul.Tensor, (result, alpha))
            if beta != 0:
                scaled_bias = bias if beta == 1 else emit("mul", aten.mul.Tensor, (bias, beta))
                result = emit("add", aten.add.Tensor, (result, scaled_bias))
        _replace(graph, node, result, created)
        count += 1
    if count:
        gm.recompile()
    return count


# --- loops as the op's own dimensions ---------------------------------------------------


def _loops_as_they_are(sizevars: Any, index_vars: Any, sizes: Any, index_formulas: Any) -> Any:
    return sizes, _same, _same


def _same(index: Any) -> Any:
    return index


def keep_loop_dimensions(sizevars: Any) -> None:
    """Make ``sizevars`` (one graph's) leave loops unmerged, as torch-spyre main's wrapper
    does (``wrapper.py``: ``noop_simplify_loops_impl``; a card's stick layout is not what
    Inductor sees, so contiguity tells nothing): a node's iteration space is its output's
    dimensions, a relu of ``[8, 256]`` is ``[8, 256]``, not Inductor's merged ``[2048]``.
    Set per graph before its scheduler runs, as main sets it when the graph's wrapper is
    made; lowering before that simplifies as stock Inductor does, on main too."""
    sizevars._simplify_loops_impl = functools.partial(_loops_as_they_are, sizevars)


class SplitAddmmPass(CustomGraphModulePass):
    """The device pass Inductor runs on post-grad graphs that touch the CPU: the backend's
    pre-scheduling pass, as far as the audit is concerned (``Backend.pass_observer``)."""

    def __init__(self, backend: Backend | None = None) -> None:
        self.backend = backend

    def __call__(self, gm: torch.fx.GraphModule) -> None:
        observer = getattr(self.backend, "pass_observer", None)
        if observer is not None:
            observer(gm.graph, "in")
        label_linear(gm.graph)
        batch_linear(gm)
        split_addmm(gm)
        clone_shared_inputs(gm)
        lx_relayout_copies(gm)
        if observer is not None:
            observer(gm.graph, "out")

    def uuid(self) -> bytes:
        return _cache_uuid()


def realize_every_op(self: Any, threshold: int | None = None) -> bool:
    """Replacement for ``ir.Loops.has_large_inner_fn``: realize each op as its own buffer."""
    return True
