"""The frames of a stack trace as Inductor writes it (``traceback.format_list``): a
``File "<path>", line <N>, in <function>`` line, then the frame's code line when Python had
the source; and which frames are the user's.

Read here once: the diff's short form of a trace, lookup's source lines, the time summary's
lines, the random-op lines and the source a debug handle names. Pure: no torch, and the
answer is read from the path's text alone, so a trace recorded on another machine, or with
its paths redacted (``<site-packages>/...``, ``<project>/...``), is judged as where it was made.
"""

from __future__ import annotations

import re
from typing import NamedTuple

#: a frame line, then its code line unless the next line is another frame's
_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+)[^\n]*(?:\n(?![ \t]*File ")(?P<code>[^\n]*))?')

# A frame is not the user's when it runs in torch (a ``torch`` folder in its path: torch-spyre's
# own test, ``"/torch/" not in f``), in the standard library, in this package (installed, or
# under ``src/`` of a checkout; its example models, ``compile/examples.py``, excepted: they are
# the user's models) or in code without a file (``<string>``, ``<eval_with_key>.3``; a redacted
# root such as ``<project>/`` is a file). Another installed package is the user's: a model's own
# source may live there (``transformers``' modeling files), and torch-spyre's handles name it too.
_THIS_PACKAGE = (
    r"""(?:^|[/\\])(?:src|site-packages|dist-packages|<site-packages>)[/\\]spyre_provenance[/\\]"""
    r"""(?!compile[/\\]examples\.py$)"""
)
_NOT_THE_USERS = re.compile(
    r"""(?:^|[/\\])torch[/\\]"""
    r"""|""" + _THIS_PACKAGE + r"""|^<stdlib>[/\\]|[/\\]lib[/\\]python3[.0-9]*[/\\](?!(?:site|dist)-packages[/\\])"""
    r"""|^<[^>]*>(?![/\\])"""
)
_OURS = re.compile(_THIS_PACKAGE)


class Frame(NamedTuple):
    file: str
    line: int
    code: str  # the code line as written (indented); "" when the trace has none


def frames(trace: str) -> list[Frame]:
    """The frames of ``trace``, outermost first, as written."""
    return [Frame(m["file"], int(m["line"]), m["code"] or "") for m in _FRAME.finditer(trace)]


def is_user_frame(file: str) -> bool:
    """Is a frame in ``file`` the user's (the model's source) rather than the machinery
    running it: torch, the standard library, this package, code without a file."""
    return _NOT_THE_USERS.search(file) is None


# At run time (a call into a compiled graph, ``capture.call_recording``) torch-spyre's own package is
# machinery too: its eager mode re-enters Python in ``torch_spyre/ops/eager.py`` for every op,
# so the frame that called the compiled op is always its dispatch, never the user's line. At
# compile time it stays the user's (``is_user_frame``): a model may be defined in torch_spyre,
# and its stack traces are the model's, traced once through Dynamo with no dispatch in them.
_TORCH_SPYRE = re.compile(r"(?:^|[/\\])torch_spyre[/\\]")


def is_this_package(file: str) -> bool:
    """Is ``file`` this package's own code (its example models excepted: they are the user's)."""
    return _OURS.search(file) is not None


def is_run_time_user_frame(file: str) -> bool:
    """Is a frame running a call into a compiled graph in ``file`` the user's: the
    compile-time rule (``is_user_frame``), and not in torch-spyre's package either."""
    return is_user_frame(file) and _TORCH_SPYRE.search(file) is None


def user_frame(trace: str | None) -> Frame | None:
    """The innermost user frame of an FX ``stack_trace`` (frames run outer -> inner).

    When no frame is the user's, the innermost frame overall (as torch-spyre does): a line in
    torch is still a better lead than nothing. None for a trace without frames.
    """
    found = frames(trace or "")
    at = line_index(found)
    return found[at] if at is not None else None


def line_index(found: list[Frame]) -> int | None:
    """Where ``user_frame``'s frame is in ``found`` (frames outer -> inner): the innermost
    user frame's index, else the innermost frame's; None for no frames."""
    users = [i for i, f in enumerate(found) if is_user_frame(f.file)]
    return users[-1] if users else (len(found) - 1 if found else None)
