"""The zoo's shapes at Spyre's width, for torch-spyre main (``tests/spyre_main``).

torch-spyre computes on sticks of 128 bytes (64 fp16 elements), and main refuses a matmul
whose reduction size is not a whole number of sticks (its bmm padding fails with
``KeyError: 'val'``); most of ``models.py`` uses widths of 16 or 32 and stops there (the
refusals table of docs/torch-spyre-main.md). These factories build the same kinds of
compiled code at widths torch-spyre accepts, so its scheduler, passes and codegen run:
each is a ``PATH.py:FACTORY`` as for ``compile``; ``SPYRE_ZOO`` says what each covers.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

SEED = 0
WIDTH = 64  # one fp16 stick


class GatedMLP(nn.Module):
    """RMSNorm then a SwiGLU MLP (gate, up, down projections)."""

    def __init__(self, dim: int = WIDTH, hidden: int = 2 * WIDTH) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.gate = nn.Linear(dim, hidden, bias=False)
        self.up = nn.Linear(dim, hidden, bias=False)
        self.down = nn.Linear(hidden, dim, bias=False)

    def forward(self, x: Tensor) -> Tensor:
        h = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


def gated_mlp():
    torch.manual_seed(SEED)
    return GatedMLP(), (torch.randn(4, WIDTH),)


class SoftmaxAttention(nn.Module):
    """Single-head attention written out: q @ k^T, scale, softmax, @ v, output projection."""

    def __init__(self, dim: int = WIDTH) -> None:
        super().__init__()
        self.q = nn.Linear(dim, dim)
        self.k = nn.Linear(dim, dim)
        self.v = nn.Linear(dim, dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, x: Tensor) -> Tensor:
        q, k, v = self.q(x), self.k(x), self.v(x)
        weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1)
        return self.out(weights @ v)


def softmax_attention():
    torch.manual_seed(SEED)
    return SoftmaxAttention(), (torch.randn(2, WIDTH, WIDTH),)


class NormBlock(nn.Module):
    """Pre-LayerNorm residual block with a GELU MLP."""

    def __init__(self, dim: int = WIDTH) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.up = nn.Linear(dim, 2 * dim)
        self.down = nn.Linear(2 * dim, dim)

    def forward(self, x: Tensor) -> Tensor:
        return x + self.down(F.gelu(self.up(self.norm(x))))


def layernorm_block():
    torch.manual_seed(SEED)
    return NormBlock(), (torch.randn(8, WIDTH),)


class SharedBlock(nn.Module):
    """One Linear+ReLU submodule called twice, with a head in between."""

    def __init__(self, dim: int = WIDTH) -> None:
        super().__init__()
        self.block = nn.Sequential(nn.Linear(dim, dim), nn.ReLU())
        self.mid = nn.Linear(dim, dim)

    def forward(self, x: Tensor) -> Tensor:
        return self.block(self.mid(self.block(x)))


def shared_block():
    torch.manual_seed(SEED)
    return SharedBlock(), (torch.randn(8, WIDTH),)


class ResidualStack(nn.Module):
    """A loop of residual Linear+SiLU blocks: many post-grad nodes, one long kernel."""

    def __init__(self, dim: int = WIDTH, depth: int = 4) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(nn.Linear(dim, dim) for _ in range(depth))

    def forward(self, x: Tensor) -> Tensor:
        for block in self.blocks:
            x = x + F.silu(block(x))
        return x


def residual_stack():
    torch.manual_seed(SEED)
    return ResidualStack(), (torch.randn(8, WIDTH),)


class TiedEmbedding(nn.Module):
    """Token embedding (a gather) whose weight is also the output projection's."""

    def __init__(self, vocab: int = 2 * WIDTH, dim: int = WIDTH) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.head = nn.Linear(dim, vocab, bias=False)
        self.head.weight = self.embed.weight

    def forward(self, ids: Tensor) -> Tensor:
        return self.head(torch.relu(self.embed(ids)))


def tied_embedding():
    torch.manual_seed(SEED)
    return TiedEmbedding(), (torch.randint(0, 2 * WIDTH, (2, 8)),)


class NormGatedBlock(nn.Module):
    """Pre-LayerNorm residual block with a SiLU-gated MLP (gate, up, down projections)."""

    def __init__(self, dim: int = WIDTH, hidden: int = 2 * WIDTH) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.gate = nn.Linear(dim, hidden, bias=False)
        self.up = nn.Linear(dim, hidden, bias=False)
        self.down = nn.Linear(hidden, dim, bias=False)

    def forward(self, x: Tensor) -> Tensor:
        h = self.norm(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


def layernorm_gated_mlp():
    torch.manual_seed(SEED)
    return NormGatedBlock(), (torch.randn(8, WIDTH),)


class GeluResidual(nn.Module):
    """A GELU MLP with a residual connection, no norm."""

    def __init__(self, dim: int = WIDTH, hidden: int = 2 * WIDTH) -> None:
        super().__init__()
        self.up = nn.Linear(dim, hidden)
        self.down = nn.Linear(hidden, dim)

    def forward(self, x: Tensor) -> Tensor:
        return x + self.down(F.gelu(self.up(x)))


def gelu_residual():
    torch.manual_seed(SEED)
    return GeluResidual(), (torch.randn(8, WIDTH),)


def gelu_mlp_batched():
    """``GeluResidual`` on a batch of sequences (``[2, 8, 64]``), hidden 256."""
    torch.manual_seed(SEED)
    return GeluResidual(hidden=4 * WIDTH), (torch.randn(2, 8, WIDTH),)


def gelu_mlp_wide():
    """``GeluResidual`` on ``[4, 16, 64]``, hidden 512: main copies the first matmul's
    result for its bias add and the GELU's for the second matmul (two LX relayouts)."""
    torch.manual_seed(SEED)
    return GeluResidual(hidden=8 * WIDTH), (torch.randn(4, 16, WIDTH),)


def single_head_attention():
    """``SoftmaxAttention`` on one sequence (2-D: tokens x width), no batch dimension."""
    torch.manual_seed(SEED)
    return SoftmaxAttention(), (torch.randn(WIDTH, WIDTH),)


class AttentionBlock(nn.Module):
    """Single-head attention without an output projection: q, k and v linears of one input,
    ``q @ k^T * scale``, softmax, ``@ v``."""

    def __init__(self, dim: int = 2 * WIDTH) -> None:
        super().__init__()
        self.q = nn.Linear(dim, dim)
        self.k = nn.Linear(dim, dim)
        self.v = nn.Linear(dim, dim)
        self.scale = 1 / math.sqrt(dim)

    def forward(self, x: Tensor) -> Tensor:
        q, k, v = self.q(x), self.k(x), self.v(x)
        return torch.softmax(q @ k.transpose(-2, -1) * self.scale, dim=-1) @ v


def attention_block():
    """``AttentionBlock`` on one sequence of 64 tokens, 128 wide (2-D): main divides each
    linear's N among the cores, so its slices of the shared input cover half of them, and
    main does not clone that input (one kernel of 14 OpSpecs, issue 55 point 10)."""
    torch.manual_seed(SEED)
    return AttentionBlock(), (torch.randn(WIDTH, 2 * WIDTH),)


#: name -> what the model is there to cover on torch-spyre main
SPYRE_ZOO = {
    "gated_mlp": "RMSNorm (rsqrt, mean) and a SwiGLU MLP: three matmuls, pointwise ops between",
    "softmax_attention": "batched matmuls, a transpose, softmax (a Spyre clone is inserted)",
    "layernorm_block": "LayerNorm (Spyre's exx2 / layernormscale / layernormnorm) and GELU",
    "shared_block": "one submodule called twice",
    "residual_stack": "a loop of residual blocks: many nodes in one fused kernel",
    "tied_embedding": "an embedding gather (indirect access) and a tied output projection",
    "layernorm_gated_mlp": "LayerNorm, then a SiLU-gated MLP and a residual",
    "gelu_residual": "a GELU MLP with a residual: GELU reads a matmul's result",
    "gelu_mlp_batched": "the GELU MLP on [2, 8, 64], hidden 256: main copies the first matmul's result (LX relayout)",
    "single_head_attention": "softmax attention on a 2-D input: one input read by three projections",
    "gelu_mlp_wide": "the GELU MLP on [4, 16, 64], hidden 512: main copies the first matmul's and the GELU's results",
    "attention_block": "q, k, v linears of one [64, 128] input, softmax: main splits N, so no clone of the input",
}


def granite():
    """Granite (transformers' own code) at Spyre's width: 2 heads of 64, one KV head,
    a sequence of 64 tokens, two layers, RoPE, RMSNorm, SwiGLU, Granite's multipliers."""
    import transformers

    torch.manual_seed(SEED)
    config = transformers.GraniteConfig(
        vocab_size=2 * WIDTH,
        hidden_size=2 * WIDTH,
        intermediate_size=4 * WIDTH,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=WIDTH,
        use_cache=False,
        attn_implementation="sdpa",
        embedding_multiplier=12.0,
        residual_multiplier=0.22,
        attention_multiplier=0.0078125,
        logits_scaling=8.0,
    )
    return transformers.GraniteForCausalLM(config).eval(), (torch.randint(0, 2 * WIDTH, (1, WIDTH)),)


def llama():
    """Llama (transformers' own code) at Spyre's width: 2 heads of 64, one KV head, a
    sequence of 64 tokens, one layer, RoPE, RMSNorm, SwiGLU."""
    import transformers

    torch.manual_seed(SEED)
    config = transformers.LlamaConfig(
        vocab_size=2 * WIDTH,
        hidden_size=2 * WIDTH,
        intermediate_size=4 * WIDTH,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=WIDTH,
        use_cache=False,
        attn_implementation="sdpa",
    )
    return transformers.LlamaForCausalLM(config).eval(), (torch.randint(0, 2 * WIDTH, (1, WIDTH)),)
