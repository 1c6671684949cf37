"""Backends the hook can track: stock Inductor, the Spyre-modelled reference, torch-spyre.

Each is one small adapter (see ``base.Backend``); ``get_backend(name)`` picks one.
"""

from __future__ import annotations

from spyre_provenance.backends.base import Backend

BACKEND_NAMES = ("auto", "reference", "inductor", "spyre")


def get_backend(name: str, *, bundle_dir=None, kernel_cache: bool = False) -> Backend:
    """Return the adapter for ``name``; ``auto`` is torch-spyre when it imports, else reference.

    ``bundle_dir``: where a Spyre backend writes its SuperDSC bundles (stock Inductor has none).
    ``kernel_cache``: the reference backend serves bundles as torch-spyre's kernel cache does
    (torch-spyre itself follows its own configuration).
    """
    if name == "auto":
        from spyre_provenance.backends import torch_spyre

        name = "spyre" if torch_spyre.available() else "reference"
    if name == "inductor":
        from spyre_provenance.backends.base import StockInductor

        return StockInductor()
    if name == "reference":
        from spyre_provenance.backends.reference import ReferenceBackend

        return ReferenceBackend(bundle_dir=bundle_dir, kernel_cache=kernel_cache)
    if name == "spyre":
        from spyre_provenance.backends.torch_spyre import TorchSpyreBackend

        return TorchSpyreBackend(bundle_dir=bundle_dir)
    raise ValueError(f"unknown backend {name!r}; choose one of {', '.join(BACKEND_NAMES)}")
