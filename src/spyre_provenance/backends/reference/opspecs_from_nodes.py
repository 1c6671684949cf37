"""The reference backend's OpSpecs: one per buffer of a kernel, with its DebugHandle, and the
format made from them (one SuperDSC-like bundle per OpSpec).

Shaped as torch-spyre builds its OpSpecs (REFERENCE.md section 4.1); ``lookalike`` holds the
torch-spyre look-alike classes themselves.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch
from torch._inductor import ir
from torch._inductor.dependencies import MemoryDep, StarDep, WeakDep
from torch._inductor.utils import get_fused_kernel_name
from torch._inductor.virtualized import V

from spyre_provenance.backends.reference.handles_from_origins import build_debug_handle
from spyre_provenance.backends.reference.lookalike import DebugHandle, OpSpec, TensorArg
from spyre_provenance.backends.spyre import opspecs as readers
from spyre_provenance.model import kernel_keys

aten = torch.ops.aten

# Spyre-style names for the pointwise ops the examples use; anything else keeps its aten name.
_SPYRE_OPS = {
    "add": "add",
    "sub": "sub",
    "mul": "mul",
    "div": "realdiv",
    "relu": "relufwd",
    "exp": "exp",
    "neg": "neg",
    "rsqrt": "rsqrt",
    "sqrt": "sqrt",
    "sigmoid": "sigmoid",
    "tanh": "tanh",
    "gelu": "gelufwd",
    "maximum": "maximum",
    "where": "where3",
    "clone": "identity",
    "embedding": "identity",  # a gather: main's identity with indirect coordinates
    "convert_element_type": "identity",
}


#: FX targets (by overload packet) that only re-index a tensor or pick a tuple element: an
#: origin of one of them computes nothing, and gives a buffer's op no name.
VIEW_OPS = frozenset(
    "view reshape _unsafe_view permute t transpose expand unsqueeze squeeze slice select "
    "alias as_strided getitem".split()
)


def packet_name(target: Any) -> str:
    """An FX target's op name without its overload: ``relu`` for ``aten.relu.default``."""
    packet = getattr(target, "_overloadpacket", None)
    return getattr(packet, "__name__", None) or getattr(target, "__name__", str(target)).split(".")[0]


# Reductions (sums here) that main names by their op: mm and bmm are main's batchmatmul
# (its mm_to_bmm_pass), a mean and layer norm's exx2 its own reductions.
_SPYRE_REDUCTIONS = {"mm": "batchmatmul", "bmm": "batchmatmul", "mean": "mean", "exx2": "exx2"}


def _op_name(buffer: Any) -> tuple[str, bool, dict[str, Any]]:
    """(op, is_reduction, op_info) of one buffer, named the way Spyre names its ops."""
    data = getattr(buffer, "data", None)
    targets = _origin_ops(buffer)
    if isinstance(data, ir.Reduction):
        rtype = str(data.reduction_type)
        named = [_SPYRE_REDUCTIONS[t] for t in targets if t in _SPYRE_REDUCTIONS]
        if rtype == "sum" and named:  # a reduction main names by its op: a bmm, a mean, exx2
            return named[0], True, {"reduction_type": rtype}
        return rtype, True, {"reduction_type": rtype}
    compute = [t for t in targets if t not in VIEW_OPS]
    if compute == ["div"] and _by_scalar(buffer) is not None:
        compute = ["mul"]  # main multiplies by the reciprocal of a scalar divisor
    elif compute == ["pow"] and _by_scalar(buffer) == 2:
        compute = ["mul"]  # main squares by a multiplication
    names = [_SPYRE_OPS.get(t, t) for t in dict.fromkeys(compute)]
    # no op of its own: a copy (a weight's layout copy, whose only origin is the input)
    return ("+".join(names) if names else "identity"), False, {}


def _by_scalar(buffer: Any) -> int | float | None:
    """The number (not a tensor) the buffer's one origin takes as its second argument."""
    origins = [o for o in getattr(buffer, "origins", ()) or () if getattr(o, "op", None) == "call_function"]
    if len(origins) == 1 and len(origins[0].args) == 2 and isinstance(origins[0].args[1], (int, float)):
        return origins[0].args[1]
    return None


def _origin_ops(buffer: Any) -> list[str]:
    """The aten op names (``relu``, ``copy_``) of the FX nodes lowered into a buffer, by
    node name; graph inputs among the origins compute nothing and are left out."""
    origins = sorted(getattr(buffer, "origins", ()) or (), key=lambda n: n.name)
    return [packet_name(o.target) for o in origins if getattr(o, "op", None) == "call_function"]


def kernel_descriptor(nodes: Sequence[Any]) -> str:
    """The middle of a kernel name: ``fused_<original-aten ops>`` as torch-spyre names it.

    Inductor's ``get_fused_kernel_name`` reads ``meta["original_aten"]``; nodes without it
    (a layout copy of a weight, nodes a pass created) would give a bare ``fused``, which
    says nothing. Then the ops the buffers compute name the kernel, and a kernel that only
    copies its input is a ``clone``.
    """
    fused = get_fused_kernel_name(nodes, "original_aten")
    if fused != "fused":
        return fused
    ops = sorted({op for n in flat_nodes(nodes) for op in _origin_ops(n.node)})
    return "_".join(["fused", *(ops or ["clone"])])


def _size(name: str) -> list[int | str]:
    try:
        return [readers.extent(s) for s in V.graph.get_buffer(name).get_size()]
    except Exception:  # noqa: BLE001 - graph inputs that are not buffers, symbolic corner cases
        return []


def _dtype(name: str) -> str:
    try:
        return str(V.graph.get_dtype(name)).replace("torch.", "")
    except Exception:  # noqa: BLE001 - a name the graph cannot type: the OpSpec says so instead of failing
        return "unknown"


def moments_space(sizes: Sequence[Any]) -> list[Any]:
    """The iteration space of an ``exx2``'s output as main's: one element per row.

    Main's ``lower_exx2`` (``torch_spyre/_inductor/lowering.py:654-677``) writes
    ``x.size[:-1] + [1]``, one element per row that a card's ``exx2`` fills with both
    moments, and Inductor drops the dimension of 1 from its loops. The reference's buffer
    holds E[x] and E[x^2] side by side (``ops.exx2``: a last dimension of 2, the CPU has no
    packed element), so its last output dimension is that one element and iterates once."""
    return list(sizes[:-1])


def build_opspec(
    snode: Any, call_args: Sequence[str], debug_handle: Callable[[Any], DebugHandle | None] | None = None
) -> tuple[OpSpec, str | None]:
    """The OpSpec of one scheduler node (one ComputedBuffer), handle included, and why
    it has no handle when it has none (None when it has one)."""
    buffer = snode.node
    op, is_reduction, op_info = _op_name(buffer)
    sizes, rsizes = snode.get_ranges()
    if op == "exx2":  # the pair of moments is one element of main's exx2 (``moments_space``)
        sizes = moments_space(sizes)
    space = {f"d{i}": (readers.extent(s), 1) for i, s in enumerate([*sizes, *rsizes])}

    def arg(dep: Any, is_input: bool) -> TensorArg:
        if isinstance(dep, MemoryDep):
            coordinates = [str(dep.index)]
        elif isinstance(dep, StarDep):  # the whole buffer: a scatter target, a mutated input
            coordinates = ["*"]
        else:
            coordinates = []
        return TensorArg(
            is_input=is_input,
            arg_index=call_args.index(dep.name) if dep.name in call_args else -1,
            device_dtype=_dtype(dep.name),
            device_size=_size(dep.name),
            device_coordinates=coordinates,
            name=dep.name,
        )

    # a WeakDep orders a mutation after earlier reads; it moves no data, so it is no argument
    args = [arg(d, True) for d in snode.read_writes.reads if not isinstance(d, WeakDep)]
    args += [arg(d, False) for d in snode.read_writes.writes if not isinstance(d, WeakDep)]
    handle, why = None, None
    try:
        handle = (debug_handle or build_debug_handle)(buffer)
        if handle is None:
            why = "the buffer has no origins to build a debug handle from"
    except Exception as exc:  # noqa: BLE001 - provenance is debug-only: the hook records it as a fault
        why = f"building its debug handle failed: {type(exc).__name__}: {exc}"
    return OpSpec(op, is_reduction, space, args, op_info, debug_handle=handle), why


def failed_opspec(snode: Any, exc: Exception) -> tuple[OpSpec, str]:
    """What is left of an OpSpec that could not be built: its buffer, and why."""
    name = getattr(getattr(snode, "node", None), "get_name", lambda: None)()
    spec = OpSpec("unknown", False, {}, [TensorArg(False, -1, "unknown", [], [], name=name)], {})
    return spec, f"its OpSpec could not be built: {type(exc).__name__}: {exc}"


def flat_nodes(node_schedule: Sequence[Any]) -> list[Any]:
    """The scheduler nodes of a kernel that own a buffer, fused groups opened up, in order."""
    nodes: list[Any] = []
    for n in node_schedule:
        inner = n.get_nodes() if hasattr(n, "get_nodes") else [n]
        nodes.extend(x for x in inner if getattr(x, "node", None) is not None)
    return nodes


def redact_handle(handle: dict[str, Any], redactor: Any) -> None:
    """Rewrite the source paths of a serialized handle and its fused constituents, in place."""
    pending = [handle]
    while pending:
        current = pending.pop()
        if current.get("source"):
            current["source"]["file"] = redactor.redact_path(current["source"]["file"])
        pending.extend(current.get("fused_from", ()))


def bundle_document(index: int, spec: OpSpec) -> dict[str, Any]:
    """One SuperDSC-like device spec for one OpSpec (key style as SuperDSC: trailing ``_``).

    No source information in it, as in real bundles, except ``debug_handle_`` (the handle as
    torch-spyre serializes it: a dict whose ``id`` is a decimal string), the Phase 2 link.
    """
    # The schedule tree: one loop per iteration-space dimension around the compute op.
    tree: dict[str, Any] = {"nodeType_": "compute", "op_": spec.op}
    for dim, (extent, _) in reversed(list(spec.iteration_space.items())):
        tree = {"nodeType_": "loop", "dim_": dim, "extent_": extent, "body_": [tree]}
    body = {
        "debug_handle_": spec.debug_handle.to_dict() if spec.debug_handle else None,
        "opFunc_": spec.op,
        "isReduction_": spec.is_reduction,
        "iterationSpace_": {d: list(v) for d, v in spec.iteration_space.items()},
        "tensors_": [
            {
                "name_": a.name,
                "isInput_": a.is_input,
                "argIndex_": a.arg_index,
                "dataFormat_": a.device_dtype,
                "size_": a.device_size,
                "coordinates_": a.device_coordinates,
            }
            for a in spec.args
        ],
        "computeOp_": {"op_": spec.op, "opInfo_": spec.op_info},
        "scheduleTree_": [tree],
        "numCoresUsed_": 1,
        "coreIdToDsc_": {"0": 0},
    }
    return {f"{index}_{spec.op}": body}


def bundle_identity(specs: Sequence[OpSpec], folder: Path | None) -> tuple[str | None, str | None]:
    """(provenance key, bundle folder name) of a kernel: the key by torch-spyre's published
    rule over these OpSpecs (``model.kernel_keys``; None when a value has no canonical
    form), the folder None when no bundle is written."""
    try:
        key: str | None = kernel_keys.bundle_key(specs)
    except (TypeError, ValueError):
        key = None
    return key, None if folder is None else folder.name
