"""A user's DDP job for torchrun (gloo): each rank compiles the model and takes one step."""

import sys

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
# compiled, then wrapped: DDP's own forward stays eager (its hooks graph-break) and calls the
# compiled module
model = DistributedDataParallel(torch.compile(nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))))
x = torch.randn(4, 8) + rank
loss = model(x).square().mean()
loss.backward()
# one write per line: both ranks share torchrun's stdout, and an unbuffered stream
# (PYTHONUNBUFFERED=1, as CI's environment sets it) writes print's text and its newline apart,
# so two ranks' lines could interleave ("rank 1 loss ...rank 0 loss ...", then two newlines)
sys.stdout.write(f"rank {rank} loss {loss.item():.6f}\n")
sys.stdout.flush()
dist.destroy_process_group()
