"""Atomic file writes, the one way every layer writes a file.

Atomic writes: a reader sees the old file or the new one, never a torn one. A write goes to a
temporary file in the target's folder (``.spyre-provenance-tmp-<pid>-*.part``), is flushed and
fsync'ed, then renamed over the target. A writer killed half way (SIGKILL, power loss) leaves
the target as it was plus, at worst, its temporary. Every writer calls
``remove_stale_temporaries`` on its folders when it starts; it deletes only temporaries whose
writing process is gone, so two processes writing into one folder at once never delete each
other's files in flight.

Pure: imports nothing of ours.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from pathlib import Path

TMP_PREFIX = ".spyre-provenance-tmp-"
_TMP_NAME = re.compile(re.escape(TMP_PREFIX) + r"(?:(?P<pid>[0-9]+)-)?.*\.part")


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path`` through a temporary file in the same folder + rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f"{TMP_PREFIX}{os.getpid()}-", suffix=".part", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    _fsync_folder(path.parent)
    return path


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))


def remove_stale_temporaries(folder: str | os.PathLike[str], *, recursive: bool = True) -> int:
    """Delete the temporaries a killed writer left in ``folder`` (and below, when
    ``recursive``); returns how many. A temporary whose writer is still running (its pid is
    in the name) is left alone; one without a pid (an older version's) counts as stale."""
    folder = Path(folder)
    if not folder.is_dir():
        return 0
    found = folder.rglob(f"{TMP_PREFIX}*.part") if recursive else folder.glob(f"{TMP_PREFIX}*.part")
    removed = 0
    for tmp in found:
        if not is_stale_temporary(tmp.name):
            continue
        try:
            tmp.unlink()
            removed += 1
        except FileNotFoundError:  # another cleaner was first
            pass
    return removed


def is_stale_temporary(name: str) -> bool:
    """Whether ``name`` is a temporary of ``atomic_write_bytes`` whose writer is gone."""
    match = _TMP_NAME.fullmatch(name)
    if match is None:
        return False
    return match["pid"] is None or not _process_alive(int(match["pid"]))


def _process_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True  # another thread of this process may be writing it right now
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    except OSError:
        return False
    try:  # a killed process not yet reaped by its parent writes nothing more
        with open(f"/proc/{pid}/stat", "rb") as fh:
            state = fh.read().rpartition(b")")[2].split()[:1]
        return state != [b"Z"]
    except OSError:
        return True


def _fsync_folder(folder: Path) -> None:
    """Make the rename itself durable (best effort: not every platform can open a folder)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
