"""Reading a kernel name as an engineer copies it into the name the wrapper calls it by.

Forms (REFERENCE.md section 6):

- ``sdsc_fused_addmm_view_4``: the wrapper's name;
- ``sdsc_fused_neg_0_il7ixi06``: with a suffix a runtime or a cache adds;
- ``graph_0_cpp_fused_gelu_0``: with the prefix Inductor's C++ kernel profiling adds
  (``graph_<i>_``, ``i`` the graph's index in the process);
- ``1a2b3c4d_sdsc_fused_addmm_1_k3j_9x2q``: a bundle folder ``<uuid8>_<name>_<mkdtemp 8>``;
- ``sdsc_fused_addmm_1:2``: a mapping key ``name:N``;
- ``5042312524869293591``: an OpSpec debug-handle id.

A name with a suffix is matched against the names the index knows: exact first, else the
longest known name followed by ``_`` (``addmm_1`` never takes ``addmm_10``'s suffix).
Pure: ``re`` only.
"""

from __future__ import annotations

import re
from collections.abc import Collection

import msgspec

_KEY = re.compile(r"(?P<name>.+):(?P<handle>[1-9][0-9]*)")
_HANDLE_ID = re.compile(r"[0-9]{6,20}")  # 63-bit content hashes, as strings
_PROFILER_PREFIX = re.compile(r"graph_[0-9]+_(?=.)")
_BUNDLE_PREFIX = re.compile(r"[0-9a-f]{8}_(?=.)")
_SPYRE_EVENT_STEP = re.compile(r"#[0-9]+$")  # torch-spyre profiler events end in "#<step>"


class Query(msgspec.Struct, frozen=True):
    text: str
    form: str  # "key" | "handle" | "kernel"
    name: str  # the kernel name part ("" for a handle id)
    handle: int | None = None


def parse(text: str) -> Query:
    """What kind of name ``text`` is (the candidate kernel names come from ``candidates``)."""
    text = text.strip()
    key = _KEY.fullmatch(text)
    if key:
        return Query(text, "key", key["name"], int(key["handle"]))
    if _HANDLE_ID.fullmatch(text):
        return Query(text, "handle", "")
    return Query(text, "kernel", _SPYRE_EVENT_STEP.sub("", text))


def has_profiler_prefix(name: str) -> bool:
    """Whether ``name`` is named as Inductor's C++ kernel profiling names a kernel event."""
    return _PROFILER_PREFIX.match(name) is not None


def candidates(name: str) -> list[str]:
    """``name`` and what it is with a profiler or bundle-folder prefix taken off, in that order."""
    found = [name]
    for prefix in (_PROFILER_PREFIX, _BUNDLE_PREFIX):
        for known in list(found):
            stripped = prefix.sub("", known, count=1) if prefix.match(known) else None
            if stripped and stripped not in found:
                found.append(stripped)
    return found


def resolve(name: str, known: Collection[str]) -> list[str]:
    """The known kernel names ``name`` stands for: an exact match of a candidate, else the
    longest known name that a candidate starts with followed by ``_`` (a runtime suffix)."""
    options = candidates(name)
    exact = [c for c in options if c in known]
    if exact:
        return exact[:1]
    best: list[str] = []
    for option in options:
        prefixes = [k for k in known if option.startswith(k + "_")]
        if prefixes:
            longest = max(len(k) for k in prefixes)
            best = [k for k in prefixes if len(k) == longest]
            break
    return sorted(best)
