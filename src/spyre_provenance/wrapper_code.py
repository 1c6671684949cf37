"""Read what tlparse reads in Inductor's generated code: handle comments and kernel calls.

Pure text processing (no torch). tlparse highlights, for each ``name:N`` mapping key, the
line after the ``[Provenance debug handles] name:N`` comment that follows ``def call(``;
these helpers find the same lines so tests and the coverage summary see what a user sees.
"""

from __future__ import annotations

import re

import msgspec

HANDLE_COMMENT = re.compile(
    r"^\s*(?:#|//) \[Provenance debug handles\] (?P<key>(?P<name>\S+):(?P<handle>\d+))\s*$"
)
_KERNEL_DEFINITION = re.compile(r"^(?P<name>[A-Za-z_]\w*) = async_compile\.\w+\(", re.M)
_CALL_START = re.compile(r"^\s*(?:async\s+)?def call\(")
_EXTERN_CALL = re.compile(r"\b(extern_kernels\.\w+)\(")


class CallSite(msgspec.Struct, frozen=True):
    """One kernel call in the wrapper's ``call``; ``key`` is None when no comment names it."""

    name: str
    line: int  # 1-based line of the call
    key: str | None = None
    handle_line: int | None = None


def defined_kernels(code: str) -> list[str]:
    """Names of the kernels the wrapper defines at module level (async_compile)."""
    return list(dict.fromkeys(m["name"] for m in _KERNEL_DEFINITION.finditer(code)))


def call_sites(code: str) -> list[CallSite]:
    """Every kernel call site after ``def call(``, with the handle comment announcing it.

    A call site is a call of a defined kernel or of ``extern_kernels.*``, or whatever line
    a handle comment announces (fallback ops such as ``torch.ops.aten.sort.stable``).
    """
    kernels = defined_kernels(code)
    kernel_call = (
        re.compile(r"(?<![\w.])(" + "|".join(map(re.escape, kernels)) + r")(?:\.run)?\(")
        if kernels
        else None
    )
    sites: list[CallSite] = []
    in_call = False
    pending: re.Match[str] | None = None
    pending_line = 0
    for number, line in enumerate(code.splitlines(), start=1):
        if not in_call:
            in_call = bool(_CALL_START.match(line))
            continue
        comment = HANDLE_COMMENT.match(line)
        if comment:
            pending, pending_line = comment, number
            continue
        if pending is not None and pending["name"] in line:
            sites.append(CallSite(pending["name"], number, pending["key"], pending_line))
            pending = None
            continue
        called = (kernel_call.search(line) if kernel_call else None) or _EXTERN_CALL.search(line)
        if called and not line.lstrip().startswith(("#", "//")):
            sites.append(CallSite(called.group(1), number))
    return sites


def handle_comments(code: str) -> list[str]:
    """Every ``name:N`` a handle comment announces, in code order."""
    return [m["key"] for line in code.splitlines() if (m := HANDLE_COMMENT.match(line))]
