"""A multi-rank model that fails on one rank, for tests/test_multirank.py (fault injection
lives here, in test code, not in the package).

``SPYRE_TEST_FAIL_RANK=r`` picks the rank; ``SPYRE_TEST_FAIL_HOW`` how it fails:

- ``kill``: SIGKILL in the middle of its compile (Inductor's post-grad custom pass, after
  Dynamo and AOTAutograd, before any kernel is generated), as an OOM killer would, once
  every other rank has written its mapping: torchrun stops the other ranks 30 s after
  one failed, and a rank still compiling on a busy machine may need longer than that;
- ``raise``: its factory raises, before anything is compiled;
- ``hang``: its factory never returns (and its rank ignores torchrun's SIGTERM), so its peers'
  first collective, in their eager run, waits for it until the group's timeout.

Every other rank builds the built-in model of the same name.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import torch
import torch.distributed as dist

from spyre_provenance.compile.examples import RANKED_EXAMPLES


def tensor_parallel() -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    return _failing("tensor_parallel")


def data_parallel() -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    return _failing("data_parallel")


def _failing(name: str) -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    model = RANKED_EXAMPLES[name](torch.float32)
    if dist.get_rank() == int(os.environ.get("SPYRE_TEST_FAIL_RANK", "-1")):
        how = os.environ.get("SPYRE_TEST_FAIL_HOW", "kill")
        if how == "raise":
            raise RuntimeError(f"rank {dist.get_rank()} was told to fail")
        if how == "hang":
            while True:
                time.sleep(1)

        def die(graph: torch.fx.Graph) -> None:
            _others_wrote_their_mappings()
            os.kill(os.getpid(), signal.SIGKILL)

        torch._inductor.config.post_grad_custom_post_pass = die
    return model


def _others_wrote_their_mappings(timeout: float = 300.0) -> None:
    """Until every other rank's folder (``OUT/rank<r>/``, beside this rank's, whose trace
    folder TORCH_TRACE names) holds its graph's mapping, or ``timeout`` seconds."""
    out = Path(os.environ["TORCH_TRACE"]).parent.parent
    others = [out / f"rank{r}" for r in range(dist.get_world_size()) if r != dist.get_rank()]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all(list(o.glob("graph_*/inductor_provenance_tracking_node_mappings.json")) for o in others):
            return
        time.sleep(0.1)
