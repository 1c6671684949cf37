"""The frames of a stack trace as Inductor writes it (``traceback.format_list``): a
``File "<path>", line <N>, in <function>`` line, then the frame's code line.

Read here once for the diff's short form of a trace and lookup's source lines. Pure.
"""

from __future__ import annotations

import re
from typing import NamedTuple

_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+)[^\n]*\n(?P<code>[^\n]*)')


class Frame(NamedTuple):
    file: str
    line: int
    code: str  # the code line as written (indented)


def frames(trace: str) -> list[Frame]:
    """The frames of ``trace`` that carry a code line, outermost first, as written."""
    return [Frame(m["file"], int(m["line"]), m["code"]) for m in _FRAME.finditer(trace)]
