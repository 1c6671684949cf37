"""One rank of ``compile MODEL --ranks N``: joining and leaving the process group.

The parent (``compile.ranks``) hosts the rendezvous store and starts one process per rank with
torch's usual variables (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR``,
``MASTER_PORT``). Each rank joins as a client of that store, not as its host: with
``env://`` rank 0 would host it, and rank 0 dying would take the rendezvous with it.

torch names its TORCH_TRACE log ``dedicated_log_torch_trace_rank_<r>_*.log`` and stamps
``"rank": r`` on every record once the group exists (``torch._logging._internal``), so a
rank joins before the model loads and before anything is compiled: its whole log is
that rank's.

torch is imported inside the functions: this module loads without it.
"""

from __future__ import annotations

import datetime
import os

#: Bounds every collective and the rendezvous: a rank whose peer hangs gives up after this.
DEFAULT_TIMEOUT_S = 300.0
ENV_TIMEOUT = "SPYRE_PROVENANCE_RANK_TIMEOUT"


def timeout_seconds() -> float:
    """The process-group timeout: ``$SPYRE_PROVENANCE_RANK_TIMEOUT`` seconds, else 300."""
    text = os.environ.get(ENV_TIMEOUT, "")
    try:
        value = float(text) if text else DEFAULT_TIMEOUT_S
    except ValueError:
        value = DEFAULT_TIMEOUT_S
    return value if value > 0 else DEFAULT_TIMEOUT_S


def join(rank: int, world_size: int) -> None:
    """Join the gloo process group of the parent's store (``MASTER_ADDR:MASTER_PORT``)."""
    import torch.distributed as dist

    timeout = datetime.timedelta(seconds=timeout_seconds())
    store = dist.TCPStore(
        os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), world_size, is_master=False, timeout=timeout
    )
    dist.init_process_group("gloo", store=store, rank=rank, world_size=world_size, timeout=timeout)


def leave() -> None:
    """Leave the process group, if this process joined one."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()
