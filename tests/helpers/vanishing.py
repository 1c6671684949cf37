"""A folder that another process removes while a reader walks its parent.

Two processes share an out folder (two compiles into one ``--out``, ``lookup`` during a
running job): one lists a folder, the other removes a subfolder, and the first then
descends into a name that is gone. ``remove_after_listing`` makes that window certain:
``child`` is gone right after ``parent``'s first listing, and every listing of ``parent``
still names it (a reader may list a folder more than once: ``Path.rglob`` does).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


class _Listing:
    """What ``os.scandir`` returns, with the entries read before the removal."""

    def __init__(self, entries: list[os.DirEntry[str]]) -> None:
        self._entries = iter(entries)

    def __iter__(self) -> Iterator[os.DirEntry[str]]:
        return self

    def __next__(self) -> os.DirEntry[str]:
        return next(self._entries)

    def __enter__(self) -> _Listing:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def close(self) -> None:
        return None


def remove_after_listing(monkeypatch: pytest.MonkeyPatch, parent: Path, child: Path) -> None:
    scandir = os.scandir
    before: list[os.DirEntry[str]] = []  # parent's entries as first listed, child among them

    def listed_then_removed(path: Any = ".") -> Any:
        # shutil.rmtree lists open folders by descriptor: only paths can name ``parent``
        if not (isinstance(path, (str, os.PathLike)) and Path(path) == parent):
            return scandir(path)
        if not before:
            with scandir(path) as listing:
                before.extend(listing)
            shutil.rmtree(child)
        return _Listing(before)

    monkeypatch.setattr(os, "scandir", listed_then_removed)
