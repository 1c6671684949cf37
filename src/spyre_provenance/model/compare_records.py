"""Two compiles side by side per source line (``spyre-provenance compare``) as typed records.

``CompileLines`` is what the comparison reads (one side: what each source line became);
``Comparison`` is what it answers (``--format json``). ``schemas/provenance_compare/v1.schema.json``
states the same shape; a test holds the two equal. Pure: msgspec only.
"""

from __future__ import annotations

from typing import Annotated, Literal, get_args

import msgspec

COMPARE_VERSION: Literal[1] = 1
#: A pair of lines is ``changed`` (its code, its own OpSpecs or ATen ops differ; or, where
#: the compile recorded no OpSpecs for it, the kernels it went into), only in one compile,
#: ``regrouped`` (its own OpSpecs and ops are the same, the kernels holding them are not:
#: a fused neighbour changed), or the ``same``. In the order a comparison lists them.
Status = Literal["changed", "only_a", "only_b", "regrouped", "same"]
STATUSES: tuple[Status, ...] = get_args(Status)
#: What differs in a pair of lines.
Change = Literal["code", "opspecs", "ops", "kernels"]
CHANGES: tuple[Change, ...] = get_args(Change)
#: Where a line's ``ops`` come from, finest first: its own OpSpecs' debug handles; the
#: post-grad nodes its compile printed under its frame (a compile without OpSpecs, read from
#: the logged post-grad graph); else, nothing telling a line's nodes apart, the kernels it went
#: into, every op of theirs. A line with ops of several, the coarsest.
OpsFrom = Literal["opspecs", "post-grad nodes", "kernels"]
OPS_FROM: tuple[OpsFrom, ...] = get_args(OpsFrom)
#: What names a place: a source line, or (``model.modules``: no frame of its kernels' stack
#: traces is the user's) a module, by its path and class: module evidence, never a line (its
#: file ``model.modules.MODULE_FILE``, its line 0, its code the module's name ``0: Linear``).
Evidence = Literal["line", "module"]
EVIDENCE: tuple[Evidence, ...] = get_args(Evidence)
#: The records are as strict as the schema (types, value sets, bounds, no other field):
#: decoding a document into ``Comparison`` checks it as the schema does, at msgspec's speed.
Micros = Annotated[float, msgspec.Meta(ge=0)]
Count = Annotated[int, msgspec.Meta(ge=0)]
_STRICT = {"frozen": True, "forbid_unknown_fields": True}


class KernelUse(msgspec.Struct, **_STRICT):
    """One kernel call site a line went into."""

    kernel: str  # as the wrapper calls it
    call_site: str  # its mapping key name:N
    graph: str  # "<model> <compile id> <graph kind>"


class LineUse(msgspec.Struct, **_STRICT):
    """What one source line (or, ``evidence`` ``module``, one module) became in one compile."""

    file: str
    line: Count
    code: str
    kernels: list[KernelUse]
    #: the line's own OpSpecs (their debug handle's source is this line): ``op [iteration space]``
    opspecs: list[str]
    #: its own ATen ops (the nodes carrying this line), as ``ops_from`` says they were known
    ops: list[str]
    #: kernel time under this line in the side's traces; None: no trace was read
    time_us: Micros | None = None
    #: where ``ops`` come from; None: no kernel holding the line was read (a line only a trace placed)
    ops_from: OpsFrom | None = None
    #: ``module``: the place is a module (``Evidence``), its code the module's name
    evidence: Evidence = "line"


class Side(msgspec.Struct, **_STRICT):
    """Where one side's lines were read from."""

    name: str  # as named on the command line: PATH or PATH:COMPILE_ID
    graphs: list[str]  # the graphs read, "<model> <compile id> <graph kind>"
    traces: list[str]  # the profiler traces its times come from (none: no time)
    #: trace time that no call site of these graphs took (another compile's, or not placed)
    unplaced_us: Micros = 0.0


class CompileLines(msgspec.Struct, **_STRICT):
    """One side of a comparison: every source line the named compile made, with what it became."""

    side: Side
    lines: list[LineUse]


class LinePair(msgspec.Struct, **_STRICT):
    """One source line in A and in B (one of them None: the line is only in the other)."""

    status: Status
    changes: list[Change]
    file: str  # A's path of the file (B's for a line only in B)
    a: LineUse | None
    b: LineUse | None
    time_change_us: float | None = None  # B's time less A's, when both were timed


class FilePair(msgspec.Struct, **_STRICT):
    """How a source file of A was paired with one of B (None: no counterpart)."""

    a: str | None
    b: str | None


class Comparison(msgspec.Struct, **_STRICT):
    """What ``compare --format json`` prints (``schemas/provenance_compare``)."""

    version: Literal[1]
    same: bool  # every line the same: exit 0
    a: Side
    b: Side
    counts: dict[Status, Count]  # lines per status (every status, 0 too)
    files: list[FilePair]
    lines: list[LinePair]
