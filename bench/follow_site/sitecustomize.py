"""Put first on ``PYTHONPATH`` by ``bench.follow_out``: every function of spyre_provenance the
``--out`` folder reaches, recorded in each process (a ``run``'s children too) by three
measures, written at exit. Not part of the package: a measuring tool's probe.
"""

import atexit
import json
import os
import sys
import threading
from pathlib import PurePath

_OUT = os.environ.get("FOLLOW_OUT", "")
_DUMP = os.environ.get("FOLLOW_DUMP", "")
_SRC = "/src/spyre_provenance/"
_seen: dict[str, set[tuple[str, str]]] = {"holds": set(), "reads": set(), "reads_layout": set()}


def _is_out(value, layout):
    if isinstance(value, (str, PurePath)):
        return str(value) == _OUT
    # the folder as one value: a Layout of it counts as the folder itself
    return layout and type(value).__name__ == "Layout" and str(getattr(value, "out", "")) == _OUT


def _attributes(value):
    if value is None or isinstance(value, (int, float, bytes, bool, str, PurePath, type)):
        return {}
    fields = getattr(type(value), "__struct_fields__", None)
    if fields:
        return {f: getattr(value, f, None) for f in fields}
    held = getattr(value, "__dict__", None)
    return dict(list(held.items())[:30]) if isinstance(held, dict) else {}


def _measures(value, names):
    """Which measures ``value``, an argument of a function whose code names ``names``, counts for."""
    items = list(value[:8]) if isinstance(value, (list, tuple)) else []
    attributes = _attributes(value)
    found = set()
    if _is_out(value, False) or any(_is_out(x, False) for x in [*items, *attributes.values()]):
        found.add("holds")
    for measure, layout in (("reads", False), ("reads_layout", True)):
        direct = _is_out(value, layout) or any(_is_out(x, layout) for x in items)
        if direct or any(_is_out(x, layout) and a in names for a, x in attributes.items()):
            found.add(measure)
    return found


def _profile(frame, event, arg):
    if event != "call" or _SRC not in frame.f_code.co_filename:
        return
    code = frame.f_code
    key = (code.co_filename.split("/src/")[-1], code.co_name)
    if all(key in s for s in _seen.values()):
        return
    names = set(code.co_names)
    for name in code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]:
        try:
            for measure in _measures(frame.f_locals.get(name), names):
                _seen[measure].add(key)
        except Exception:  # noqa: BLE001 - a probe never breaks what it measures
            pass


def _dump():
    with open(f"{_DUMP}.{os.getpid()}.json", "w", encoding="utf-8") as f:
        json.dump({m: sorted(s) for m, s in _seen.items()}, f)


if _OUT and _DUMP:
    sys.setprofile(_profile)
    threading.setprofile(_profile)
    atexit.register(_dump)
