"""What torch-spyre's native extension decides for ``scaled_dot_product_attention`` on ``spyre``.

torch-spyre's C++ (``torch_spyre/csrc/attn_utils.cpp:22-37``, in the native extension the
stand-in replaces) registers ``_fused_sdp_choice`` for PrivateUse1 as a DispatchStub
(``REGISTER_PRIVATEUSE1_DISPATCH``): every attention on ``spyre`` takes the
``overrideable`` backend, so ATen's ``scaled_dot_product_attention`` makes a boolean mask
additive and calls ``_scaled_dot_product_fused_attention_overrideable``, which torch-spyre
decomposes into its tiled attention (``_inductor/decompositions.py:386-555``).

A DispatchStub cannot be registered from Python. Without it ATen takes its math path
(``_scaled_dot_product_attention_math``: a ``_safe_softmax`` whose fully-masked-row test
becomes an int64 conversion that ``split_multi_ops`` cannot place, ``KeyError: 'No FX
node for buf<N>'``), a refusal of the stand-in's, not torch-spyre's. The stand-in makes the
same choice one level up, as torch-spyre itself routes the ops it decomposes
(``decompositions.py:183-210``): ``install()`` lets ``scaled_dot_product_attention`` on
``spyre`` pass autograd whole (an ``AutogradPrivateUse1`` fallthrough and a ``PrivateUse1``
kernel, the pair torch-spyre registers for each op it decomposes), and
``decompositions()`` (the table the route hands ``compile_fx``) decomposes it into
ATen's ``overrideable`` branch.
"""

from __future__ import annotations

from typing import Any

DEVICE = "spyre"
_LIBRARIES: list[Any] = []  # kept alive: a Library's registrations end with it


def sdpa_overrideable(
    query: Any,
    key: Any,
    value: Any,
    attn_mask: Any = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
    *,
    enable_gqa: bool = False,
) -> Any:
    """ATen's ``scaled_dot_product_attention`` when the backend chosen is ``overrideable``:
    a boolean mask becomes 0 where kept and -inf where masked, in the query's dtype; the
    result is the overrideable op's first output (``enable_gqa`` is not passed on, as ATen
    does not; torch-spyre's decomposition expands the key and value heads itself)."""
    import torch

    if query.device.type != DEVICE:
        return NotImplemented
    if attn_mask is not None and attn_mask.dtype == torch.bool:
        masked = torch.scalar_tensor(float("-inf"), dtype=query.dtype, device=attn_mask.device)
        attn_mask = torch.where(attn_mask, 0.0, masked)
    outputs = torch.ops.aten._scaled_dot_product_fused_attention_overrideable(
        query, key, value, attn_mask, dropout_p, is_causal, False, scale=scale
    )
    return outputs[0]


def install() -> None:
    """``scaled_dot_product_attention`` on ``spyre`` reaches tracing whole (idempotent)."""
    from torch.library import Library, fallthrough_kernel

    if _LIBRARIES:
        return
    autograd = Library("aten", "IMPL", "AutogradPrivateUse1")
    autograd.impl("scaled_dot_product_attention", fallthrough_kernel)
    # a kernel of the device's own: with one, functionalization keeps the op whole for the
    # decomposition table (``autograd_would_have_decomposed``), as for torch-spyre's ops
    device = Library("aten", "IMPL", "PrivateUse1")
    device.impl("scaled_dot_product_attention", sdpa_overrideable)
    _LIBRARIES.extend((autograd, device))


def decompositions() -> dict[Any, Any]:
    """torch-spyre's decomposition table, and attention as its native extension routes it."""
    import torch
    from torch_spyre._inductor.decompositions import get_spyre_decomp_table

    return {**get_spyre_decomp_table(), torch.ops.aten.scaled_dot_product_attention.default: sdpa_overrideable}
