"""spyre-provenance: tlparse-compatible compiler provenance for Spyre compiles.

The pure core (records, mapping, schemas, golden) imports no torch; the hook and the
backends do, lazily, so ``import spyre_provenance`` stays cheap for the validator.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__", "enable", "disable", "tracking"]


def __getattr__(name: str):
    if name in ("enable", "disable", "tracking"):
        from spyre_provenance.capture import hook

        return getattr(hook, name)
    raise AttributeError(name)
