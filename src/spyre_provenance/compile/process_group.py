"""One rank of ``compile MODEL --ranks N``: a process torchrun started, joining its group.

The parent (``compile.ranks``) starts the ranks through torchrun's launcher, which sets
torch's usual variables (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR``,
``MASTER_PORT``, ``TORCHELASTIC_USE_AGENT_STORE``). A ``compile --ranks N`` in such a process
is that one rank (``started_by_torchrun``). It joins with ``env://``: under torchrun the
ranks are clients of the store torchrun's agent hosts in the parent, so rank 0 dying does not
take the rendezvous with it.

torch names its TORCH_TRACE log ``dedicated_log_torch_trace_rank_<r>_*.log`` and stamps
``"rank": r`` on every record once the group exists (``torch._logging._internal``), so a
rank joins before the model loads and before anything is compiled: its whole log is
that rank's.

torch is imported inside the functions: this module loads without it.
"""

from __future__ import annotations

import contextlib
import datetime
import logging
import os
import signal
import sys
import threading
import time

#: Bounds every collective and the rendezvous: a rank whose peer hangs gives up after this.
DEFAULT_TIMEOUT_S = 300.0
ENV_TIMEOUT = "SPYRE_PROVENANCE_RANK_TIMEOUT"
#: Where a rank notes the moment it failed (``compile.ranks`` sets it per rank).
ENV_FAILED_AT = "SPYRE_PROVENANCE_RANK_FAILED_AT"

_joined = False  # this process joined a group: it ends through ``end``


def timeout_seconds() -> float:
    """The process-group timeout: ``$SPYRE_PROVENANCE_RANK_TIMEOUT`` seconds, else 300."""
    text = os.environ.get(ENV_TIMEOUT, "")
    try:
        value = float(text) if text else DEFAULT_TIMEOUT_S
    except ValueError:
        value = DEFAULT_TIMEOUT_S
    return value if value > 0 else DEFAULT_TIMEOUT_S


def started_by_torchrun() -> tuple[int, int] | None:
    """This process's ``(RANK, WORLD_SIZE)`` when a launcher of torch's started it (torchrun
    sets both), else None."""
    rank, world_size = os.environ.get("RANK", ""), os.environ.get("WORLD_SIZE", "")
    if not rank.isdigit() or not world_size.isdigit() or int(rank) >= int(world_size):
        return None
    return int(rank), int(world_size)


def finish_when_stopped() -> None:
    """A rank finishes what it is doing when torchrun stops it: once one rank failed,
    torchrun sends every other rank's process group SIGTERM, and SIGKILL 30 s later. SIGTERM
    is ignored from here on, by the rank and the compiler processes it starts (an ignored
    signal stays ignored across exec), so a rank that is compiling finishes and writes its
    artifacts, and one whose collective then fails (its peer gone) says so and exits 2, as
    before any launcher stopped it. For the rest of the process: a rank that failed on its
    own at the moment torchrun stopped it still prints why. SIGKILL bounds a rank that hangs;
    SIGINT (torchrun passes on the user's Ctrl-C) still interrupts."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, signal.SIG_IGN)


def join(rank: int, world_size: int) -> None:
    """Join the gloo process group torchrun's variables describe (``env://``)."""
    import torch.distributed as dist

    global _joined
    timeout = datetime.timedelta(seconds=timeout_seconds())
    dist.init_process_group("gloo", init_method="env://", rank=rank, world_size=world_size, timeout=timeout)
    _joined = True


def leave() -> None:
    """Leave the process group, if this process joined one."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def note_failure() -> None:
    """Note, in the file ``$SPYRE_PROVENANCE_RANK_FAILED_AT`` names, the moment this rank
    failed (nanoseconds since the epoch), before it leaves the group. torchrun stamps a
    failure with the whole second it saw it, and sees the rank that failed on its own and
    the peer whose collective then found it gone in one look as often as not; this rank's
    connections close only when it leaves, so a peer that fails because of it notes a later
    moment. Never raises: the rank's own error is what it reports."""
    path = os.environ.get(ENV_FAILED_AT, "")
    if path:
        with contextlib.suppress(OSError), open(path, "w", encoding="ascii") as file:
            file.write(str(time.time_ns()))


def end(code: int) -> None:
    """End a process that joined a group with ``code``, once its output is flushed, without
    the interpreter's finalization: there, gloo's threads still holding work of a
    collective that failed (its peer gone) can abort the process (SIGABRT, "terminate
    called without an active exception") after it printed why it exits 2. Its artifacts
    are written and its log closed by then. A process that joined no group returns."""
    if not _joined:
        return
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)
