"""The route that hands Inductor a graph on device ``spyre`` without a Spyre card.

On a card, ``compile --backend spyre`` moves the model and its inputs to ``spyre`` and
torch-spyre's ``compile_fx`` wrapper engages because they are there. Here no tensor can
live on ``spyre`` (the stand-in ``_C`` allocates nothing), so Dynamo traces on the CPU and
``spyre_inductor`` (a ``torch.compile`` backend) re-creates each example input as a fake
``spyre`` tensor in Dynamo's own fake mode, moves the graph's factory ops to ``spyre``, and
calls ``compile_fx``, which torch-spyre wraps: from there on everything is torch-spyre's
own compiler (its passes, scheduler, codegen, bundles) and the project's hook.

The kernels it makes cannot run here, so the compiled model's numbers come from the
traced graph itself (``gm.forward``, on the CPU): the eager comparison of a spyre_main
compile says nothing about Spyre's arithmetic.

``install()`` points the project's torch-spyre adapter at this route: its ``place`` keeps
the model on the CPU and its ``compiler`` is ``spyre_inductor``. What that replaces (the
product's own placement on ``spyre``) is verified only by reading and by the refusal test
(``test_compile_cli.py``).
"""

from __future__ import annotations

from typing import Any

DEVICE = "spyre"


def _on_spyre(graph_module: Any) -> int:
    """Point the graph's devices at ``spyre``: Dynamo traced factory ops (``arange``,
    ``zeros``, ``full``), ``.to(device)`` calls and the like on the CPU, where a card run
    would have built them on the device. Every ``torch.device("cpu")`` in a node's
    arguments, positional or keyword, becomes ``spyre``. Returns how many nodes moved."""
    import torch
    from torch.fx.node import map_aggregate

    spyre = torch.device(DEVICE)

    def moved(value: Any) -> Any:
        return spyre if isinstance(value, torch.device) and value.type == "cpu" else value

    count = 0
    for node in graph_module.graph.nodes:
        args, kwargs = map_aggregate(node.args, moved), map_aggregate(node.kwargs, moved)
        if kwargs.get("device") == "cpu":  # a device given as a string
            kwargs = {**kwargs, "device": spyre}
        if args != node.args or kwargs != node.kwargs:
            node.args, node.kwargs = args, kwargs
            count += 1
    if count:
        graph_module.recompile()
    return count


def _fake_on_spyre(fake_mode: Any, value: Any) -> Any:
    import torch

    if not isinstance(value, torch.Tensor):
        return value
    with fake_mode:
        fake = torch.empty_strided(value.size(), value.stride(), dtype=value.dtype, device=DEVICE)
    return fake.requires_grad_(value.requires_grad) if fake.is_floating_point() else fake


def spyre_inductor(graph_module: Any, example_inputs: list[Any]) -> Any:
    """A ``torch.compile`` backend: Inductor (torch-spyre's wrapped ``compile_fx``) on a graph
    whose inputs and factory ops are on ``spyre``; returns the traced graph to run."""
    import copy

    import torch._functorch.config as functorch_config
    from torch._guards import detect_fake_mode
    from torch._inductor import compile_fx
    from torch._subclasses.fake_tensor import FakeTensorMode

    from spyre_main import sdpa_choice

    fake_mode = detect_fake_mode(example_inputs) or FakeTensorMode(allow_non_fake_inputs=True)
    on_device = copy.deepcopy(graph_module)
    _on_spyre(on_device)
    # the compiled function never runs here, so a backward AOTAutograd would compile at
    # its first run is compiled now, as the run on a card would have it compiled
    # attention as torch-spyre's native extension routes it (``sdpa_choice``), with its own table
    sdpa_choice.install()
    with functorch_config.patch(force_non_lazy_backward_lowering=True):
        compile_fx.compile_fx(
            on_device,
            [_fake_on_spyre(fake_mode, x) for x in example_inputs],
            decompositions=sdpa_choice.decompositions(),
        )
    return graph_module.forward


def install() -> None:
    """Make the project's torch-spyre adapter compile through this route (for this process)."""
    from spyre_provenance.backends.spyre import SpyreBackend

    SpyreBackend.place = lambda self, model, calls: (model, calls)  # type: ignore[method-assign]
    SpyreBackend.compiler = lambda self: spyre_inductor  # type: ignore[method-assign]
