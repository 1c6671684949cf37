"""One way to change torch for a while and put it back: ``Patches``.

The hook, both backends and the bench replace functions, class attributes, config values and
registry entries of torch while they run. Each change is recorded before it is made and undone
newest first, so two changes of one place (a wrapper around a wrapper) unwind in order, and an
install that fails half way undoes exactly what it did. What is put back is what was there:

- on a class, the class's own ``__dict__`` entry, or no entry (an inherited method stays
  inherited instead of becoming an own attribute);
- on a module or a config object, the value ``getattr`` gave (torch's config modules keep
  their values outside ``__dict__``);
- in a dict (a registry such as ``device_codegens``), the entry, or no entry.

A function that other modules imported by name (``from torch._inductor.debug import f``) is
held by each of them: ``wrap_everywhere`` replaces it in every module given, each module's own
binding wrapped once.

Pure: imports nothing of ours, nothing of torch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, MutableMapping
from typing import Any

_MISSING = object()


class Patches:
    """Changes made to torch since creation (or the last ``undo``), to be undone newest first."""

    def __init__(self) -> None:
        self._undo: list[Callable[[], None]] = []

    def __len__(self) -> int:
        return len(self._undo)

    def __enter__(self) -> Patches:
        return self

    def __exit__(self, *exc: object) -> None:
        self.undo()

    def setattr(self, owner: Any, attr: str, value: Any) -> Any:
        """Set ``owner.attr`` to ``value``; returns what ``getattr`` gave before."""
        before = getattr(owner, attr, _MISSING)
        if isinstance(owner, type):
            own = owner.__dict__.get(attr, _MISSING)
            self._undo.append(lambda: _restore_attr(owner, attr, own))
        else:
            self._undo.append(lambda: _restore_attr(owner, attr, before))
        setattr(owner, attr, value)
        return None if before is _MISSING else before

    def wrap(self, owner: Any, attr: str, make: Callable[[Any], Any]) -> None:
        """Replace ``owner.attr`` by ``make(current value)``."""
        self.setattr(owner, attr, make(getattr(owner, attr)))

    def wrap_everywhere(self, modules: Iterable[Any], attr: str, make: Callable[[Any], Any]) -> int:
        """``wrap`` ``attr`` in every module that has it (each module once); returns how many."""
        seen: set[int] = set()
        for module in modules:
            if id(module) in seen or not hasattr(module, attr):
                continue
            seen.add(id(module))
            self.wrap(module, attr, make)
        return len(seen)

    def setitem(self, mapping: MutableMapping[Any, Any], key: Any, value: Any) -> None:
        """Set ``mapping[key]``; undone to the old entry, or to none."""
        self.keep_item(mapping, key)
        mapping[key] = value

    def keep_item(self, mapping: MutableMapping[Any, Any], key: Any) -> Any:
        """Record ``mapping[key]`` (or its absence) for ``undo`` without changing it: for an
        entry that a torch function about to be called will set. Returns the entry or None."""
        old = mapping.get(key, _MISSING)
        self._undo.append(lambda: _restore_item(mapping, key, old))
        return None if old is _MISSING else old

    def undo(self) -> None:
        """Put everything back, newest first. Every step runs; the first error is raised after."""
        failed: BaseException | None = None
        while self._undo:
            step = self._undo.pop()
            try:
                step()
            except BaseException as exc:  # noqa: BLE001 - the remaining steps must still run
                failed = failed or exc
        if failed is not None:
            raise failed


def _restore_attr(owner: Any, attr: str, old: Any) -> None:
    if old is _MISSING:
        if attr in getattr(owner, "__dict__", {}):
            delattr(owner, attr)
    else:
        setattr(owner, attr, old)


def _restore_item(mapping: MutableMapping[Any, Any], key: Any, old: Any) -> None:
    if old is _MISSING:
        mapping.pop(key, None)
    else:
        mapping[key] = old
