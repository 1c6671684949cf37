"""Backends the hook can track: stock Inductor, the Spyre-modelled reference, torch-spyre.

Each is one small adapter (see ``base.Backend``); ``get_backend(name)`` picks one, and
``choose_backend(name)`` also says, in one line, which one ``auto`` picked and why.
"""

from __future__ import annotations

from spyre_provenance.backends.base import Backend

BACKEND_NAMES = ("auto", "reference", "inductor", "spyre")
#: What every entry point compiles on unless told otherwise: the command line, the Python
#: API and the pytest fixture alike.
DEFAULT_BACKEND = "auto"


def resolve_backend(name: str) -> tuple[str, str]:
    """(the backend ``name`` stands for, why): ``auto`` is torch-spyre when the adapter can
    install on it (``spyre_backend.probe``), else reference; any other name is itself."""
    if name not in BACKEND_NAMES:
        raise ValueError(f"unknown backend {name!r}; choose one of {', '.join(BACKEND_NAMES)}")
    if name != "auto":
        return name, "asked for"
    from spyre_provenance.backends import spyre as spyre_backend

    usable, why = spyre_backend.probe()
    return ("spyre" if usable else "reference"), f"auto: {why}"


def resolve_attached(name: str, loaded: bool) -> tuple[str, str]:
    """(the backend ``name`` stands for in a program tracked from outside, why): there
    ``auto`` never changes what the program compiles to: torch-spyre when the program
    loaded it (``loaded``: ``torch_spyre`` is imported) and the adapter can install on it,
    else stock Inductor, whose kernels the program compiles anyway. Any other name is itself
    (``reference`` replaces Inductor's CPU code generation: asked for, never chosen)."""
    if name not in BACKEND_NAMES:
        raise ValueError(f"unknown backend {name!r}; choose one of {', '.join(BACKEND_NAMES)}")
    if name != "auto":
        return name, "asked for"
    if not loaded:
        return "inductor", "auto: the program did not load torch_spyre"
    from spyre_provenance.backends import spyre as spyre_backend

    usable, why = spyre_backend.probe()
    return ("spyre" if usable else "inductor"), f"auto: {why}"


def choose_backend(
    name: str, *, bundle_dir=None, kernel_cache: bool = False, beyond_upstream: bool = False
) -> tuple[Backend, str]:
    """The adapter for ``name`` and one line saying which it is and why, e.g.
    ``backend reference (auto: torch_spyre is not installed)``."""
    chosen, why = resolve_backend(name)
    return _make(chosen, bundle_dir, kernel_cache, beyond_upstream), f"backend {chosen} ({why})"


def get_backend(name: str, *, bundle_dir=None, kernel_cache: bool = False, beyond_upstream: bool = False) -> Backend:
    """Return the adapter for ``name``; ``auto`` is torch-spyre when it can install, else reference.

    ``bundle_dir``: where a Spyre backend writes its SuperDSC bundles (stock Inductor has none).
    ``kernel_cache``: the reference backend serves bundles as torch-spyre's kernel cache does
    (torch-spyre itself follows its own configuration). ``beyond_upstream``: stock Inductor's
    mapping completed as on the Spyre backends (``StockInductor``), which always do that.
    """
    return choose_backend(name, bundle_dir=bundle_dir, kernel_cache=kernel_cache, beyond_upstream=beyond_upstream)[0]


def _make(name: str, bundle_dir, kernel_cache: bool = False, beyond_upstream: bool = False) -> Backend:
    if name == "inductor":
        from spyre_provenance.backends.base import StockInductor

        return StockInductor(beyond_upstream=beyond_upstream)
    if name == "reference":
        from spyre_provenance.backends.reference.backend import ReferenceBackend

        return ReferenceBackend(bundle_dir=bundle_dir, kernel_cache=kernel_cache)
    from spyre_provenance.backends.spyre import SpyreBackend

    return SpyreBackend(bundle_dir=bundle_dir)
