"""What this process runs with: the cyclic GC paused for a while, and whether torch is there.

``gc_paused``: building or decoding millions of fresh containers (a 100 MB mapping) would
make the cyclic GC rescan them all, for nothing: they hold no cycles.

Pure: imports nothing of ours.
"""

from __future__ import annotations

import contextlib
import gc
import importlib.util
from collections.abc import Iterator


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def torch_missing() -> bool:
    """Whether torch cannot be imported here (found without importing it: that takes seconds)."""
    try:
        return importlib.util.find_spec("torch") is None
    except (ImportError, ValueError):  # a broken torch package, torch in sys.modules as None, no __spec__
        return True
