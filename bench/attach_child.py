"""The program of the ``run`` rows (``bench.attach_overhead``): a user's script that knows
nothing of spyre-provenance. The test zoo's Granite (transformers, 2 layers, random
weights) compiled, one training step. ``python bench/attach_child.py``."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import torch

ZOO = Path(__file__).resolve().parents[1] / "tests" / "zoo" / "hf_models.py"

spec = importlib.util.spec_from_file_location("spyre_bench_zoo", ZOO)
assert spec is not None and spec.loader is not None
zoo = importlib.util.module_from_spec(spec)
spec.loader.exec_module(zoo)
model, (ids,) = zoo.granite()
model.train()
out = torch.compile(model)(input_ids=ids, labels=ids)
out.loss.backward()
print(f"loss {out.loss.item():.6f}")
