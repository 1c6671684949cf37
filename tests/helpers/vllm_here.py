"""Whether vLLM can be tested in this venv, one rule for every test that runs it.

vLLM 0.27.1 pins torch 2.13.0, so ``make venv`` installs it (``--no-deps``) beside that torch
only; the next torches' venvs (``make test-torch-next``) have none, as a user's would not.
Where it is missing the test skips, except in CI on torch 2.13, where it must run.
"""

from __future__ import annotations

import importlib.util
import os

import pytest

#: the torch release vLLM 0.27.1 pins (and the main venv holds)
VLLMS_TORCH = "2.13."


def vllm_or_skip() -> None:
    """Return when vLLM imports here; else skip, or fail in CI beside the torch it pins."""
    import torch

    if importlib.util.find_spec("vllm") is not None:
        return
    if os.environ.get("CI") == "true" and torch.__version__.startswith(VLLMS_TORCH):
        pytest.fail("vLLM must be tested in CI: vllm is not installed (make venv installs vllm==0.27.1 --no-deps)")
    pytest.skip(f"vllm 0.27.1 is installed only beside torch 2.13 (this is {torch.__version__})")
