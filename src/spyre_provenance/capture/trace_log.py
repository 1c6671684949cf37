"""torch's structured trace log (``TORCH_TRACE``) as one compile uses it: pointed at the
compile's trace folder (``point_at``), claimed under the model's name when the compile is
done (``claim``), silenced around a compile that must log nothing (``off``); and Inductor's
C++ kernels made profiler events for ``compile --profile`` (``kernel_profile_on``).

These are the compile's only touches of torch's logging and config internals
(``torch._logging._internal.LOG_TRACE_HANDLER``, the ``torch.__trace`` logger,
``torch._inductor.config``): ``capture/`` is the layer that touches torch's internals, and
``compile/`` calls these.

Between compiles the trace handler is parked (``_PARKED``): ``claim`` closes its stream and
takes it off the logger, so a later compile in this process (the Python API, a notebook, a
test session) never lands in a finished out folder's log; ``point_at`` puts it back.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from spyre_provenance.base.errors import UnusableInput
from spyre_provenance.base.files import give_plain_mode
from spyre_provenance.base.patches import Patches

#: the logger torch writes its structured trace records to
_TRACE_LOGGER = "torch.__trace"
#: torch's trace handler while no compile of ours is under way (``claim``)
_PARKED: list[Any] = []
#: Inductor's C++ kernel profiling, before torch is imported (``kernel_profile_on``)
_KERNEL_PROFILE_ENV = "TORCHINDUCTOR_CPP_ENABLE_KERNEL_PROFILE"


def point_at(trace_dir: Path) -> None:
    """Make torch's structured trace go to ``trace_dir`` for this compile.

    Before torch is imported, ``TORCH_TRACE`` does it. In a process that imported torch
    with a trace handler already (a second compile in one process: the Python API, a test
    session), the handler's open log is closed and it opens a new one in ``trace_dir`` on
    its next record, as it does for its first.
    """
    os.environ["TORCH_TRACE"] = str(trace_dir)
    if "torch" not in sys.modules:
        return
    from torch._logging import _internal

    handler = _internal.LOG_TRACE_HANDLER
    close = getattr(handler, "_close_stream", None)
    trace_logger = logging.getLogger(_TRACE_LOGGER)
    if handler is not None and handler in _PARKED:  # set aside by the previous compile's claim
        _PARKED.remove(handler)
        trace_logger.addHandler(handler)
    if handler is None or close is None or handler not in trace_logger.handlers:
        raise UnusableInput("TORCH_TRACE", "torch was imported before the trace folder was set")
    handler.acquire()
    try:
        close()
        handler.root_dir = str(trace_dir)
    finally:
        handler.release()


def claim(target: Path) -> Path | None:
    """Flush this process's TORCH_TRACE log and rename it to ``target``; None if torch
    wrote none. The log is found through torch's trace handler (its stream's path), never
    by globbing the folder, which other runs may be writing into."""
    from torch._logging import _internal

    for handler in logging.getLogger(_TRACE_LOGGER).handlers:
        handler.flush()
    handler = _internal.LOG_TRACE_HANDLER
    stream = getattr(handler, "stream", None)
    path = getattr(handler, "_stream_path", None) or getattr(stream, "name", None)
    if stream is None or not isinstance(path, str) or not os.path.isfile(path):
        return None
    give_plain_mode(path)  # torch made it with tempfile, 0600: a compile's files are the umask's
    os.replace(path, target)
    # The log is this compile's, whole: torch would keep writing to the renamed file, so a
    # later compile in this process would land in a finished out folder's log. Its stream
    # ends here, and the handler is set aside until the next compile points it at its own
    # folder (``point_at``); meanwhile torch's structured trace has no handler, as in a
    # process without TORCH_TRACE.
    handler.acquire()
    try:
        handler._close_stream()
    finally:
        handler.release()
    logging.getLogger(_TRACE_LOGGER).removeHandler(handler)
    _PARKED.append(handler)
    return target


@contextlib.contextmanager
def off() -> Iterator[None]:
    """No TORCH_TRACE records while inside: torch logs structured records only when its
    trace logger has handlers, so they are set aside (not closed) and put back."""
    with handlers_aside(lambda handler: True):
        yield


@contextlib.contextmanager
def handlers_aside(which: Callable[[logging.Handler], bool]) -> Iterator[None]:
    """The trace logger's handlers that ``which`` picks, taken off while inside and put
    back after (not closed): ``off`` takes them all, the pytest fixture only pytest's."""
    logger = logging.getLogger(_TRACE_LOGGER)
    handlers = [handler for handler in logger.handlers if which(handler)]
    for handler in handlers:
        logger.removeHandler(handler)
    try:
        yield
    finally:
        for handler in handlers:
            logger.addHandler(handler)


def kernel_profile_on(patches: Patches) -> None:
    """Inductor's C++ kernels as profiler events (``compile --profile``), undone with
    ``patches``. Before torch is imported the environment variable sets it (and ``compile``
    must not import torch before pointing TORCH_TRACE); after, the config value."""
    if "torch" in sys.modules:
        import torch._inductor.config as inductor_config

        patches.setattr(inductor_config.cpp, "enable_kernel_profile", True)
    else:
        patches.setitem(os.environ, _KERNEL_PROFILE_ENV, "1")
