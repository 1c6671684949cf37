"""The model zoo: small models beyond ``examples.py``, each a ``PATH.py:FACTORY`` as a user
would hand it to ``spyre-provenance compile``.

Every factory returns ``(module, example_inputs)`` from a fixed seed. Each covers a shape of
compiled code the five built-in examples do not: attention, tied weights, convolution with
BatchNorm and pooling, in-place and index ops, a submodule called twice, a long residual
loop, multi-output reductions, a graph break, dynamic shapes, mixed dtypes, a model without
parameters. The tests compile each one on the reference backend, in inference and in
training (``tests/models/test_zoo.py``); ``ZOO`` lists them with what each is for.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

SEED = 0


class Attention(nn.Module):
    """Multi-head self-attention through ``scaled_dot_product_attention``."""

    def __init__(self, dim: int = 32, heads: int = 4) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, x: Tensor) -> Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(y.transpose(1, 2).reshape(b, t, d))


def attention():
    torch.manual_seed(SEED)
    return Attention(), (torch.randn(2, 8, 32),)


class TiedEmbedding(nn.Module):
    """Token embedding whose weight is also the output projection's (weight tying)."""

    def __init__(self, vocab: int = 64, dim: int = 16) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)
        self.head.weight = self.embed.weight

    def forward(self, ids: Tensor) -> Tensor:
        return self.head(self.norm(self.embed(ids)))


def tied_embedding():
    torch.manual_seed(SEED)
    return TiedEmbedding(), (torch.randint(0, 64, (2, 6)),)


class ConvNet(nn.Module):
    """Conv2d -> BatchNorm2d -> ReLU -> MaxPool2d, twice, then a Linear head."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(8)
        self.pool = nn.MaxPool2d(2)
        self.head = nn.Linear(8 * 2 * 2, 10)

    def forward(self, x: Tensor) -> Tensor:
        h = self.pool(torch.relu(self.bn1(self.conv1(x))))
        h = self.pool(torch.relu(self.bn2(self.conv2(h))))
        return self.head(h.flatten(1))


def convnet():
    torch.manual_seed(SEED)
    return ConvNet(), (torch.randn(2, 3, 8, 8),)


class InplaceIndex(nn.Module):
    """In-place and index ops: index_put_, masked_fill_, scatter_add, slicing, cat."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(16, 16)

    def forward(self, x: Tensor, rows: Tensor) -> Tensor:
        h = self.proj(x)
        out = torch.zeros_like(h)
        out.index_put_((rows,), h[rows])
        out.masked_fill_(out > 0.5, 0.5)
        groups = (rows % 4).view(-1, 1).expand(-1, 16)
        pooled = torch.zeros(4, 16).scatter_add(0, groups, h[rows])
        return torch.cat([out[:, :8], h[:, 8:] + pooled.sum(0)[8:]], dim=1)


def inplace_index():
    torch.manual_seed(SEED)
    return InplaceIndex(), (torch.randn(6, 16), torch.tensor([0, 2, 5]))


class Block(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x: Tensor) -> Tensor:
        return torch.tanh(self.fc(x))


class SharedBlock(nn.Module):
    """One submodule called twice: the same kernel at two call sites. A Spyre backend makes
    one kernel of each run of nodes (torch-spyre main's ``spyre_fuse_nodes``), so the two
    calls are kept apart by a fallback (``sort``, an extern call): each is a run of its own."""

    def __init__(self) -> None:
        super().__init__()
        self.block = Block(24)

    def forward(self, x: Tensor) -> Tensor:
        return self.block(torch.sort(self.block(x), dim=-1).values)


def shared_block():
    torch.manual_seed(SEED)
    return SharedBlock(), (torch.randn(4, 24),)


class ResidualStack(nn.Module):
    """A loop of pre-norm residual blocks: more than 50 post-grad nodes."""

    def __init__(self, dim: int = 16, depth: int = 6) -> None:
        super().__init__()
        self.norms = nn.ModuleList(nn.LayerNorm(dim) for _ in range(depth))
        self.fcs = nn.ModuleList(nn.Linear(dim, dim) for _ in range(depth))

    def forward(self, x: Tensor) -> Tensor:
        for norm, fc in zip(self.norms, self.fcs, strict=True):
            x = x + F.gelu(fc(norm(x)))
        return x


def residual_stack():
    torch.manual_seed(SEED)
    return ResidualStack(), (torch.randn(2, 4, 16),)


class MultiReduce(nn.Module):
    """Reductions with several outputs: var_mean, max with indices, and a shared sum."""

    def __init__(self) -> None:
        super().__init__()
        self.scale = nn.Parameter(torch.ones(12))

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        h = x * self.scale
        var, mean = torch.var_mean(h, dim=-1, keepdim=True)
        peak, where = h.max(dim=-1)
        normed = (h - mean) / torch.sqrt(var + 1e-5)
        return normed, peak + where.to(h.dtype), h.sum(dim=0)


def multi_reduce():
    torch.manual_seed(SEED)
    return MultiReduce(), (torch.randn(5, 12),)


class ItemBreak(nn.Module):
    """A graph break on a data-dependent scalar (``.item()``): two graphs."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(12, 12)
        self.fc2 = nn.Linear(12, 6)

    def forward(self, x: Tensor) -> Tensor:
        h = torch.relu(self.fc1(x))
        scale = float(h.mean().item()) + 1.0
        return self.fc2(h) * scale


def item_break():
    torch.manual_seed(SEED)
    return ItemBreak(), (torch.randn(3, 12),)


class Dynamic(nn.Module):
    """Symbolic batch size (the input's first dimension is marked dynamic)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(16, 8)
        self.norm = nn.LayerNorm(8)

    def forward(self, x: Tensor) -> Tensor:
        return torch.softmax(self.norm(self.fc(x)), dim=-1)


def dynamic():
    torch.manual_seed(SEED)
    x = torch.randn(6, 16)
    torch._dynamo.mark_dynamic(x, 0)
    return Dynamic(), (x,)


class MixedDtypes(nn.Module):
    """Half-precision weights, a float32 norm, int64 indices and a bool mask in one graph."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(16, 16).to(torch.float16)
        self.norm = nn.LayerNorm(16)

    def forward(self, x: Tensor, index: Tensor) -> Tensor:
        h = self.fc(x.to(torch.float16)).to(torch.float32)
        h = self.norm(h)
        picked = torch.gather(h, 1, index)
        return torch.where(picked > 0, picked, picked * 0.1).to(torch.float16)


def mixed_dtypes():
    torch.manual_seed(SEED)
    return MixedDtypes(), (torch.randn(4, 16), torch.randint(0, 16, (4, 5)))


class ParamFree(nn.Module):
    """No parameters at all: training differentiates with respect to the input."""

    def forward(self, x: Tensor) -> Tensor:
        return torch.sin(x) * torch.cos(x) + x.sum(dim=-1, keepdim=True)


def param_free():
    torch.manual_seed(SEED)
    return ParamFree(), (torch.randn(4, 8, requires_grad=True),)


class GatedMLP(nn.Module):
    """RMSNorm then a SwiGLU MLP (gate, up, down projections)."""

    def __init__(self, dim: int = 16, hidden: int = 32) -> None:
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
    return GatedMLP(), (torch.randn(3, 16),)


class ConvGroupNorm(nn.Module):
    """Conv1d with GroupNorm, average pooling and a depthwise convolution."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv1d(4, 8, 3, padding=1)
        self.norm = nn.GroupNorm(2, 8)
        self.depthwise = nn.Conv1d(8, 8, 3, padding=1, groups=8)

    def forward(self, x: Tensor) -> Tensor:
        h = F.avg_pool1d(F.silu(self.norm(self.conv(x))), 2)
        return self.depthwise(h).mean(dim=-1)


def conv_groupnorm():
    torch.manual_seed(SEED)
    return ConvGroupNorm(), (torch.randn(2, 4, 16),)


class Recompiled(nn.Module):
    """A block called with three input shapes: a static compile, then recompiles."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(16, 16)

    def forward(self, x: Tensor) -> Tensor:
        return torch.softmax(torch.relu(self.fc(x)), dim=-1)


def recompiles():
    """Called three times (a list of input tuples): batch 2 compiles statically (0/0), batch
    3 recompiles with a dynamic batch (0/1, automatic dynamic shapes), and a longer
    sequence marked dynamic recompiles once more (0/2, ``mark_dynamic``)."""
    torch.manual_seed(SEED)
    longer = torch.randn(3, 6, 16)
    torch._dynamo.mark_dynamic(longer, 1)
    return Recompiled(), [(torch.randn(2, 4, 16),), (torch.randn(3, 4, 16),), (longer,)]


class DepthwiseDropout(nn.Module):
    """A depthwise convolution with BatchNorm, then dropout twice: in place (Inductor's
    ``bernoulli_`` fallback) and not (its own random kernel, seeded by a seed kernel)."""

    def __init__(self) -> None:
        super().__init__()
        self.depthwise = nn.Conv2d(4, 4, 3, padding=1, groups=4)
        self.norm = nn.BatchNorm2d(4)
        self.drop_inplace = nn.Dropout(0.2, inplace=True)
        self.drop = nn.Dropout(0.1)
        self.head = nn.Linear(4, 3)

    def forward(self, x: Tensor) -> Tensor:
        h = self.drop_inplace(torch.relu(self.norm(self.depthwise(x))).mean(dim=(2, 3)))
        return self.head(self.drop(h))


def dropout():
    torch.manual_seed(SEED)
    return DepthwiseDropout(), (torch.randn(4, 4, 6, 6),)


class CheckpointBlock(nn.Module):
    """A pre-norm MLP block with a residual."""

    def __init__(self, dim: int = 16) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.up = nn.Linear(dim, 2 * dim)
        self.down = nn.Linear(2 * dim, dim)

    def forward(self, x: Tensor) -> Tensor:
        h = F.gelu(self.up(self.norm(x)))
        return x + self.down(h)


class Checkpointed(nn.Module):
    """Two blocks under ``torch.utils.checkpoint``: Dynamo traces each into a subgraph
    (``wrap_body_<i>``) held by a ``tag_activation_checkpoint`` node, so the pre-grad
    graph's top level holds only the two ops and the head."""

    def __init__(self, dim: int = 16) -> None:
        super().__init__()
        self.blocks = nn.ModuleList([CheckpointBlock(dim), CheckpointBlock(dim)])
        self.head = nn.Linear(dim, 8)

    def forward(self, x: Tensor) -> Tensor:
        for block in self.blocks:
            x = torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False)
        return self.head(x)


def checkpointed():
    torch.manual_seed(SEED)
    return Checkpointed(), (torch.randn(2, 4, 16),)


class Branches(nn.Module):
    """``torch.cond`` on a data-dependent predicate: each branch is a subgraph whose node
    names (``linear``, ``mm``, ``add``) repeat the top level's, and whose kernels are called
    from functions the wrapper writes before ``call``."""

    def __init__(self, dim: int = 16) -> None:
        super().__init__()
        self.inp = nn.Linear(dim, dim)
        self.a = nn.Linear(dim, dim)
        self.b = nn.Linear(dim, dim)

    def forward(self, x: Tensor) -> Tensor:
        h = self.inp(x)
        return torch.cond(h.sum() > 0, lambda v: self.a(v).relu(), lambda v: self.b(v).sigmoid(), (h,)) + h


def branches():
    torch.manual_seed(SEED)
    return Branches(), (torch.randn(4, 16),)


class Loop(nn.Module):
    """``while_loop``: a body subgraph (``while_loop_body_graph_0``) run three times, whose
    node names (``add``, ``mm``) repeat the top level's; the loop and its body's kernels are
    called through functions the wrapper writes before ``call``."""

    def __init__(self, dim: int = 16) -> None:
        super().__init__()
        self.inp = nn.Linear(dim, dim)
        self.w = nn.Parameter(torch.randn(dim, dim) * 0.1)

    def forward(self, x: Tensor) -> Tensor:
        h = self.inp(x)

        def cond_fn(i: Tensor, v: Tensor) -> Tensor:
            return i < 3

        def body_fn(i: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
            return i + 1, torch.tanh(v @ self.w) + v

        _, out = torch._higher_order_ops.while_loop(cond_fn, body_fn, (torch.tensor(0), h))
        return out + h


def loop():
    torch.manual_seed(SEED)
    return Loop(), (torch.randn(4, 16),)


@torch.compiler.nested_compile_region
def _region(v: Tensor, weight: Tensor, bias: Tensor) -> Tensor:
    return torch.relu(F.linear(v, weight, bias))


class NestedRegion(nn.Module):
    """``torch.compiler.nested_compile_region``: one region called twice, traced once into
    a subgraph two ``invoke_subgraph`` nodes hold."""

    def __init__(self, dim: int = 16) -> None:
        super().__init__()
        self.a = nn.Linear(dim, dim)
        self.b = nn.Linear(dim, dim)

    def forward(self, x: Tensor) -> Tensor:
        h = _region(x, self.a.weight, self.a.bias)
        return _region(h, self.b.weight, self.b.bias) + x


def nested_region():
    torch.manual_seed(SEED)
    return NestedRegion(), (torch.randn(4, 16),)


class FlexAttention(nn.Module):
    """``flex_attention`` with a score function (a causal relative bias): Dynamo traces the
    score function into a subgraph (``sdpa_score0``) the ``flex_attention`` node holds. Not
    in ``ZOO``: the reference backend cannot compile it (its template kernel is not callable
    as a SpyreKernel); stock Inductor can."""

    def __init__(self, dim: int = 16, heads: int = 2) -> None:
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)
        self.heads = heads

    def forward(self, x: Tensor) -> Tensor:
        from torch.nn.attention.flex_attention import flex_attention

        b, s, d = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)

        def score_mod(score: Tensor, batch: Tensor, head: Tensor, q_idx: Tensor, kv_idx: Tensor) -> Tensor:
            return torch.where(q_idx >= kv_idx, score + (q_idx - kv_idx) * 0.1, -float("inf"))

        return flex_attention(q, k, v, score_mod=score_mod).transpose(1, 2).reshape(b, s, d)


def flex_attention():
    torch.manual_seed(SEED)
    return FlexAttention(), (torch.randn(1, 16, 16),)


class Router(nn.Module):
    """A Mixture-of-Experts router: softmax, top-k, then an in-place renormalizing divide
    (its backward nodes are gradients of three lines in a row)."""

    def __init__(self, dim: int = 16, experts: int = 4, k: int = 2) -> None:
        super().__init__()
        self.gate = nn.Linear(dim, experts, bias=False)
        self.k = k

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        probs = F.softmax(self.gate(x), dim=-1, dtype=torch.float)
        weights, chosen = torch.topk(probs, self.k, dim=-1)
        weights /= weights.sum(dim=-1, keepdim=True)
        return weights, chosen


def router():
    torch.manual_seed(SEED)
    return Router(), (torch.randn(2, 5, 16),)


class MoEDecoder(nn.Module):
    """A one-layer decoder: embedding, RMSNorm, causal attention, and a Mixture-of-Experts
    MLP whose router picks the top 2 of 4 experts per token (computed densely, combined by
    the scattered router weights), then a final norm and the head."""

    def __init__(self, vocab: int = 32, dim: int = 16, experts: int = 4) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.attn_norm = nn.RMSNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.proj = nn.Linear(dim, dim, bias=False)
        self.moe_norm = nn.RMSNorm(dim)
        self.router = Router(dim, experts, 2)
        self.up = nn.Parameter(torch.randn(experts, dim, 2 * dim) * 0.1)
        self.down = nn.Parameter(torch.randn(experts, 2 * dim, dim) * 0.1)
        self.norm = nn.RMSNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)

    def forward(self, ids: Tensor) -> Tensor:
        x = self.embed(ids)
        q, k, v = self.qkv(self.attn_norm(x)).chunk(3, dim=-1)
        x = x + self.proj(F.scaled_dot_product_attention(q, k, v, is_causal=True))
        h = self.moe_norm(x)
        weights, chosen = self.router(h)
        mix = torch.zeros(*h.shape[:-1], self.up.shape[0]).scatter(-1, chosen, weights)
        experts = torch.einsum("btd,edh->bteh", h, self.up)
        out = torch.einsum("bteh,ehd->bted", F.silu(experts), self.down)
        x = x + (out * mix.unsqueeze(-1)).sum(dim=-2)
        return self.head(self.norm(x))


def moe_decoder():
    torch.manual_seed(SEED)
    return MoEDecoder(), (torch.randint(0, 32, (2, 6)),)


class CachedAttention(nn.Module):
    """One decode step with a KV cache: the new token's key and value are written into the
    cache buffers in place (index_copy_), then the query attends over the cache."""

    def __init__(self, dim: int = 16, length: int = 8) -> None:
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)
        self.register_buffer("keys", torch.zeros(2, length, dim))
        self.register_buffer("values", torch.zeros(2, length, dim))

    def forward(self, x: Tensor, position: Tensor) -> Tensor:
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        self.keys.index_copy_(1, position, k)
        self.values.index_copy_(1, position, v)
        y = F.scaled_dot_product_attention(q, self.keys, self.values)
        return self.out(y)


def kv_decode():
    torch.manual_seed(SEED)
    return CachedAttention(), (torch.randn(2, 1, 16), torch.tensor([3]))


class LoRALinear(nn.Module):
    """A frozen linear layer with a trainable low-rank update (LoRA): base(x) + B(A(x)) * s."""

    def __init__(self, dim: int = 16, rank: int = 4) -> None:
        super().__init__()
        self.base = nn.Linear(dim, dim)
        self.base.requires_grad_(False)
        self.lora_a = nn.Linear(dim, rank, bias=False)
        self.lora_b = nn.Linear(rank, dim, bias=False)
        self.scale = 0.5

    def forward(self, x: Tensor) -> Tensor:
        return self.base(x) + self.lora_b(self.lora_a(x)) * self.scale


class LoRA(nn.Module):
    def __init__(self, dim: int = 16) -> None:
        super().__init__()
        self.q = LoRALinear(dim)
        self.v = LoRALinear(dim)

    def forward(self, x: Tensor) -> Tensor:
        return torch.tanh(self.q(x)) * self.v(x)


def lora():
    torch.manual_seed(SEED)
    return LoRA(), (torch.randn(2, 4, 16),)


#: name -> what the model is there to cover (the factory is the module attribute of that name)
ZOO = {
    "attention": "scaled_dot_product_attention, views, chunk",
    "tied_embedding": "embedding, layer norm, a weight shared with the head",
    "convnet": "convolution, BatchNorm (running stats mutated in training), ReLU, max pooling",
    "inplace_index": "index_put_, masked_fill_, scatter_add, slicing, cat",
    "shared_block": "one submodule called twice, a fallback between: one kernel, two call sites",
    "residual_stack": "a loop of residual blocks, more than 50 post-grad nodes",
    "multi_reduce": "var_mean, max with indices, sums: reductions with several outputs",
    "item_break": "a graph break on .item(): two graphs",
    "dynamic": "a symbolic batch dimension (dynamic shapes)",
    "mixed_dtypes": "float16, float32, int64 and bool in one graph",
    "param_free": "no parameters: training needs an input that requires grad",
    "gated_mlp": "RMSNorm and a SwiGLU MLP",
    "conv_groupnorm": "conv1d, group norm, average pooling, depthwise convolution",
    "recompiles": "three calls with new shapes: compile ids 0/0, 0/1 (automatic dynamic), 0/2 (mark_dynamic)",
    "dropout": "dropout in place and not (random numbers), a depthwise convolution, BatchNorm write-backs",
    "checkpointed": "torch.utils.checkpoint: blocks traced into subgraphs a higher-order op holds",
    "branches": "torch.cond: kernels called inside branch functions, node names repeating in branches",
    "router": "a MoE router: softmax, top-k, an in-place divide",
    "moe_decoder": "a small Mixture-of-Experts decoder: attention, RMSNorm, top-2 of 4 experts",
    "kv_decode": "a decode step writing a KV cache in place (index_copy_ on buffers)",
    "lora": "LoRA: frozen base layers with trainable low-rank updates",
    "loop": "torch while_loop: a body subgraph run three times, node names repeating the top level's",
    "nested_region": "torch.compiler.nested_compile_region: one subgraph two invoke_subgraph nodes hold",
}

#: name -> why the zoo compiles it in inference only
INFERENCE_ONLY = {
    "branches": "the reference backend's backward of torch.cond does not match eager (max abs error 4.95, where"
    " stock Inductor matches): each backward branch reuses its tangent input in place (Inductor's"
    " 'buf5 = arg5_1  # reuse') and the reference's fused kernel writes it (an in_out_ptr), while the outer"
    " graph reads tangents_1 again after the cond: a backend defect, outside provenance; the forward branches"
    " are covered",
    "loop": "torch 2.13's own while_loop backward fails (WhileLoopAutogradOpBackward, then a graph break on"
    " aten._local_scalar_dense), on stock Inductor as well",
}
