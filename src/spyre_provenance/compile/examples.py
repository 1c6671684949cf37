"""Built-in example models, and loading a model from ``PATH.py:FACTORY``.

Every factory takes a dtype and returns ``(module, example_inputs)``, with weights and inputs
drawn from a fixed seed, so the same name gives the same model in every run. Each model has
its own ``forward`` here (not ``nn.Sequential``): Dynamo records ``stack_trace`` only for frames
outside torch, so these lines are what provenance points back to.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path

import torch
from torch import Tensor, nn

Factory = Callable[[torch.dtype], tuple[nn.Module, tuple[Tensor, ...]]]

SEED = 0


class ModelLoadError(Exception):
    """The model names nothing loadable; ``str(exc)`` is a one-line reason."""


class MLP(nn.Module):
    """The seed model: Linear(128, 256) -> ReLU -> Linear(256, 128)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(128, 256)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(256, 128)

    def forward(self, x: Tensor) -> Tensor:
        h = self.act(self.fc1(x))
        return self.fc2(h)


class ResidualBlock(nn.Module):
    """Pre-norm residual MLP block with a softmax head: views, reductions, a skip add."""

    def __init__(self, dim: int = 64) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.up = nn.Linear(dim, 2 * dim)
        self.down = nn.Linear(2 * dim, dim)

    def forward(self, x: Tensor) -> Tensor:
        h = self.up(self.norm(x))
        h = self.down(torch.relu(h))
        return torch.softmax(x + h, dim=-1)


class Reduce2(nn.Module):
    """Two outputs from reductions (sum, max, mean): multi-output kernels, no weights."""

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        total = x.sum(dim=-1)
        peak = x.amax(dim=-1)
        return total * 2.0, peak - total.mean()


class GraphBreak(nn.Module):
    """A graph break in the middle: Dynamo compiles two graphs, each with its own mapping."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(32, 32)
        self.fc2 = nn.Linear(32, 16)

    def forward(self, x: Tensor) -> Tensor:
        h = torch.relu(self.fc1(x))
        torch._dynamo.graph_break()
        return torch.sigmoid(self.fc2(h))


def _build(module_cls: type[nn.Module], *shape: int) -> Factory:
    def factory(dtype: torch.dtype = torch.float32) -> tuple[nn.Module, tuple[Tensor, ...]]:
        torch.manual_seed(SEED)
        module = module_cls().to(dtype).eval()
        return module, (torch.randn(*shape, dtype=dtype),)

    factory.__doc__ = module_cls.__doc__
    return factory


EXAMPLES: dict[str, Factory] = {
    "mlp": _build(MLP, 8, 128),
    "residual": _build(ResidualBlock, 2, 4, 64),
    "reduce2": _build(Reduce2, 8, 32),
    "graph_break": _build(GraphBreak, 4, 32),
}


# --- models that run on several ranks (``compile MODEL --ranks N``) ---------------------------


def _all_reduce_sum(tensor: Tensor) -> Tensor:
    """A traceable all_reduce (``_c10d_functional``): Dynamo puts it into the graph, so it
    is a call site of the compiled code like any kernel (``all_reduce_`` + ``wait_tensor``)."""
    import torch.distributed as dist
    from torch.distributed import _functional_collectives as funcol

    return funcol.all_reduce(tensor, "sum", dist.group.WORLD)


class TensorParallelMLP(nn.Module):
    """The seed MLP's shape, Megatron-style over the ranks: a column-parallel Linear (each
    rank holds a slice of the hidden units), ReLU, a row-parallel Linear (the matching
    slice of its inputs), the partial sums all-reduced, then the bias added once."""

    def __init__(self, rank: int, world: int, dim: int = 32, hidden: int = 64) -> None:
        super().__init__()
        if hidden % world:
            raise ModelLoadError(f"tensor_parallel: {hidden} hidden units do not split over {world} ranks")
        full_up, full_down = nn.Linear(dim, hidden), nn.Linear(hidden, dim)  # the unsharded model
        part = slice(rank * hidden // world, (rank + 1) * hidden // world)
        self.up = nn.Linear(dim, hidden // world)  # column-parallel
        self.down = nn.Linear(hidden // world, dim, bias=False)  # row-parallel
        self.bias = nn.Parameter(full_down.bias.detach().clone())
        with torch.no_grad():
            self.up.weight.copy_(full_up.weight[part])
            self.up.bias.copy_(full_up.bias[part])
            self.down.weight.copy_(full_down.weight[:, part])

    def forward(self, x: Tensor) -> Tensor:
        h = torch.relu(self.up(x))
        partial = self.down(h)
        return _all_reduce_sum(partial) + self.bias


class DataParallelSyncNorm(nn.Module):
    """Data parallel: the same weights on every rank, each rank its own shard of the batch,
    and the batch statistics all-reduced in the step (as SyncBatchNorm does), so the
    collective is in the compiled graph. (DDP's gradient all-reduce runs in autograd hooks
    outside the compiled graphs, where no mapping could show it.)"""

    def __init__(self, world: int, dim: int = 32) -> None:
        super().__init__()
        self.world = world
        self.fc1 = nn.Linear(dim, dim)
        self.fc2 = nn.Linear(dim, dim)

    def forward(self, x: Tensor) -> Tensor:
        h = self.fc1(x)
        mean = _all_reduce_sum(h.sum(dim=0)) / (x.shape[0] * self.world)
        h = torch.relu(h - mean)
        return self.fc2(h)


def _process_group(name: str) -> tuple[int, int]:
    import torch.distributed as dist  # here: a line more at the top would move every golden source line

    if not (dist.is_available() and dist.is_initialized()):
        raise ModelLoadError(f"{name} runs on several ranks: compile it with --ranks N (N >= 2)")
    return dist.get_rank(), dist.get_world_size()


def tensor_parallel(dtype: torch.dtype = torch.float32) -> tuple[nn.Module, tuple[Tensor, ...]]:
    rank, world = _process_group("tensor_parallel")
    torch.manual_seed(SEED)  # the same unsharded weights and the same input on every rank
    module = TensorParallelMLP(rank, world).to(dtype).eval()
    return module, (torch.randn(8, 32, dtype=dtype),)


def data_parallel(dtype: torch.dtype = torch.float32) -> tuple[nn.Module, tuple[Tensor, ...]]:
    rank, world = _process_group("data_parallel")
    torch.manual_seed(SEED)  # the same weights on every rank
    module = DataParallelSyncNorm(world).to(dtype).eval()
    batch = torch.randn(8 * world, 32, dtype=dtype)
    return module, (batch[rank * 8 : (rank + 1) * 8].clone(),)  # this rank's shard


tensor_parallel.__doc__ = TensorParallelMLP.__doc__
data_parallel.__doc__ = DataParallelSyncNorm.__doc__

#: The models that need a process group: ``compile NAME --ranks N`` runs them.
RANKED_EXAMPLES: dict[str, Factory] = {"tensor_parallel": tensor_parallel, "data_parallel": data_parallel}


def load_model(model: str, dtype: torch.dtype | None = torch.float32) -> tuple[nn.Module, tuple[Tensor, ...]]:
    """A built-in name, or ``PATH.py:FACTORY`` where ``FACTORY()`` returns (module, inputs):
    the module and the inputs of its first call (``load_calls`` has every call)."""
    module, calls = load_calls(model, dtype)
    return module, calls[0]


def load_calls(model: str, dtype: torch.dtype | None = torch.float32) -> tuple[nn.Module, list[tuple[Tensor, ...]]]:
    """A built-in name, or ``PATH.py:FACTORY`` where ``FACTORY()`` returns (module, inputs).

    ``inputs`` is a tuple of the module's arguments (a single tensor is one argument), or a
    list of such tuples: the module is then called once per tuple, in order, so inputs of
    new shapes recompile it (compile ids 0/0, 0/1, ...). Returns the module and every
    call's inputs. The dtype is applied to the module and to the floating-point inputs
    (integer inputs, such as token ids, keep theirs); None leaves a file model as its
    factory built it (mixed dtypes stay mixed; built-in models are float32 then). Raises
    ModelLoadError with a one-line reason.
    """
    if model in EXAMPLES:
        module, inputs = EXAMPLES[model](dtype or torch.float32)
        return module, [inputs]
    if model in RANKED_EXAMPLES:
        module, inputs = RANKED_EXAMPLES[model](dtype or torch.float32)
        return module, [inputs]
    path_text, sep, factory_name = model.rpartition(":")
    if not sep or not path_text.endswith(".py") or not factory_name:
        names = ", ".join([*EXAMPLES, *RANKED_EXAMPLES])
        raise ModelLoadError(f"not a built-in model ({names}) nor PATH.py:FACTORY")
    source = _import_file(Path(path_text))
    factory = getattr(source, factory_name, None)
    if not callable(factory):
        raise ModelLoadError(f"{path_text} has no callable {factory_name!r}")
    try:
        result = factory()
    except Exception as exc:  # the user's code: report it, do not crash on it
        raise ModelLoadError(f"{factory_name}() raised {type(exc).__name__}: {exc}") from exc
    if not (isinstance(result, tuple) and len(result) == 2 and isinstance(result[0], nn.Module)):
        raise ModelLoadError(
            f"{factory_name}() must return (torch.nn.Module, tuple_of_inputs) or (torch.nn.Module, [tuple_of_inputs, ...])"
        )
    module, inputs = result
    if isinstance(inputs, list) and inputs and all(isinstance(call, tuple) for call in inputs):
        calls = [tuple(call) for call in inputs]  # several calls, one tuple of arguments each
    else:
        calls = [tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)]
    if dtype is None:
        return module, calls
    return module.to(dtype), [tuple(_cast(x, dtype) for x in call) for call in calls]


def _cast(value: object, dtype: torch.dtype) -> object:
    """A floating-point input in ``dtype``; a leaf that requires grad stays one."""
    if isinstance(value, Tensor) and value.is_floating_point() and value.dtype != dtype:
        return value.detach().to(dtype).requires_grad_(value.requires_grad)
    return value


def _import_file(path: Path) -> object:
    if not path.is_file():
        raise ModelLoadError(f"{path}: no such file")
    # imported here: a line added above the models would move their lines, which goldens hold
    from spyre_provenance.model.names import FILE_MODEL_MODULE

    # A name derived from the path, so two model files never replace each other's module.
    name = FILE_MODEL_MODULE + "".join(c if c.isalnum() else "_" for c in str(path))
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ModelLoadError(f"{path}: cannot be imported")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look the module up by name
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        sys.modules.pop(name, None)
        raise ModelLoadError(f"{path}: import failed: {type(exc).__name__}: {exc}") from exc
    return module
