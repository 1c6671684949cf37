"""Read once, validate once: inside ``reading_once()`` (this thread), every later reader is
given what an earlier one read, while the file is unchanged (``base.files.stamp``): a
TORCH_TRACE log's graphs (``logs.graphs.reading_each_log_once``), and an artifact file's
bytes once ``validate`` found them valid, for a reader of that same kind of artifact.

A compile checks what it wrote (``compile.output_check``), then builds its viewer page from
the same files; ``run`` reads each process's log for its line of the screen, then for its
viewer page. Outside it, as for ``view`` on a folder, every reader reads and validates on
its own. Only what was found valid is given on: a file found wanting is read again by the
next reader, which says so in its own words; a file changed since, or over the next
reader's size limit, is read again too.

Pure: no torch.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from spyre_provenance.base import files
from spyre_provenance.logs.graphs import reading_each_log_once

#: bytes found valid, by the file's stamp and the kind they were validated as
_VALID: ContextVar[dict[tuple[files.Stamp, str], bytes] | None] = ContextVar("validated_files", default=None)


@contextmanager
def reading_once() -> Iterator[None]:
    with reading_each_log_once():
        token = _VALID.set({})
        try:
            yield
        finally:
            _VALID.reset(token)


def stamp(path: str | os.PathLike[str]) -> files.Stamp | None:
    """The file's stamp to keep its bytes under, taken before they are read; None outside
    ``reading_once`` (nothing is kept) or when the file cannot be stat'ed."""
    if _VALID.get() is None:
        return None
    try:
        return files.stamp(path)
    except OSError:
        return None


def keep_valid(stamp: files.Stamp | None, artifact: str, data: bytes) -> None:
    """Keep the bytes ``validate`` found valid as ``artifact``, read after ``stamp`` was taken."""
    valid = _VALID.get()
    if valid is not None and stamp is not None:
        valid[(stamp, artifact)] = data


def valid_bytes(path: str | os.PathLike[str], artifact: str, max_bytes: int) -> bytes | None:
    """The file's bytes as found valid as ``artifact``, if the file is unchanged since and
    within the reader's size limit ``max_bytes``; else None (the reader reads it, and refuses
    it in its own words: the first reader's limit, or the kind it validated, may have been
    another)."""
    valid = _VALID.get()
    if not valid:
        return None
    try:
        data = valid.get((files.stamp(path), artifact))
    except OSError:
        return None
    return data if data is not None and len(data) <= max_bytes else None
