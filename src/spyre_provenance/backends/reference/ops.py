"""The reference backend's ops lowered as torch-spyre main lowers them: one Spyre op, one
buffer, one OpSpec, where stock Inductor would spread the op over several.

What torch-spyre main 9a6b71e does (read in its ``_inductor/decompositions.py`` and
``lowering.py``), and what this module does on the CPU to give the same compute ops:

- ``layer_norm`` (last dimension) is ``spyre.exx2`` (a reduction), ``spyre.layernormscale``
  and ``spyre.layernormnorm``: main's decomposition. Here the three are the reference's own
  custom ops (namespace ``spyre_reference``, never torch-spyre's ``spyre``): ``exx2`` reduces
  a row to its E[x] and E[x^2] (a last dimension of 2), ``layernormscale`` makes
  rsqrt(E[x^2] - E[x]^2 + eps), ``layernormnorm`` the normalized, scaled and shifted row.
  Inference graphs only: a graph that needs gradients keeps Inductor's decomposition
  (the custom ops have no backward; main compiles no backward either, docs/torch-spyre-main.md).
- ``silu`` and ``gelu`` stay whole (main: ``spyre.silu``, ``spyre.gelu``, one pointwise op
  each), where Inductor decomposes them into several upcast pointwise ops.
- ``mean`` is one reduction (main's ``lower_mean``), not a sum and a division.
- ``sin`` and ``cos`` are ATen fallbacks (main's ``fallback_ops``), extern calls.
- ``mm`` and ``bmm`` are the backend's own reduction (``make_matmul_lowering``), so the
  wrapper never calls ``extern_kernels.mm``: main lowers both to ``batchmatmul``, so a
  (batched) matmul ends no run of Spyre nodes.

``install(patches)`` puts the decomposition table and the lowerings in place through
``patches`` (undone by its ``undo``); the custom ops are defined once, on import.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch._inductor import compile_fx as inductor_compile_fx
from torch._inductor import ir
from torch._inductor import lowering as inductor_lowering
from torch._inductor.decomposition import select_decomp_table as stock_decomp_table
from torch._inductor.fx_passes import joint_graph
from torch._inductor.virtualized import ops

from spyre_provenance.base.patches import Patches

aten = torch.ops.aten
DEVICE = "cpu"
NAMESPACE = "spyre_reference"


# --- the custom ops main's layer norm is made of (their eager forms compute the same) ------


@torch.library.custom_op(f"{NAMESPACE}::exx2", mutates_args=())
def exx2(x: torch.Tensor, scale: float) -> torch.Tensor:
    """Each row's ``[E[x], E[x^2]]`` (``scale`` is 1/row length), in float32."""
    wide = x.float()
    return torch.stack([wide.sum(-1) * scale, (wide * wide).sum(-1) * scale], dim=-1)


@exx2.register_fake
def _exx2_fake(x: torch.Tensor, scale: float) -> torch.Tensor:
    return x.new_empty((*x.shape[:-1], 2), dtype=torch.float32)


@torch.library.custom_op(f"{NAMESPACE}::layernormscale", mutates_args=())
def layernormscale(moments: torch.Tensor, eps: float) -> torch.Tensor:
    """``rsqrt(var + eps)`` of each row from its ``exx2`` moments, shape ``[..., 1]``."""
    mean, square = moments[..., :1], moments[..., 1:]
    return torch.rsqrt(square - mean * mean + eps)


@layernormscale.register_fake
def _layernormscale_fake(moments: torch.Tensor, eps: float) -> torch.Tensor:
    return moments.new_empty((*moments.shape[:-1], 1))


@torch.library.custom_op(f"{NAMESPACE}::layernormnorm", mutates_args=())
def layernormnorm(
    x: torch.Tensor, moments: torch.Tensor, scale: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor
) -> torch.Tensor:
    """``(x - E[x]) * scale * weight + bias``, in ``x``'s dtype."""
    return (((x.float() - moments[..., :1]) * scale) * weight.float() + bias.float()).to(x.dtype)


@layernormnorm.register_fake
def _layernormnorm_fake(
    x: torch.Tensor, moments: torch.Tensor, scale: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor
) -> torch.Tensor:
    return torch.empty_like(x)


def _native_layer_norm(
    x: torch.Tensor,
    normalized_shape: Sequence[int],
    weight: torch.Tensor | None,
    bias: torch.Tensor | None,
    eps: float,
) -> Any:
    """Main's layer-norm decomposition (``spyre_layer_norm``) on the reference's ops; any
    other case (not the last dimension alone, not the CPU, gradients needed) is left to
    Inductor's own (``NotImplemented``). On the CPU the dispatcher has made ``layer_norm``
    ``native_layer_norm`` before any table is asked (main registers a ``spyre`` kernel for
    it); its mean and rstd outputs, unused in an inference graph, are derived as views."""
    if len(normalized_shape) != 1 or x.device.type != DEVICE or not x.is_floating_point():
        return NotImplemented
    if torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in (x, weight, bias)):
        return NotImplemented
    if weight is None:
        weight = x.new_ones(normalized_shape)
    if bias is None:
        bias = x.new_zeros(normalized_shape)
    moments = torch.ops.spyre_reference.exx2(x, 1.0 / normalized_shape[0])
    scale = torch.ops.spyre_reference.layernormscale(moments, eps)
    out = torch.ops.spyre_reference.layernormnorm(x, moments, scale, weight, bias)
    return out, moments[..., :1].to(x.dtype), scale.to(x.dtype)


def _softmax(x: torch.Tensor, dim: int, half_to_float: bool) -> Any:
    """Softmax in the input's dtype (main's: max, sub, exp, sum, realdiv, no upcast)."""
    if x.device.type != DEVICE or half_to_float or not x.is_floating_point():
        return NotImplemented
    shifted = torch.exp(x - torch.amax(x, dim, keepdim=True))
    return shifted / torch.sum(shifted, dim, keepdim=True)


#: Inductor decompositions main does not apply (the op stays whole and is lowered here).
KEPT_WHOLE = (aten.silu, aten.gelu)


def select_decomp_table() -> dict[Any, Any]:
    """``select_decomp_table`` as the reference compiles: Inductor's table, ``silu`` and
    ``gelu`` kept whole, layer norm and softmax decomposed as main decomposes them."""
    table = dict(stock_decomp_table())
    for packet in KEPT_WHOLE:
        for overload in packet.overloads():
            table.pop(getattr(packet, overload), None)
    for op, mine in ((aten.native_layer_norm.default, _native_layer_norm), (aten._softmax.default, _softmax)):
        table[op] = _or_stock(mine, table.get(op))
    return table


def _or_stock(mine: Callable[..., Any], stock: Callable[..., Any] | None) -> Callable[..., Any]:
    """``mine``, and where it declines (``NotImplemented``: a training graph, another
    device) the decomposition it replaced: an op no table decomposes would reach Inductor
    whole, which has no lowering for it and refuses a fallback for an op its table lists."""

    def decompose(*args: Any, **kwargs: Any) -> Any:
        found = mine(*args, **kwargs)
        if found is NotImplemented and stock is not None:
            return stock(*args, **kwargs)
        return found

    return decompose


# --- lowerings: one buffer each ----------------------------------------------------------


def _pointwise(like: Any, dtype: torch.dtype, ranges: Sequence[Any], inner_fn: Callable[[Any], Any]) -> Any:
    out = ir.Pointwise.create(device=like.get_device(), dtype=dtype, inner_fn=inner_fn, ranges=list(ranges))
    out.realize()
    return out


def _reduction(
    like: Any, dtype: torch.dtype, ranges: Sequence[Any], rranges: Sequence[Any], inner_fn: Callable[..., Any]
) -> Any:
    """A sum of ``inner_fn``'s values (of ``dtype``, the result's too): one buffer."""
    out = ir.Reduction.create(
        device=like.get_device(),
        dst_dtype=dtype,
        src_dtype=dtype,
        inner_fn=inner_fn,
        ranges=list(ranges),
        reduction_ranges=list(rranges),
        reduction_type="sum",
    )
    out.realize()
    return out


def _wide(value: Any) -> Any:
    return ops.to_dtype(value, torch.float32)


def _narrow(value: Any, dtype: torch.dtype) -> Any:
    return ops.to_dtype(value, dtype)


def lower_silu(x: Any) -> Any:
    load = x.make_loader()

    def inner_fn(index: Sequence[Any]) -> Any:
        v = _wide(load(index))
        return _narrow(ops.mul(v, ops.sigmoid(v)), x.get_dtype())

    return _pointwise(x, x.get_dtype(), x.get_size(), inner_fn)


def lower_gelu(x: Any, approximate: str = "none") -> Any:
    load = x.make_loader()

    def inner_fn(index: Sequence[Any]) -> Any:
        v = _wide(load(index))
        half = ops.constant(0.5, torch.float32)
        if approximate == "tanh":
            cube = ops.mul(ops.mul(v, v), v)
            inner = ops.mul(
                ops.constant(0.7978845608028654, torch.float32),
                ops.add(v, ops.mul(ops.constant(0.044715, torch.float32), cube)),
            )
            gate = ops.add(ops.constant(1.0, torch.float32), ops.tanh(inner))
        else:
            gate = ops.add(
                ops.constant(1.0, torch.float32), ops.erf(ops.mul(v, ops.constant(0.7071067811865476, torch.float32)))
            )
        return _narrow(ops.mul(ops.mul(half, v), gate), x.get_dtype())

    return _pointwise(x, x.get_dtype(), x.get_size(), inner_fn)


def lower_mean(x: Any, axis: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Any:
    """One reduction: the sum of ``x / n`` (main's ``mean`` op, a scaling factor 1/n)."""
    kwargs = inductor_lowering._make_reduction_inner(
        x, axis=axis, keepdims=keepdim, dtype=dtype, override_return_dtype=None
    )
    size = x.get_size()
    axes = range(len(size)) if axis is None or axis == [] else [a % len(size) for a in axis]
    count = 1
    for a in axes:
        count *= int(size[a])
    load = kwargs["inner_fn"]

    dtype = kwargs["dst_dtype"]

    def inner_fn(index: Sequence[Any], rindex: Sequence[Any]) -> Any:  # Inductor sums halves in float
        return ops.mul(load(index, rindex), ops.constant(1.0 / count, dtype))

    return _reduction(x, dtype, kwargs["ranges"], kwargs["reduction_ranges"], inner_fn)


def lower_exx2(x: Any, scale: float) -> Any:
    load = x.make_loader()
    size = x.get_size()

    def inner_fn(index: Sequence[Any], rindex: Sequence[Any]) -> Any:
        v = _wide(load([*index[:-1], rindex[0]]))
        first = ops.eq(ops.index_expr(index[-1], torch.int64), ops.constant(0, torch.int64))
        return ops.mul(ops.where(first, v, ops.mul(v, v)), ops.constant(scale, torch.float32))

    return _reduction(x, torch.float32, [*size[:-1], 2], [size[-1]], inner_fn)


def lower_layernormscale(moments: Any, eps: float) -> Any:
    load = moments.make_loader()

    def inner_fn(index: Sequence[Any]) -> Any:
        mean, square = load([*index[:-1], 0]), load([*index[:-1], 1])
        return ops.rsqrt(ops.add(ops.sub(square, ops.mul(mean, mean)), ops.constant(eps, torch.float32)))

    return _pointwise(moments, torch.float32, [*moments.get_size()[:-1], 1], inner_fn)


def lower_layernormnorm(x: Any, moments: Any, scale: Any, weight: Any, bias: Any) -> Any:
    load_x, load_m, load_s = x.make_loader(), moments.make_loader(), scale.make_loader()
    load_w, load_b = weight.make_loader(), bias.make_loader()

    def inner_fn(index: Sequence[Any]) -> Any:
        row = index[:-1]
        centred = ops.sub(_wide(load_x(index)), load_m([*row, 0]))
        scaled = ops.mul(ops.mul(centred, load_s([*row, 0])), _wide(load_w(index[-1:])))
        return _narrow(ops.add(scaled, _wide(load_b(index[-1:]))), x.get_dtype())

    return _pointwise(x, x.get_dtype(), x.get_size(), inner_fn)


def make_matmul_lowering(fallback: Any) -> Any:
    """``mm(a, b)`` or ``bmm(a, b)`` -> one reduction buffer
    ``out[*n, i, j] = sum_k a[*n, i, k] * b[*n, k, j]`` (``n``: bmm's batch, none for mm).

    Non-CPU inputs go to the lowering this one replaced, so other devices are untouched.
    """

    def lower_matmul(a: Any, b: Any) -> Any:
        device = a.get_device()
        if device is None or device.type != DEVICE:
            return fallback(a, b)
        load_a, load_b = a.make_loader(), b.make_loader()

        def inner_fn(index: Sequence[Any], rindex: Sequence[Any]) -> Any:
            *n, i, j = index
            (k,) = rindex
            return ops.mul(load_a([*n, i, k]), load_b([*n, k, j]))

        size_a, size_b = a.get_size(), b.get_size()
        out = ir.Reduction.create(
            device=device,
            dst_dtype=a.get_dtype(),
            src_dtype=a.get_dtype(),
            inner_fn=inner_fn,
            ranges=[*size_a[:-1], size_b[-1]],
            reduction_ranges=[size_a[-1]],
            reduction_type="sum",
        )
        out.realize()
        return out

    return lower_matmul


#: op -> its lowering here (CPU tensors; other devices keep the lowering replaced)
LOWERINGS: dict[Any, Callable[..., Any]] = {
    aten.silu.default: lower_silu,
    aten.gelu.default: lower_gelu,
    aten.mean.dim: lower_mean,
    aten.mean.default: lower_mean,
}
#: ops main leaves to ATen (``torch_spyre/ops/fallbacks.py``; the trigonometric ones here):
#: an extern call, which ends a run of Spyre nodes
ATEN_FALLBACKS = (aten.sin.default, aten.cos.default)
#: the reference's own ops: no other lowering to keep
OWN_LOWERINGS: dict[Any, Callable[..., Any]] = {
    torch.ops.spyre_reference.exx2.default: lower_exx2,
    torch.ops.spyre_reference.layernormscale.default: lower_layernormscale,
    torch.ops.spyre_reference.layernormnorm.default: lower_layernormnorm,
}


def install(patches: Patches) -> None:
    """The decomposition table and the lowerings above, through ``patches``; and, as main
    (``_inductor/patches.py``), without Inductor's last joint-graph patterns (softmax
    rewritten with a scale, which main disables)."""
    patches.setattr(joint_graph, "pass_patterns", joint_graph.pass_patterns[:-1])
    patches.setattr(inductor_compile_fx, "select_decomp_table", select_decomp_table)
    bmm = aten.bmm.default
    stock_bmm = patches.keep_item(inductor_lowering.lowerings, bmm)
    inductor_lowering.register_lowering(bmm, type_promotion_kind=None)(make_matmul_lowering(stock_bmm))
    for op, lowering in LOWERINGS.items():
        stock = patches.keep_item(inductor_lowering.lowerings, op)
        inductor_lowering.register_lowering(op, type_promotion_kind=None)(_cpu_or(lowering, stock, op))
    for op in ATEN_FALLBACKS:
        stock = patches.keep_item(inductor_lowering.lowerings, op)
        fallback = inductor_lowering.fallback_handler(op, add_to_fallback_set=False)
        inductor_lowering.register_lowering(op, type_promotion_kind=None)(_cpu_or(fallback, stock, op))
    for op, lowering in OWN_LOWERINGS.items():
        patches.keep_item(inductor_lowering.lowerings, op)
        inductor_lowering.register_lowering(op, type_promotion_kind=None)(lowering)


def _cpu_or(lowering: Callable[..., Any], stock: Any, op: Any) -> Callable[..., Any]:
    """``lowering`` for CPU tensors; elsewhere the lowering it replaced, or Inductor's
    fallback kernel when there was none."""

    def lower(x: Any, *args: Any, **kwargs: Any) -> Any:
        device = x.get_device()
        if device is not None and device.type == DEVICE:
            return lowering(x, *args, **kwargs)
        if stock is not None:
            return stock(x, *args, **kwargs)
        return inductor_lowering.fallback_handler(op, add_to_fallback_set=False)(x, *args, **kwargs)

    return lower
