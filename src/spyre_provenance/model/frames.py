"""The frames of a stack trace as Inductor writes it (``traceback.format_list``): a
``File "<path>", line <N>, in <function>`` line, then the frame's code line; and which frame
is the user's.

Read here once for the diff's short form of a trace, lookup's source lines and the source a
debug handle names. Pure: no torch (``find_spec`` finds torch's folder without importing it).
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
from typing import NamedTuple

_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+)[^\n]*\n(?P<code>[^\n]*)')
_SOURCE_FRAME = re.compile(r'File "([^"]+)", line (\d+)')

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
#: The one file of this package that holds *model* code: its frames are user source.
_EXAMPLES_FILE = os.path.join(_PACKAGE_DIR, "examples.py")


class Frame(NamedTuple):
    file: str
    line: int
    code: str  # the code line as written (indented)


def frames(trace: str) -> list[Frame]:
    """The frames of ``trace`` that carry a code line, outermost first, as written."""
    return [Frame(m["file"], int(m["line"]), m["code"]) for m in _FRAME.finditer(trace)]


@functools.lru_cache(maxsize=1)
def _internal_roots() -> tuple[str, ...]:
    """Folders whose frames are compiler machinery, not model source: torch and this package."""
    roots = [_PACKAGE_DIR]
    spec = importlib.util.find_spec("torch")  # finds torch without importing it
    if spec and spec.submodule_search_locations:
        roots.extend(os.path.realpath(r) for r in spec.submodule_search_locations)
    return tuple(os.path.join(r, "") for r in roots)


def is_user_frame(path: str) -> bool:
    """False for frames inside torch or spyre_provenance (the built-in example models excepted).

    Dynamo already leaves torch's own frames out of ``stack_trace``; this filter matters for
    traces recorded by other tools and keeps the rule explicit.
    """
    real = os.path.realpath(path)
    if real == _EXAMPLES_FILE:
        return True
    return not any(real.startswith(root) for root in _internal_roots())


def user_frame(trace: str | None) -> Frame | None:
    """The innermost user frame of an FX ``stack_trace`` (frames run outer -> inner).

    When no frame is the user's, the innermost frame overall (as torch-spyre does): a line in
    torch is still a better lead than nothing. None for a trace without frames.
    """
    if not trace:
        return None
    found = [Frame(file, int(line), "") for file, line in _SOURCE_FRAME.findall(trace)]
    if not found:
        return None
    return ([f for f in found if is_user_frame(f.file)] or found)[-1]
