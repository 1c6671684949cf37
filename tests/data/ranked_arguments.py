"""The built-in ``tensor_parallel`` model, whose factory first prints the arguments its rank's
process was started with (``arguments: <JSON list>``), for tests/compile/test_multirank.py:
what reaches every rank of ``compile --ranks N``, as the rank itself sees it."""

from __future__ import annotations

import json
import sys

import torch

from spyre_provenance.compile.examples import RANKED_EXAMPLES


def tensor_parallel() -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    print("arguments: " + json.dumps(sys.argv[1:]), flush=True)
    return RANKED_EXAMPLES["tensor_parallel"](torch.float32)
