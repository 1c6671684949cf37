"""Read what tlparse reads in Inductor's generated code: handle comments and kernel calls.

Pure text processing (no torch). tlparse highlights, for each ``name:N`` mapping key, the
first line after the ``[Provenance debug handles] name:N`` comment that contains ``name``
(``TlparseLines``); ``call_sites`` finds every kernel call in the wrapper's ``call``, with
the comment that announces it, so tests and the coverage judge see what a user sees.

A Spyre kernel with a frontend-allocated HBM pool is called after its pool is allocated:
``_pool_<kernel> = spyre_empty_with_layout(...)`` then ``<kernel>.run(_pool_<kernel>, ...)``.
The allocation names the kernel but is not its call (``is_pool_allocation``).

With torch's timeline provenance on (``trace.provenance_tracking_to_timeline``, env
``TORCH_COMPILE_DEBUG_EXTEND=1``; torch 2.14 and 2.15, off by default), the wrapper calls each
extern kernel through a module-level profile wrapper,
``def extern_kernels_extern_kernels_addmm_1(*args, **kwargs): return extern_kernels.addmm(...)``,
so the line after ``# [Provenance debug handles] extern_kernels.addmm:1`` never names
``extern_kernels.addmm`` (``profile_wrappers``). Such a call is that kernel's call site.
"""

from __future__ import annotations

import bisect
import re

import msgspec

HANDLE_COMMENT = re.compile(r"^\s*(?:#|//) \[Provenance debug handles\] (?P<key>(?P<name>\S+):(?P<handle>\d+))\s*$")
_KERNEL_DEFINITION = re.compile(r"^(?P<name>[A-Za-z_]\w*) = async_compile\.\w+\(", re.M)
_CALL_START = re.compile(r"^\s*(?:async\s+)?def call\(")
#: A higher-order op's subgraph lifted into a module-level function (``cond``'s branches,
#: a ``while_loop``'s body): ``def true_graph_0(args):``, called from ``call``.
_SUBGRAPH_START = re.compile(r"^def (?P<name>[A-Za-z_]\w*)\(args\):\s*$")
_EXTERN_CALL = re.compile(r"\b(extern_kernels\.\w+)\(")
#: A fallback op called by name: ``aten.scatter_reduce_.two(...)``, ``torch.ops.aten.x.default(...)``.
_FALLBACK_CALL = re.compile(r"(?<![\w.])((?:torch\.ops\.\w+|aten|prims)\.\w+(?:\.\w+)?)\(")
#: torch's profile wrapper of an extern call (wrapper.py ``define_extern_kernel_profile_wrapper``):
#: ``def extern_kernels_<kernel, non-word characters as _>_<suffix>(*args, **kwargs):``, a
#: comment line, then ``return <kernel>(*args, **kwargs)``.
_PROFILE_WRAPPER = re.compile(
    r"^def (?P<wrapper>extern_kernels_\w+)\(\*args, \*\*kwargs\):\n(?:[ \t]+#.*\n)*"
    r"[ \t]+return (?P<kernel>[A-Za-z_][\w.]*)\(\*args, \*\*kwargs\)$",
    re.M,
)
_STRING = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")
#: torch-spyre's name for the HBM pool a kernel's call takes: ``_pool_<kernel>``.
POOL_PREFIX = "_pool_"
_POOL_ALLOCATION = re.compile(r"^\s*" + re.escape(POOL_PREFIX) + r"(?P<name>[A-Za-z_]\w*)\s*=(?!=)")


class CallSite(msgspec.Struct, frozen=True):
    """One kernel call in the wrapper's ``call``; ``key`` is None when no comment names it."""

    name: str
    line: int  # 1-based line of the call
    key: str | None = None
    handle_line: int | None = None
    #: the subgraph function the call is in (``true_graph_0``); None: in ``call``
    subgraph: str | None = None


def is_pool_allocation(line: str, name: str | None = None) -> bool:
    """Whether a code line assigns a kernel's HBM pool (``_pool_<name> = ...``); only the
    assignment counts, never a mention in a comment, a string or a call's arguments."""
    match = _POOL_ALLOCATION.match(line)
    return match is not None and (name is None or match["name"] == name)


def defined_kernels(code: str) -> list[str]:
    """Names of the kernels the wrapper defines at module level (async_compile)."""
    return list(dict.fromkeys(m["name"] for m in _KERNEL_DEFINITION.finditer(code)))


def profile_wrappers(code: str) -> dict[str, str]:
    """torch's timeline profile wrappers the module defines: wrapper name -> the extern
    kernel it calls (``extern_kernels_extern_kernels_addmm_1`` -> ``extern_kernels.addmm``)."""
    return {m["wrapper"]: m["kernel"] for m in _PROFILE_WRAPPER.finditer(code)}


def call_sites(code: str) -> list[CallSite]:
    """Every kernel call site after ``def call(`` and in the subgraph functions before it
    (``def true_graph_0(args):``, a ``cond`` branch), with the handle comment announcing it.

    A call site is a call of a defined kernel, of ``extern_kernels.*`` or of a fallback op
    by name (``aten.*``, ``torch.ops.*``), or whatever line a handle comment announces.
    A call through a timeline profile wrapper is a call of the kernel it wraps, named so.
    String literals are blanked first: an ``assert_size_stride`` message names ops too.
    """
    reader = _SiteReader(_Callees(code))
    for number, line in enumerate(code.splitlines(), start=1):
        if reader.in_scope(line):
            reader.read(number, line)
    return reader.sites


class _Callees:
    """What a wrapper line may call: a kernel it defines, a timeline profile wrapper of an
    extern kernel, ``extern_kernels.*``, a fallback op by name."""

    def __init__(self, code: str) -> None:
        kernels = defined_kernels(code)
        self.wrapped = profile_wrappers(code)
        self.wrapper_call = (
            re.compile(r"(?<![\w.])(" + "|".join(map(re.escape, self.wrapped)) + r")\(") if self.wrapped else None
        )
        self.kernel_call = (
            re.compile(r"(?<![\w.])(" + "|".join(map(re.escape, kernels)) + r")(?:\.run)?\(") if kernels else None
        )

    def through_wrapper(self, bare: str) -> str | None:
        """The extern kernel ``bare`` (a line, strings blanked) calls through its profile wrapper."""
        through = self.wrapper_call.search(bare) if self.wrapper_call else None
        return self.wrapped[through.group(1)] if through else None

    def called(self, bare: str) -> str | None:
        """The kernel, extern kernel or fallback op ``bare`` calls by name."""
        called = (
            (self.kernel_call.search(bare) if self.kernel_call else None)
            or _EXTERN_CALL.search(bare)
            or _FALLBACK_CALL.search(bare)
        )
        return called.group(1) if called else None


class _SiteReader:
    """``call_sites`` line by line: which lines are read (``call`` and the subgraph functions
    before it) and the call sites found in them, each with the comment announcing it."""

    def __init__(self, callees: _Callees) -> None:
        self.callees = callees
        self.sites: list[CallSite] = []
        self.in_call = False
        self.subgraph: str | None = None  # the subgraph function being read, before ``call``
        self.pending: re.Match[str] | None = None  # the last handle comment, not yet followed
        self.pending_line = 0

    def in_scope(self, line: str) -> bool:
        """Whether ``line`` is read for calls: inside ``call`` or a subgraph function (their
        first lines open the scope and are not read)."""
        if self.in_call:
            return True
        if _CALL_START.match(line):
            self.in_call, self.subgraph, self.pending = True, None, None
            return False
        opened = _SUBGRAPH_START.match(line)
        if opened:
            self.subgraph, self.pending = opened["name"], None
            return False
        if self.subgraph is None:
            return False
        if line.strip() and not line[0].isspace():  # back at module level: the function ended
            self.subgraph = self.pending = None
            return False
        return True

    def read(self, number: int, line: str) -> None:
        comment = HANDLE_COMMENT.match(line)
        if comment:
            self.pending, self.pending_line = comment, number
            return
        if is_pool_allocation(line):  # names a kernel, but allocates its pool
            return
        pending, subgraph = self.pending, self.subgraph
        if pending is not None and pending["name"] in line:
            self.sites.append(CallSite(pending["name"], number, pending["key"], self.pending_line, subgraph))
            self.pending = None
            return
        if line.lstrip().startswith(("#", "//")):
            return
        bare = _STRING.sub("''", line)
        kernel = self.callees.through_wrapper(bare)
        if kernel is not None:
            if pending is not None and pending["name"] == kernel:
                self.sites.append(CallSite(kernel, number, pending["key"], self.pending_line, subgraph))
                self.pending = None
            else:
                self.sites.append(CallSite(kernel, number, subgraph=subgraph))
            return
        called = self.callees.called(bare)
        if called is not None:
            self.sites.append(CallSite(called, number, subgraph=subgraph))


def handle_comments(code: str) -> list[str]:
    """Every ``name:N`` a handle comment announces, in code order."""
    return [m["key"] for line in code.splitlines() if (m := HANDLE_COMMENT.match(line))]


class TlparseLines:
    """The 1-based line tlparse highlights for a mapping key ``name:N`` (``line(key)``), or
    None when it finds none (it then highlights every line naming the kernel).

    tlparse's rule (0.4.3, Python wrappers): from the ``def call(args)`` line (the first
    line, when it finds none), the first line containing the key, then the first line after
    it containing the name up to the key's first colon. Plain substring matches, as there.

    The code is split and searched once per wrapper, not once per key: a 24-layer model has
    ~200 keys in a wrapper of ~3,000 lines, and a scan per key cost a third of the hook's time.
    """

    def __init__(self, code: str) -> None:
        self.lines = lines = code.splitlines()  # as numbered here: line N is lines[N - 1]
        start = next((i for i, line in enumerate(lines) if "def" in line and "call" in line and "(args)" in line), 0)
        self._text = "\n".join(lines)
        self._starts = [0]  # offset of each line in _text
        for line in lines[:-1]:
            self._starts.append(self._starts[-1] + len(line) + 1)
        self._from = self._starts[start]  # start is 0 for empty code, and _starts holds 0

    def _line_at(self, offset: int) -> int:
        return bisect.bisect_right(self._starts, offset) - 1  # 0-based

    def line(self, key: str) -> int | None:
        if "\n" in key:  # no line contains a line break (and the joined text must not match one)
            return None
        found = self._text.find(key, self._from)
        if found < 0:
            return None
        i = self._line_at(found)
        if i + 1 >= len(self.lines):
            return None
        name = key[: key.find(":")] if ":" in key else key
        after = self._text.find(name, self._starts[i + 1])
        return None if after < 0 else self._line_at(after) + 1
