"""The stand-in ``torch_spyre._C``'s memory: tensors on device ``spyre`` whose bytes live on
the CPU.

torch-spyre's C++ extension registers the device's allocator with torch; the stand-in
(``native``) cannot, so ``boot.install`` calls ``register_memory`` after ``import
torch_spyre``: the two allocations of ``spyre`` then return a ``HostBacked`` tensor. None of
torch-spyre's code is in it.
"""

from __future__ import annotations

import types
from typing import Any


def host_backed_tensor_type() -> type:
    """A tensor on device ``spyre`` holding its values in a CPU tensor (``.host``).

    The C++ extension registers the allocator (``aten::empty.memory_format``,
    ``empty_strided``) and eager device ops; the stand-in cannot, so ``register_memory``
    registers those two allocations for the device and they return this type. Its
    ``__torch_dispatch__`` runs every op on the CPU values (device arguments ``spyre`` read
    as ``cpu``) and gives results back on ``spyre``, except copies to the CPU. That serves
    what the compile path does with real device tensors, e.g. Inductor's constant folding
    deducing a mask's value (``aten.full`` on ``spyre``, then ``tril``, ``and``): the values
    come from the CPU, which is all a compile reads of them. No Spyre kernel runs.
    """
    import torch
    from torch.utils._pytree import tree_map

    spyre = torch.device("spyre", 0)

    class HostBacked(torch.Tensor):
        host: torch.Tensor

        @staticmethod
        def __new__(cls, host: torch.Tensor) -> HostBacked:
            made = torch.Tensor._make_wrapper_subclass(
                cls,
                host.size(),
                strides=host.stride(),
                dtype=host.dtype,
                device=spyre,
                requires_grad=host.requires_grad,
            )
            made.host = host
            return made

        def __repr__(self) -> str:
            return f"HostBacked({self.host!r}, device='spyre')"

        @classmethod
        def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
            def unwrap(value: Any) -> Any:
                if isinstance(value, HostBacked):
                    return value.host
                if isinstance(value, torch.device) and value.type == "spyre":
                    return torch.device("cpu")
                return value

            to_cpu = func in (torch.ops.aten._to_copy.default,) and (kwargs or {}).get("device") == torch.device("cpu")
            result = func(*tree_map(unwrap, args), **tree_map(unwrap, kwargs or {}))
            if to_cpu:
                return result
            if func is torch.ops.aten.copy_.default or func.__name__.endswith("_") and isinstance(args[0], HostBacked):
                return args[0]  # in place: the same device tensor

            def wrap(value: Any) -> Any:
                return HostBacked(value) if isinstance(value, torch.Tensor) and value.device.type == "cpu" else value

            return tree_map(wrap, result)

    return HostBacked


def register_memory(module: types.ModuleType) -> Any:
    """Register the device's allocations for ``spyre`` (PrivateUse1); returns the
    torch.library handle (keep it alive)."""
    import torch

    host_backed = host_backed_tensor_type()
    library = torch.library.Library("aten", "IMPL")

    def empty(size, dtype=None, layout=None, device=None, pin_memory=None, memory_format=None):
        return host_backed(torch.empty(size, dtype=dtype, memory_format=memory_format))

    def empty_strided(size, stride, dtype=None, layout=None, device=None, pin_memory=None):
        return host_backed(torch.empty_strided(size, stride, dtype=dtype))

    library.impl("empty.memory_format", empty, "PrivateUse1")
    library.impl("empty_strided", empty_strided, "PrivateUse1")

    module.HostBacked = host_backed  # type: ignore[attr-defined]
    return library
