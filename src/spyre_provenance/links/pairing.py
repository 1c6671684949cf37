"""Pairing what two runs produced: their graphs, and the kernels of a graph. One rule each,
for every comparison (``diff``, ``golden check``, the audit's ``--against``, the summary
that pairs the hook's graphs with the log's).

Pure: no torch.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import TypeVar

import msgspec

from spyre_provenance.model.detect import split_key

T = TypeVar("T")


def pair_graphs(
    a: Sequence[T],
    b: Sequence[T],
    name: Callable[[T], Hashable],
    *,
    group: Callable[[T], Hashable] = lambda _: None,
    by_position: bool = True,
) -> list[tuple[T | None, T | None]]:
    """Graphs of two runs: the same name pairs up (the n-th of a name with the n-th); what
    is left pairs by position within its ``group`` (a multi-rank run's rank: never across
    ranks) when ``by_position`` (compile ids and graph counts may move between runs).
    In ``a``'s order, then ``b``'s graphs no graph of ``a`` took."""
    pending: dict[Hashable, list[int]] = {}
    for index, graph in enumerate(b):
        pending.setdefault(name(graph), []).append(index)
    taken: dict[int, int] = {}  # index in a -> index in b
    for index, graph in enumerate(a):
        queue = pending.get(name(graph))
        if queue:
            taken[index] = queue.pop(0)
    if by_position:
        left_b: dict[Hashable, list[int]] = {}
        used = set(taken.values())
        for index, graph in enumerate(b):
            if index not in used:
                left_b.setdefault(group(graph), []).append(index)
        for index, graph in enumerate(a):
            if index not in taken and left_b.get(group(graph)):
                taken[index] = left_b[group(graph)].pop(0)
    used = set(taken.values())
    pairs: list[tuple[T | None, T | None]] = [(graph, b[taken[i]] if i in taken else None) for i, graph in enumerate(a)]
    return pairs + [(None, graph) for i, graph in enumerate(b) if i not in used]


class KernelPairs(msgspec.Struct):
    """The kernels of one graph in two runs (by mapping key): ``renamed`` old key -> new
    key for kernels only on one side that are the same kernel; the rest ``removed`` (only
    in the old run) and ``added`` (only in the new), in their runs' order."""

    renamed: dict[str, str]
    removed: list[str]
    added: list[str]


def pair_kernels(old: Mapping[str, Sequence[str]], new: Mapping[str, Sequence[str]]) -> KernelPairs:
    """Kernels (key -> post-grad nodes) of one graph in two runs. A key in both is the same
    kernel. Of the others, a kernel only in ``old`` is the same as one only in ``new`` when
    they have the same post-grad nodes (a rename), else the same kernel name (renumbered),
    else the same handle N and nodes in common; each rule over all the rest before the next."""
    only_old = [k for k in old if k not in new]
    only_new = [k for k in new if k not in old]
    renamed: dict[str, str] = {}

    def pair(same: Callable[[str, str], bool]) -> None:
        for ko in list(only_old):
            match = next((kn for kn in only_new if same(ko, kn)), None)
            if match is not None:
                renamed[ko] = match
                only_old.remove(ko)
                only_new.remove(match)

    pair(lambda ko, kn: bool(old[ko]) and set(old[ko]) == set(new[kn]))
    pair(lambda ko, kn: split_key(ko)[0] == split_key(kn)[0])
    pair(lambda ko, kn: split_key(ko)[1] == split_key(kn)[1] and bool(set(old[ko]) & set(new[kn])))
    return KernelPairs(renamed, only_old, only_new)
