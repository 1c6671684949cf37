"""A user's script that knows nothing of spyre-provenance: one compiled function, its result
printed in full, then the settings a tracker must leave as the user set them, and whether
jsonschema was imported (the tracker checks what it writes without it)."""

import logging
import os
import sys

import torch

torch.set_printoptions(precision=10)
f = torch.compile(lambda x, y: torch.relu(x @ y) + torch.sin(x).sum())
x = torch.arange(12, dtype=torch.float32).reshape(3, 4) / 7
y = torch.arange(8, dtype=torch.float32).reshape(4, 2) / 5
print("result", f(x, y).tolist(), flush=True)
print("TORCH_TRACE", os.environ.get("TORCH_TRACE"))
print("INDUCTOR_PROVENANCE", os.environ.get("INDUCTOR_PROVENANCE"))
print("TORCH_DEVICE_BACKEND_AUTOLOAD", os.environ.get("TORCH_DEVICE_BACKEND_AUTOLOAD"))
print("graph_breaks logged", torch._logging._internal.log_state.is_artifact_enabled("graph_breaks"))
print("torch logger", logging.getLogger("torch").level, logging.getLogger("torch._dynamo").level)
print("jsonschema imported", "jsonschema" in sys.modules)
