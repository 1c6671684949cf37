"""The viewer's document (``spyre-provenance view``, the page ``compile`` and ``open`` write)
as typed records: what ``viewer.data`` builds and ``viewer/assets/viewer.js`` reads.

``schemas/spyre_viewer_document/v1.schema.json`` states the same shape; a test holds the
two equal and checks built documents against both. The document keeps each name once and
refers to it by position: a call site's ``opspecs`` are positions in its graph's
``opspecs``, a line is a position in the document's ``lines`` (a ``[file position, line
number]`` pair into ``files``). Maps keyed by a position (``line_time_us``, ``lights.line``)
use it as text: JSON's keys. Fields a document has only sometimes (a trace's times,
torch-spyre's sidecar, a side of ``view A --compare B``) are left out where absent, never
null. Pure: msgspec only.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from spyre_provenance.model.compare_records import Comparison

VIEWER_DOCUMENT_VERSION: Literal[1] = 1
Position = Annotated[int, msgspec.Meta(ge=0)]
Micros = Annotated[float, msgspec.Meta(ge=0)]
#: What a click lights, compact: per kind in ``viewer.relation.ENTRY`` order (line, pre,
#: post, call, spec, bundle, then the call sites marked as containers), the positions lit;
#: the clicked element and trailing empty lists left out (a page of 10k kernels holds ~100k).
LitLists = list[list[Position]]
_STRICT = {"forbid_unknown_fields": True, "omit_defaults": True}


class SourceFile(msgspec.Struct, **_STRICT):
    """A source file the graphs' lines are in, as read at compile time."""

    path: str
    text: dict[str, str]  # line number (as text) -> the line, with context
    error: str | None  # why the file could not be read at compile time


class TraceSummary(msgspec.Struct, **_STRICT):
    """A profiled run's trace on the page (``view --trace``), as ``annotate --summary`` counts it."""

    path: str
    time_from: str  # which events were timed
    matched_events: int
    total_us: Micros  # the time of the matched events
    unmatched_events: int
    unmatched_us: Micros


class CallSite(msgspec.Struct, **_STRICT):
    """A kernel call site of a graph."""

    key: str  # as the wrapper calls it (``name:N``)
    post_nodes: list[Position]  # the post-grad nodes the mapping gives it
    lines: list[Position]  # its stack traces' lines (and torch-spyre's handles')
    opspecs: list[Position]
    wrapper_lines: list[str] | None  # its handle comment and call in the wrapper (None: not logged)
    spyre_key: str | msgspec.UnsetType = msgspec.UNSET  # torch-spyre's provenance key (its sidecar)
    spyre_handles: list[str] | msgspec.UnsetType = msgspec.UNSET  # torch-spyre's direct handles
    spyre_disagreements: list[str] | msgspec.UnsetType = msgspec.UNSET  # where the hook's handles differ
    modules: list[Position] | msgspec.UnsetType = msgspec.UNSET  # no user frame: the modules it ran in
    time_us: Micros | msgspec.UnsetType = msgspec.UNSET  # with a trace: its events' time
    calls: int | msgspec.UnsetType = msgspec.UNSET  # with a trace: its events


class OpSpecRow(msgspec.Struct, **_STRICT):
    """One OpSpec of a call site, as the OpSpec artifact records it, placed."""

    call: Position  # its call site
    index: Position  # its place among the call site's OpSpecs
    op: str | None
    is_reduction: bool | None
    iteration_space: Any
    buffer: str | None
    handle: str | None  # its debug handle's id (``handles``)
    missing_handle: str | None  # why it has none
    lines: list[Position]  # its handle's source lines
    post_nodes: list[Position]  # the post-grad nodes its handle names
    bundle: Position | None  # its SuperDSC bundle
    bundle_is_its_own: bool  # the bundle's debug_handle_ is this OpSpec's (a cache hit may serve another's)
    handle_names_other: str | None  # where its handle names another op or line than its nodes: theirs, why


class BundleRow(msgspec.Struct, **_STRICT):
    """A SuperDSC bundle, once per bundle folder and OpSpec index."""

    path: str  # ``<folder>/sdsc_<i>.json``
    id: str | None  # its debug_handle_'s id
    opspecs: list[Position]  # the OpSpecs it is the bundle of
    handle_id_only: bool  # its debug_handle_ is theirs: the text keeps only the id
    text: str  # compact JSON, cut
    cut: bool


class ModuleRow(msgspec.Struct, **_STRICT):
    """A module named by the call sites none of whose frames is the user's (``model.modules``)."""

    name: str
    module_class: str
    ran_calls: list[Position]  # the call sites whose ops it ran
    enclosing_calls: list[Position]  # those it encloses


class LoggedCode(msgspec.Struct, **_STRICT):
    """A graph's code as logged, each node on the line tlparse finds it by."""

    text: str
    node_lines: list[int]  # per node, its 0-based line in ``text``; -1: none


class GraphCode(msgspec.Struct, **_STRICT):
    pre: LoggedCode | None  # None: no log beside the artifacts
    post: LoggedCode | None


class Lights(msgspec.Struct, **_STRICT):
    """What a click on each element lights (``viewer.relation``, the one rule), per kind."""

    line: dict[str, LitLists]  # by the line's position in the document's ``lines``
    pre: list[LitLists]
    post: list[LitLists]
    call: list[LitLists]
    spec: list[LitLists]
    bundle: list[LitLists]


class ViewerGraph(msgspec.Struct, **_STRICT):
    """One graph (a graph folder, or a graph of a plain TORCH_TRACE log)."""

    label: str
    model: str
    rank: int | None
    pid: int | None  # the process of a ``run`` (None: a compile's own folder)
    compile_id: str
    kind: str
    folder: str  # relative to the folder viewed
    complete: bool | None  # the diagnostics' judgement (None: no diagnostics)
    per_op: str | None  # the ATen op of a per-op (eager) compile
    pre: list[str]  # pre-grad node names
    post: list[str]  # post-grad node names
    pre_to_post: list[list[Position]]  # per pre-grad node, its post-grad nodes
    calls: list[CallSite]
    opspecs: list[OpSpecRow]
    handles: dict[str, Any]  # the debug handles the OpSpecs name, as the OpSpec artifact holds them
    bundles: list[BundleRow]
    code: GraphCode
    modules: list[ModuleRow]
    lights: Lights
    side: Literal["a", "b"] | msgspec.UnsetType = msgspec.UNSET  # of ``view A --compare B``
    line_time_us: dict[str, Micros] | msgspec.UnsetType = msgspec.UNSET  # with a trace: per line position
    module_time_us: dict[str, Micros] | msgspec.UnsetType = msgspec.UNSET  # per module position
    launched_time_us: dict[str, Micros] | msgspec.UnsetType = msgspec.UNSET  # per line recorded at launch


class ViewerDocument(msgspec.Struct, **_STRICT):
    """The page's one JSON document."""

    version: Literal[1]
    out: str  # what was viewed, as named
    files: list[SourceFile]
    lines: list[tuple[Position, Position]]  # [file position, line number]
    graphs: list[ViewerGraph]
    trace: TraceSummary | None
    compare: Comparison | msgspec.UnsetType = msgspec.UNSET  # ``view A --compare B``: compare's own
    #: with ``compare``: how its text marks a place named by its module (``model.modules``'s
    #: ``MODULE_MARK``), so the page prints compare's words, not a copy of them
    module_mark: str | msgspec.UnsetType = msgspec.UNSET
