"""A program that switches Inductor's provenance tracking itself, as PyTorch's own provenance
tests do: one compile under ``config.patch("trace.provenance_tracking_level", 1)``, then one
after the patch ended, then one with the level set to 0 outright. Prints each result."""

import torch
from torch._inductor import config

x = torch.arange(8, dtype=torch.float32).reshape(2, 4) / 3

with config.patch("trace.provenance_tracking_level", 1):
    print("patched", torch.compile(lambda t: torch.relu(t) * 2)(x).sum().item())
print("after", torch.compile(lambda t: torch.sin(t) + 1)(x).sum().item())
config.trace.provenance_tracking_level = 0
print("off", torch.compile(lambda t: torch.cos(t) - 1)(x).sum().item())
print("level", config.trace.provenance_tracking_level)
