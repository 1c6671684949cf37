"""Models built of torch's own modules only (issue 56 point 7): no frame of their compiled
code is the user's, so their kernels are named by module path (``model.modules``). Each is a
``PATH.py:FACTORY`` as for ``compile``."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

SEED = 0


def transformer_encoder():
    """``nn.TransformerEncoder`` of two ``nn.TransformerEncoderLayer`` (with
    ``nn.MultiheadAttention``). SiLU keeps torch off its inference fast path, which is one
    fused op per layer (``aten._transformer_encoder_layer_fwd``): the layers' modules run."""
    torch.manual_seed(SEED)
    layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, activation=F.silu, batch_first=True)
    return nn.TransformerEncoder(layer, 2, enable_nested_tensor=False), (torch.randn(2, 5, 16),)


def ddp_sequential():
    """An ``nn.Sequential`` of ``nn.Linear`` and ``nn.GELU`` wrapped in DDP, in a gloo group of
    one process (joined here, in memory, unless the process is in one already): the compile
    traces DDP's forward, so every frame is torch's."""
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    if not dist.is_initialized():
        dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    torch.manual_seed(SEED)
    model = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 4))
    return DistributedDataParallel(torch.compile(model)), (torch.randn(4, 8),)


def _sequential(activation: nn.Module):
    torch.manual_seed(SEED)
    model = nn.Sequential(nn.Linear(8, 16), activation, nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 4))
    return model, (torch.randn(4, 8),)


def sequential_gelu():
    """An ``nn.Sequential`` of ``nn.Linear``, ``nn.GELU`` (module ``1``) and ``nn.Tanh``: the
    compiled region is ``Sequential.forward``, torch's, so no frame is the user's."""
    return _sequential(nn.GELU())


def sequential_relu():
    """``sequential_gelu`` edited in one module: ``1`` is an ``nn.ReLU``."""
    return _sequential(nn.ReLU())
