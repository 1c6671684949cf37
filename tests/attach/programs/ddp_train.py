"""A user's DDP job for torchrun (gloo): each rank compiles the model and takes one step."""

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
print(f"rank {rank} loss {loss.item():.6f}", flush=True)
dist.destroy_process_group()
