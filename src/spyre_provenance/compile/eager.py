"""The model loaded and run eagerly: the reference a tracked compile is checked against.

``load`` builds a model by its name (a built-in example or ``PATH.py:FACTORY``) with its
calls; ``run_eager`` runs copies of it, and ``run_calls`` is the one way every run (eager,
compiled, the float64 judge) calls a model: each call from the same random seed, with a
backward through every output that requires grad when training. Loading and the eager runs
are eager (``eagerly``), even for a model that compiles parts of itself. A model that fails in
eager mode, or a training run with nothing to differentiate, is ``NotCompilable`` here,
before anything is compiled or written.
"""

from __future__ import annotations

import contextlib
import copy
from typing import Any

import msgspec

AS_BUILT = "as built"  # the dtype label of a file model compiled without --dtype
#: The random seed set before every run that is compared (eager, compiled, the check
#: compile), so runs that draw random numbers the same way draw the same ones.
RNG_SEED = 0


class NotCompilable(Exception):
    """The model cannot be compiled the way it was asked for; ``str(exc)`` is one line."""


class LoadedModel(msgspec.Struct):
    """A model ready to compile: the model as the user named it (``mlp``, ``PATH.py:FACTORY``),
    the module its name built, and its calls."""

    model: str
    module: Any
    calls: list[tuple[Any, ...]]  # the inputs of each call, in order (new shapes recompile)
    dtype: str  # "float32", ... or AS_BUILT

    @property
    def inputs(self) -> tuple[Any, ...]:
        """The first call's inputs."""
        return self.calls[0]


def load(model: str, dtype: str | None = None) -> LoadedModel:
    """The ``model`` (built-in name or ``PATH.py:FACTORY``) loaded in ``dtype``; None keeps
    a file model's own dtypes (float32 for the built-in ones). Raises ModelLoadError."""
    import torch

    from spyre_provenance.compile.examples import EXAMPLES, RANKED_EXAMPLES, load_calls

    if dtype is None and (model in EXAMPLES or model in RANKED_EXAMPLES):
        dtype = "float32"
    with eagerly():  # a factory that runs its model once (a warm-up) compiles nothing untracked
        module, calls = load_calls(model, None if dtype is None else getattr(torch, dtype))
    return LoadedModel(model, module, calls, dtype or AS_BUILT)


def check_trainable(loaded: LoadedModel) -> None:
    """``--train`` needs a parameter or an input that requires grad: NotCompilable if not."""
    import torch

    if any(p.requires_grad for p in loaded.module.parameters()):
        return
    if all(any(isinstance(x, torch.Tensor) and x.requires_grad for x in call) for call in loaded.calls):
        return
    raise NotCompilable(
        "--train needs something to differentiate: the model has no parameter that requires grad"
        " and no input requires grad (return inputs with requires_grad=True from the factory)"
    )


def run_eager(loaded: LoadedModel, *, train: bool = False) -> list[Any]:
    """The eager reference: outputs (and gradients, when training) of copies of the model
    and its inputs, in train or eval mode. Raises NotCompilable when there is nothing to
    differentiate or the model fails."""
    if train:
        check_trainable(loaded)
    loaded.module.train(train)
    model, calls = copy.deepcopy(loaded.module), [copies(call) for call in loaded.calls]
    try:
        with eagerly():
            return run_calls(model, model, calls, train)
    except NotCompilable:
        raise
    except Exception as exc:  # noqa: BLE001 - the user's model: one line, never a traceback
        raise NotCompilable(f"the model fails in eager mode: {type(exc).__name__}: {exc}") from None


def float64_run(model: Any, calls: list[tuple[Any, ...]], train: bool) -> list[Any] | None:
    """Eager in float64, the judge past the tolerance (``numerics.check``); None when the
    model cannot run in float64 (then the tolerance's verdict stands)."""
    import torch

    wide = copy.deepcopy(model).double()
    widened = [
        tuple(
            x.detach().double().requires_grad_(x.requires_grad)
            if isinstance(x, torch.Tensor) and x.is_floating_point()
            else x
            for x in call
        )
        for call in calls
    ]
    try:
        with eagerly():
            return run_calls(wide, wide, widened, train)
    except Exception:  # noqa: BLE001 - an op without float64 support: no verdict from here
        return None


def eagerly() -> contextlib.AbstractContextManager[object]:
    """The reference run logs nothing: a model may compile its own parts
    (``DistributedDataParallel(torch.compile(seq))``), and the graphs its reference run
    compiles, untracked, would land in the model's log beside the tracked compile's (their
    compile ids too, as ``torch._dynamo.reset`` starts those again). They still compile: a
    model's own ``torch.compile`` is how it runs (``torch.cond`` compiles even in eager mode,
    so a stance forcing eager breaks it)."""
    from spyre_provenance.capture import trace_log

    return trace_log.off()


def copies(inputs: tuple[Any, ...]) -> tuple[Any, ...]:
    """Fresh tensors for the eager run: the gradients of inputs must not add up."""
    import torch

    return tuple(
        x.detach().clone().requires_grad_(x.requires_grad) if isinstance(x, torch.Tensor) else copy.deepcopy(x)
        for x in inputs
    )


def run_calls(fn: Any, module: Any, calls: list[tuple[Any, ...]], train: bool) -> list[Any]:
    """Outputs and, when training, the gradients of the parameters and of the inputs that
    require grad, of every call in order, as one flat list of tensors. Each call starts
    from the same random seed and, when training, from no gradients."""
    import torch

    got: list[Any] = []
    for inputs in calls:
        torch.manual_seed(RNG_SEED)
        if not train:
            with torch.no_grad():
                got += flatten(fn(*inputs))
            continue
        leaves = [*module.parameters(), *(x for x in inputs if isinstance(x, torch.Tensor) and x.requires_grad)]
        for leaf in leaves:
            leaf.grad = None
        outputs = flatten(fn(*inputs), detach=False)  # the loss needs their autograd graph
        differentiable = [o for o in outputs if o.is_floating_point() and o.requires_grad]
        if not differentiable:
            raise NotCompilable("--train: no output of the model depends on something that requires grad")
        sum(o.float().sum() for o in differentiable).backward()
        got += [o.detach() for o in outputs] + [t.grad for t in leaves if t.grad is not None]
    return got


def flatten(value: Any, detach: bool = True) -> list[Any]:
    import torch

    if isinstance(value, torch.Tensor):
        return [value.detach() if detach else value]
    if isinstance(value, (list, tuple)):
        return [t for item in value for t in flatten(item, detach)]
    if isinstance(value, dict):
        return [t for key in sorted(value) for t in flatten(value[key], detach)]
    return []
