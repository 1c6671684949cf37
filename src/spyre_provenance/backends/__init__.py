"""Backends the hook can track: stock Inductor, the Spyre-modelled reference, torch-spyre.

Each is one small adapter (see ``base.Backend``); ``get_backend(name)`` picks one, and
``choose_backend(name)`` also says, in one line, which one ``auto`` picked and why
(``resolve_backend``: the one rule ``auto`` stands for, on every entry point).
"""

from __future__ import annotations

from spyre_provenance.backends.base import Backend

BACKEND_NAMES = ("auto", "reference", "inductor", "spyre")
#: What every entry point compiles on unless told otherwise: the command line, the Python
#: API and the pytest fixture alike.
DEFAULT_BACKEND = "auto"


def resolve_backend(name: str, *, attached: bool = False, loaded: bool = True) -> tuple[str, str]:
    """(the backend ``name`` stands for, why). Any name but ``auto`` is itself.

    ``auto`` is one rule for every entry point: torch-spyre when the code compiled reaches
    it and the adapter can install on it (``spyre_backend.probe``), else the backend that
    compiles the code as it would be compiled anyway. When this tool compiles the model
    (``compile``, ``compile_request``, the fixture) it reaches torch-spyre always, and
    otherwise the reference backend, its Spyre-modelled stand-in, compiles it. In a program
    tracked from outside (``attached``: ``run``, ``SPYRE_PROVENANCE_OUT``) it reaches
    torch-spyre only when the program ``loaded`` it (``torch_spyre`` is imported), and
    otherwise stock Inductor, whose kernels the program compiles anyway: there ``auto``
    never changes what the program compiles to (``reference``, which replaces Inductor's CPU
    code generation, is asked for, never chosen)."""
    if name not in BACKEND_NAMES:
        raise ValueError(f"unknown backend {name!r}; choose one of {', '.join(BACKEND_NAMES)}")
    if name != "auto":
        return name, "asked for"
    otherwise = "inductor" if attached else "reference"
    if not loaded:
        return otherwise, "auto: the program did not load torch_spyre"
    from spyre_provenance.backends import spyre as spyre_backend

    usable, why = spyre_backend.probe()
    return ("spyre" if usable else otherwise), f"auto: {why}"


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
