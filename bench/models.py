"""The benchmark's models: the seed MLP, a transformer block, and a 24-layer stack of it;
for the whole-process rows, four steps of the examples' residual block.

The stack makes the graph large (~1.9k post-grad nodes, hundreds of kernel call sites)
while Inductor's per-graph kernel dedup keeps the number of distinct C++ kernels small, so
its compile time is mostly Python-side lowering and scheduling: where a hook's cost would
show. Each module has its own ``forward`` (not ``nn.Sequential``) so stack traces point here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor, nn

from spyre_provenance.compile.examples import EXAMPLES, ResidualBlock

SEED = 0
DIM, HEADS, SEQ, BATCH = 64, 4, 32, 2


class TransformerBlock(nn.Module):
    """Pre-norm block: LayerNorm -> attention (SDPA) -> residual, LayerNorm -> GELU MLP -> residual."""

    def __init__(self, dim: int = DIM, heads: int = HEADS) -> None:
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.norm2 = nn.LayerNorm(dim)
        self.up = nn.Linear(dim, 4 * dim)
        self.down = nn.Linear(4 * dim, dim)

    def forward(self, x: Tensor) -> Tensor:
        batch, seq, dim = x.shape
        q, k, v = self.qkv(self.norm1(x)).chunk(3, dim=-1)
        q, k, v = (t.reshape(batch, seq, self.heads, dim // self.heads).transpose(1, 2) for t in (q, k, v))
        attn = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(attn.transpose(1, 2).reshape(batch, seq, dim))
        return x + self.down(torch.nn.functional.gelu(self.up(self.norm2(x))))


class Stack(nn.Module):
    """``layers`` transformer blocks, one after the other."""

    def __init__(self, layers: int = 24) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(TransformerBlock() for _ in range(layers))

    def forward(self, x: Tensor) -> Tensor:
        for block in self.blocks:
            x = block(x)
        return x


class ResidualSteps(nn.Module):
    """``steps`` pre-norm residual blocks (``examples.ResidualBlock``) one after the other:
    at 4 steps, 96 post-grad nodes besides the inputs, 17 kernel call sites."""

    def __init__(self, steps: int = 4) -> None:
        super().__init__()
        self.steps = nn.ModuleList(ResidualBlock() for _ in range(steps))

    def forward(self, x: Tensor) -> Tensor:
        for step in self.steps:
            x = step(x)
        return x


class Tiny(nn.Module):
    """For ``--quick``: one extern GEMM, no C++ kernel to compile (a smoke run, in seconds)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(16, 16, bias=False)

    def forward(self, x: Tensor) -> Tensor:
        return self.fc(x)


def _seeded(build: Callable[[], nn.Module], *shape: int) -> Callable[[], tuple[nn.Module, tuple[Tensor, ...]]]:
    def factory() -> tuple[nn.Module, tuple[Tensor, ...]]:
        torch.manual_seed(SEED)
        return build().eval(), (torch.randn(*shape),)

    return factory


MODELS: dict[str, Callable[[], tuple[nn.Module, tuple[Tensor, ...]]]] = {
    "mlp": lambda: EXAMPLES["mlp"](torch.float32),
    "transformer block": _seeded(TransformerBlock, BATCH, SEQ, DIM),
    "24-layer stack": _seeded(Stack, BATCH, SEQ, DIM),
    "tiny": _seeded(Tiny, 4, 16),
    "4-step residual": _seeded(ResidualSteps, 2, 4, 64),
}
FULL = ("mlp", "transformer block", "24-layer stack")
QUICK = ("tiny",)
#: Rounds per model (at least 5): more where a compile is short and its noise large.
ROUNDS = {"mlp": 9, "transformer block": 7, "24-layer stack": 5, "tiny": 1}


def _llama(layers: int) -> tuple[nn.Module, tuple[Tensor, ...]]:
    """A Llama-shaped decoder from ``transformers``' own code (RoPE, RMSNorm, SwiGLU,
    grouped-query attention), ``layers`` deep, tiny widths and random weights (no download):
    the viewer's page of a real model's training compile (``bench.viewer``)."""
    import os

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import transformers

    torch.manual_seed(SEED)
    shape: dict[str, Any] = {  # tests/zoo/hf_models.py's llama, ``layers`` deep
        "vocab_size": 128,
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": layers,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "max_position_embeddings": 32,
        "use_cache": False,
        "attn_implementation": "sdpa",
    }
    config = transformers.LlamaConfig(**shape)
    return transformers.LlamaForCausalLM(config).eval(), (torch.randint(0, 128, (BATCH, 8)),)


def llama_32() -> tuple[nn.Module, tuple[Tensor, ...]]:
    return _llama(32)


def llama_1() -> tuple[nn.Module, tuple[Tensor, ...]]:
    """For ``--quick``."""
    return _llama(1)
