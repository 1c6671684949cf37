"""Atomic file writes, the one way every layer writes a file.

Atomic writes: a reader sees the old file or the new one, never a torn one. A write goes to a
temporary file in the target's folder (``.spyre-provenance-tmp-<pid>-*.part``), is flushed and
fsync'ed, then renamed over the target.

Modes: a file gets the mode a plain ``open(path, "w")`` gives it, ``0o666`` less the user's
umask (0644 under umask 022), and a folder ``0o777`` less the umask, so a team's shared out
folder or a web server serving it reads what the tool wrote. The temporary is created with
mode ``0o666`` and the umask applied by the system, as ``open`` does (``tempfile.mkstemp``
would make it 0600, whatever the umask); a file another writer made private (torch's
TORCH_TRACE log, from ``tempfile``) is given the same mode when it is taken over
(``give_plain_mode``). A writer killed half way (SIGKILL, power loss) leaves
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
import secrets
import threading
from pathlib import Path

TMP_PREFIX = ".spyre-provenance-tmp-"
_TMP_NAME = re.compile(re.escape(TMP_PREFIX) + r"(?:(?P<pid>[0-9]+)-)?.*\.part")


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path`` through a temporary file in the same folder + rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = _new_temporary(path.parent)
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


def _new_temporary(folder: Path) -> tuple[int, Path]:
    """A new temporary file in ``folder``, open for writing, created as ``open`` creates a
    file (mode 0o666, the umask applied by the system), under a name no one else has."""
    while True:
        tmp = folder / f"{TMP_PREFIX}{os.getpid()}-{secrets.token_hex(6)}.part"
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666), tmp
        except FileExistsError:
            continue


#: A file as it is now: (real path, inode, size, modification time in ns). Two reads with the
#: same stamp read the same bytes, short of a writer that keeps all four (none of ours does).
Stamp = tuple[str, int, int, int]


def stamp(path: str | os.PathLike[str]) -> Stamp:
    """The file's stamp; raises OSError as ``os.stat`` does."""
    found = os.stat(path)
    return (os.path.realpath(path), found.st_ino, found.st_size, found.st_mtime_ns)


def make_folders(path: str | os.PathLike[str]) -> list[Path]:
    """``path`` and its missing parents made, as ``mkdir -p`` makes them; returns the ones
    this call made, outermost first, so that its caller can remove them again (``rmdir``,
    only while empty) when it leaves nothing in them. One made meanwhile by another process
    is that process's, and not in the list."""
    path = Path(os.path.abspath(path))
    missing = [p for p in (path, *path.parents) if not p.exists()]
    made = []
    for folder in reversed(missing):
        try:
            os.mkdir(folder)
        except FileExistsError:
            continue
        made.append(folder)
    return made


def claim_folder(parent: str | os.PathLike[str], names: list[str]) -> Path:
    """The first of ``names`` made as a new folder in ``parent`` by this call. ``mkdir`` fails
    on a name anything has (a folder, a file, a link, which it never follows), so the folder
    claimed is the caller's alone: no other process writes in it, and nothing in it leads
    elsewhere. Raises ``FileExistsError`` when every name is taken."""
    for name in names:
        try:
            os.mkdir(os.path.join(parent, name))
        except FileExistsError:
            continue
        return Path(parent, name)
    raise FileExistsError(f"{parent}: {names[0]} and the {len(names) - 1} names after it are taken")


def plain_mode(*, folder: bool = False) -> int:
    """The mode ``open(path, "w")`` gives a new file (``os.mkdir`` a new folder): 0o666
    (0o777) less this process's umask."""
    return (0o777 if folder else 0o666) & ~_umask()


def give_plain_mode(path: str | os.PathLike[str]) -> None:
    """Give a file another writer created private (``tempfile``'s 0600) the mode a plain
    ``open`` would have given it (``plain_mode``)."""
    os.chmod(path, plain_mode(folder=os.path.isdir(path)))


_UMASK_LOCK = threading.Lock()


def _umask() -> int:
    """This process's umask, read without changing it where Linux says it (``/proc``);
    elsewhere set and set back at once, under a lock for this module's callers."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    with _UMASK_LOCK:
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


def remove_stale_temporaries(folder: str | os.PathLike[str], *, recursive: bool = True) -> int:
    """Delete the temporaries a killed writer left in ``folder`` (and below, when
    ``recursive``); returns how many. A temporary whose writer is still running (its pid is
    in the name) is left alone; one without a pid (an older version's) counts as stale.

    Another process may be removing folders under ``folder`` meanwhile (a concurrent compile
    into the same ``--out`` replaces its own model's output): ``os.walk`` passes over a folder
    that is gone by the time it is listed, where ``Path.rglob`` raises."""
    removed = 0
    for root, dirs, names in os.walk(folder):
        if not recursive:
            dirs.clear()
        for name in names:
            if not is_stale_temporary(name):
                continue
            try:
                os.unlink(os.path.join(root, name))
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
