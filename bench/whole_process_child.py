"""One run of the whole-process rows: ``python -m bench.whole_process_child ARM ROW``.

Arm A compiles under ``spyre_provenance.tracking("inductor")``, arm B with upstream's
``provenance_tracking_level = 1`` alone; prints one JSON line (the phases by this process's
own clock, and in arm A the graphs the hook mapped). Imports nothing but the standard
library before the run starts, so arm A pays for every import of the hook itself.
"""

from __future__ import annotations

import json
import sys
import time
from typing import NamedTuple


class Row(NamedTuple):
    label: str
    model: str  # a name in bench.models.MODELS, or a PATH.py:FACTORY of the repository's zoo
    train: bool  # forward + backward (parameters require grad) instead of no_grad


#: The real decoder LLM of the test zoo (a tiny Granite from transformers, random weights):
#: what a user's model costs, not a hand-made one. Needs the [models] extra.
GRANITE = "tests/zoo/hf_models.py:granite"

ROWS = {
    "4-step residual": Row("4-step residual, no_grad", "4-step residual", False),
    "4-step residual, training": Row("4-step residual, training", "4-step residual", True),
    "granite": Row("Granite (transformers, 2 layers), no_grad", GRANITE, False),
    "granite, training": Row("Granite (transformers, 2 layers), training", GRANITE, True),
    "mlp, training": Row("mlp, training", "mlp", True),
    "tiny": Row("tiny, no_grad", "tiny", False),
    "tiny, training": Row("tiny, training", "tiny", True),
}


def _load(model: str):
    """The row's model: a benchmark model by name, or a zoo factory by path (the
    repository's, as ``make bench`` runs from a checkout)."""
    if ":" not in model:
        from bench.models import MODELS

        return MODELS[model]()
    import importlib.util
    from pathlib import Path

    path, _, factory = model.partition(":")
    root = Path(__file__).resolve().parents[1]  # bench/ sits in the checkout
    spec = importlib.util.spec_from_file_location("spyre_bench_zoo", root / path)
    if spec is None or spec.loader is None:
        raise ImportError(f"{root / path}: cannot be imported")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, factory)()


def child(arm: str, row_name: str) -> dict:
    """Run one compile as arm ``arm``; returns the phases and, in arm A, the graphs' shape."""
    clock = time.perf_counter
    phases: dict[str, float] = {}
    mark = clock()

    def phase(name: str) -> None:
        nonlocal mark
        now = clock()
        phases[name] = now - mark
        mark = now

    import contextlib

    import torch

    # Modules every compile imports, imported here in both arms: enabling the hook imports
    # them earlier than the compile would, which would otherwise blur the phases (never
    # the totals: arm B imports them all during the compile).
    import torch._functorch.config
    import torch._inductor.codegen.cpp
    import torch._inductor.config
    import torch._inductor.debug

    phase("import torch")
    row = ROWS[row_name]
    model, inputs = _load(row.model)
    model.train(row.train)
    phase("model")
    if arm == "B":
        torch._inductor.config.trace.provenance_tracking_level = 1
        tracking: contextlib.AbstractContextManager = contextlib.nullcontext()
    else:
        import spyre_provenance

        tracking = spyre_provenance.tracking("inductor")
    grad = contextlib.nullcontext() if row.train else torch.no_grad()
    in_seams = [0.0]
    with grad:
        session = tracking.__enter__()
        phase("enter tracking")
        timing: contextlib.AbstractContextManager[None] = contextlib.nullcontext()
        if arm == "A":
            from bench.compile_overhead import _timing_hook_seams

            timing = _timing_hook_seams(in_seams)
        with timing:
            out = torch.compile(model)(*inputs)
            if row.train:
                _first_tensor(out).sum().backward()
        phase("compile and run")
        tracking.__exit__(None, None, None)
        phase("leave tracking")
    shape = _shape(row_name, session) if arm == "A" else None
    return {"phases": phases, "in_seams": in_seams[0], "shape": shape}


def _first_tensor(out: object):
    """The output to differentiate: a tensor, or a model output's first (its logits)."""
    if isinstance(out, dict):
        return next(iter(out.values()))
    return out[0] if isinstance(out, (tuple, list)) else out


def _shape(row_name: str, session: object) -> list[int]:
    """[graphs, call sites, post-grad nodes] the hook mapped; refuses a run where it did not."""
    results = getattr(session, "results", [])
    kinds = [graph.kind for graph in results]
    wanted = ["forward", "backward"] if ROWS[row_name].train else ["inference"]
    if kinds != wanted:
        raise SystemExit(f"{row_name}: the hook recorded graphs {kinds}, not {wanted}")
    sites = nodes = 0
    for graph in results:
        if graph.node_mappings is None or graph.diagnostics.faults or graph.diagnostics.coverage is None:
            raise SystemExit(f"{row_name}: the hook failed in arm A: {graph.diagnostics.faults}")
        counts = graph.diagnostics.coverage
        sites += len(graph.records)
        exempt = counts.exempt_nodes
        nodes += counts.compute_nodes + exempt.view + exempt.dead + exempt.constant
    return [len(results), sites, nodes]


def main(argv: list[str] | None = None) -> int:
    arm, row_name = sys.argv[1:] if argv is None else argv
    print(json.dumps(child(arm, row_name)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
