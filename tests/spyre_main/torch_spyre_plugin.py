"""A pytest plugin for running torch-spyre's own tests on the stand-in ``_C``: loaded with
``-p spyre_main.torch_spyre_plugin`` (``tests/`` on ``PYTHONPATH``), it boots torch-spyre
(``boot.py``) from ``$SPYRE_PROVENANCE_TORCH_SPYRE_SOURCE`` before pytest collects a test
module, so their ``import torch_spyre`` finds the stand-in in place."""

from __future__ import annotations

from spyre_main import boot


def pytest_configure(config) -> None:
    boot.boot_from_env()
