"""A user's program that compiles on torch-spyre main, run unmodified under
``spyre-provenance run`` (issue 45 point 7; ``tests/spyre_main/test_spyre_run.py``).

It boots torch-spyre itself, as a program on a card imports ``torch_spyre`` (here on the
suite's stand-in ``_C``, ``boot.py``, with ``TORCH_DEVICE_BACKEND_AUTOLOAD=0`` as vLLM's
Spyre plugin sets it), and hands the seed MLP in fp16 to torch-spyre's compiler the way the
suite's route does (``route.spyre_inductor``: no tensor can live on ``spyre`` here). The
model and its input are those of ``compile mlp --backend spyre --dtype float16``. Nothing
in it knows about tracking.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests/: spyre_main

from spyre_main import boot, route

boot.boot_from_env()

import torch  # noqa: E402

from spyre_provenance.compile.examples import EXAMPLES  # noqa: E402 - the model `compile mlp` builds

model, (x,) = EXAMPLES["mlp"](torch.float16)
compiled = torch.compile(model, backend=route.spyre_inductor)
with torch.no_grad():
    y = compiled(x)
print(f"output {tuple(y.shape)} {y.dtype}")
