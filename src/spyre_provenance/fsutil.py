"""Atomic file writes: a reader sees the old file or the new one, never a torn one."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

TMP_PREFIX = ".spyre-provenance-tmp-"


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path`` through a temporary file in the same folder + rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=TMP_PREFIX, suffix=".part", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return path


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))


def remove_stale_temporaries(folder: str | os.PathLike[str]) -> int:
    """Delete temporaries a killed writer left behind; returns how many."""
    removed = 0
    for tmp in Path(folder).rglob(f"{TMP_PREFIX}*.part"):
        try:
            tmp.unlink()
            removed += 1
        except FileNotFoundError:
            pass
    return removed
