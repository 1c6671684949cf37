"""vLLM's general plugin (entry point group ``vllm.general_plugins``, name ``spyre_provenance``).

vLLM calls ``vllm_plugin`` in each of its processes, maybe after torch was imported, and
calls it without a ``try``: an exception would stop the server. It tracks only where
``SPYRE_PROVENANCE_OUT`` is set, as the start-up hook does (installing the package switches
nothing on by itself), through the same ``start`` (``spyre_provenance_startup``, the
top-level module beside this package), which never raises.

``start`` is here too for an environment installed before the start-up hook moved out of
this package: its ``.pth`` file, copied at install time, still calls
``spyre_provenance.plugin.startup.start()`` until the package is reinstalled.
"""

from __future__ import annotations

from spyre_provenance_startup import start

__all__ = ["start", "vllm_plugin"]


def vllm_plugin() -> None:
    """vLLM's entry point: ``start``, which never raises."""
    start()
