"""The programs of the warm-start rows (``bench.warm_start``): users' scripts that know
nothing of spyre-provenance. ``python bench/warm_child.py granite``: the test zoo's Granite
(transformers, 2 layers, random weights), one compiled inference call. ``... generate``: a
tiny GPT-2 compiled forward, then an 8-token ``generate`` with the compiled model.

When ``SPYRE_BENCH_TIMES`` names a file, the program writes there at exit what its own
process tree used, as a profiler reports collection apart from writing a report: wall seconds
since the process was created, and CPU seconds of it and the children it reaped (Inductor's
compile workers, the C++ compiler). Under ``run``, that leaves out ``run``'s launcher and
its end (screen, pages).
"""

from __future__ import annotations

import atexit
import importlib.util
import json
import os
import sys
import time
from pathlib import Path

import psutil
import torch

ZOO = Path(__file__).resolve().parents[1] / "tests" / "zoo" / "hf_models.py"


def _report() -> None:
    times = os.times()
    started = psutil.Process().create_time()
    record = {
        "wall": time.time() - started,
        "cpu": times.user + times.system + times.children_user + times.children_system,
    }
    Path(os.environ["SPYRE_BENCH_TIMES"]).write_text(json.dumps(record))


def main(program: str) -> None:
    if os.environ.get("SPYRE_BENCH_TIMES"):
        atexit.register(_report)
    spec = importlib.util.spec_from_file_location("spyre_bench_zoo", ZOO)
    assert spec is not None and spec.loader is not None
    zoo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(zoo)
    with torch.no_grad():
        if program == "granite":
            model, (ids,) = zoo.granite()
            print(f"logits {float(torch.compile(model)(input_ids=ids).logits.sum()):.6f}")
            return
        model, (ids,) = zoo.gpt2()
        model.generation_config.pad_token_id = 0
        compiled = torch.compile(model)
        compiled(input_ids=ids[:, :4])
        generated = compiled.generate(ids[:, :4], max_new_tokens=8, do_sample=False)
        print("generated", generated.tolist())


if __name__ == "__main__":
    main(sys.argv[1])
