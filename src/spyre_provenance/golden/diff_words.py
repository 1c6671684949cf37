"""How the structural diff says a change: names listed, lists compared, traces shortened.

Shared by ``golden.diff`` (graphs, node maps, stack traces) and ``golden.diff_handles``
(OpSpec and bundle handles), so both word a lost name or a reordered list the same way.

Pure: no torch import.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from spyre_provenance.model.frames import frames


class Malformed(Exception):
    def __init__(self, side: str, message: str) -> None:
        super().__init__(message)
        self.side = side


def name_list(items: Iterable[str]) -> str:
    return ", ".join(items) or "(none)"


def list_change(old: list[str], new: list[str], noun: str, plural: str | None = None) -> str | None:
    """How one list of names changed, in the fewest words; None when equal.

    ``post-grad node relux -> relu`` (one name replaced in place), ``post-grad node order
    [a, b] -> [b, a]``, ``post-grad nodes lost: a; gained: c``.
    """
    if old == new:
        return None
    lost = [x for x in old if x not in new]
    gained = [x for x in new if x not in old]
    if not lost and not gained:
        return f"{noun} order [{name_list(old)}] -> [{name_list(new)}]"
    renamed_in_place = (
        len(old) == len(new) and len(lost) == len(gained) == 1 and old.index(lost[0]) == new.index(gained[0])
    )
    if renamed_in_place and [x for x in old if x != lost[0]] == [x for x in new if x != gained[0]]:
        return f"{noun} {lost[0]} -> {gained[0]}"
    parts = []
    if lost:
        parts.append(f"lost: {name_list(lost)}")
    if gained:
        parts.append(f"gained: {name_list(gained)}")
    if [x for x in old if x in new] != [x for x in new if x in old]:
        parts.append(f"order [{name_list(old)}] -> [{name_list(new)}]")
    return f"{plural or noun + 's'} " + "; ".join(parts)


def rename(mapping: Mapping[str, str], name: str) -> str:
    return mapping.get(name, name)


def first_seen(groups: Iterable[Iterable[str]]) -> list[str]:
    return list(dict.fromkeys(x for group in groups for x in group))


#: JSON-path lines shown where no rule explains a difference
GENERIC_MAX = 12


def canon(doc: Any) -> str:
    """Order-sensitive identity (dict equality in Python ignores key order; JSON's does not
    matter to readers, but kernel and node order is part of the provenance)."""
    return json.dumps(doc, ensure_ascii=False, sort_keys=False)


def trace_short(trace: str) -> str:
    """A stack trace as its innermost frame: ``examples.py:38 `h = self.act(self.fc1(x))```."""
    found = frames(trace)
    if not found:
        first = trace.strip().splitlines()[0] if trace.strip() else "(empty)"
        return first[:80]
    file, line, code = found[-1]
    return f"{Path(file).name}:{line} `{code.strip()[:60]}`"


def traces_short(traces: Sequence[str]) -> str:
    return ", ".join(trace_short(t) for t in traces)


def generic(a: Any, b: Any, path: str) -> list[str]:
    """Last resort: JSON paths where two documents differ (order-sensitive)."""
    if canon(a) == canon(b):
        return []
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        out = []
        for key in first_seen([a, b]):
            sub = f"{path}[{json.dumps(key)}]"
            if key not in b:
                out.append(f"{sub} removed")
            elif key not in a:
                out.append(f"{sub} added: {short(b[key])}")
            else:
                out += generic(a[key], b[key], sub)
        if not out:
            out.append(f"{path}: key order changed")
        return out
    return [f"{path}: {short(a)} -> {short(b)}"]


def clip(line: str, limit: int = 500) -> str:
    """A change line of readable length: a node name can be any size (100 MB, in a test)."""
    return line if len(line) <= limit else f"{line[: limit - 40]}... ({len(line)} characters)"


def short(value: Any, limit: int = 100) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 3] + "..."
