"""tlparse's provenance pages of a TORCH_TRACE log: one per compile folder *and* graph.

tlparse builds a compile folder's provenance page from the **last** pre-grad graph,
post-grad graph, output code and node mapping logged under that compile id. A training
compile logs forward and backward under one compile id, so tlparse's own page shows only
the backward graph. This module gives every graph its page: for a compile folder holding
several graphs, it writes one log per graph (the records of that compile id up to the end
of that graph, minus the earlier graphs' post-grad graphs, code and mappings) and runs
tlparse on each. Records are copied byte for byte, envelopes and payloads alike, so every
``has_payload`` MD5 stays valid. Compile folders with one graph use tlparse's page of the
whole log, the same page ``tlparse -i`` gives, and so does a folder's last graph when that
page already is its own (it logs again every kind of artifact the earlier graphs did, and
tlparse keeps the last of each).

No torch import: this reads and writes files and runs the ``tlparse`` binary.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import msgspec

from spyre_provenance.logs.tracelog import GLOG_PREFIX, GraphSplitter, compile_id, logs_nothing, record_name
from spyre_provenance.model.layout import Layout, ProcessLayouts
from spyre_provenance.model.names import (
    DIAGNOSTICS,
    KERNEL_STACK_TRACES,
    NODE_MAPPINGS,
    OPSPEC_DEBUG_HANDLES,
    OUTPUT_CODE,
    POST_GRAD_GRAPHS,
    PRE_GRAD_GRAPH,
)

INSTALL_HINT = "pip install 'spyre-provenance[tlparse]'"

#: AOTInductor's wrapper code: a ``graph_dump`` record (named by its ``name``), where a
#: ``torch.compile`` logs ``inductor_output_code``.
AOT_WRAPPER_CODE = "inductor_aot_wrapper_code"

#: What tlparse (or this project) reads per graph: an earlier graph's copy must not win.
GRAPH_ARTIFACTS = frozenset(
    {*POST_GRAD_GRAPHS, OUTPUT_CODE, AOT_WRAPPER_CODE, NODE_MAPPINGS, KERNEL_STACK_TRACES, OPSPEC_DEBUG_HANDLES}
)

#: tlparse's compile id (its ``compile_directory.json`` key, folder ``-_-_-_-``) for records
#: whose envelope has none. AOTInductor compiles log so, outside any Dynamo compile: a
#: graph's records there (below) are read as that "compile"'s, and its page is the folder's.
NO_COMPILE_ID = "[-/-]"
_NO_COMPILE_ID_GRAPH_RECORDS = GRAPH_ARTIFACTS | {DIAGNOSTICS, PRE_GRAD_GRAPH}

_AOT_ID = re.compile(r"#\s*AOT ID:\s*\['[^']*?_(?P<kind>inference|forward|backward)'\]")


class TlparseError(Exception):
    """tlparse could not be run or failed; ``str(exc)`` is one line."""


_BINARY = "tlparse"


def tlparse_binary() -> str | None:
    """tlparse from the PyPI extra: beside this Python first (an unactivated venv), else PATH."""
    beside = Path(sys.executable).parent / _BINARY
    return str(beside) if beside.exists() else shutil.which(_BINARY)


def run_tlparse_raw(tlparse: str, log: Path, out: Path) -> None:
    """``tlparse LOG -i --no-browser -o OUT --overwrite``; raises TlparseError on failure.

    ``--overwrite`` makes tlparse delete OUT first: callers choose OUT with care.
    """
    _run_tlparse(tlparse, [str(log)], out, what=str(log))


def _run_tlparse(tlparse: str, inputs: list[str], out: Path, what: str) -> None:
    try:
        completed = subprocess.run(
            [tlparse, *inputs, "-i", "--no-browser", "-o", str(out), "--overwrite"],
            capture_output=True,
            text=True,
        )
    except OSError as exc:
        raise TlparseError(f"cannot run {tlparse}: {exc.strerror or exc}") from None
    if completed.returncode != 0:
        detail = " ".join((completed.stderr or completed.stdout).split())[:500]
        raise TlparseError(f"tlparse failed on {what} (exit {completed.returncode}): {detail}")


# --- the log, record by record -------------------------------------------------------------


class RawRecord(msgspec.Struct):
    """One record as bytes: its envelope line, its payload lines, anything tlparse skips."""

    line: int  # 1-based line of the envelope (0: lines before the first envelope)
    name: str | None
    compile_id: str | None  # "[0/0]" as tlparse's compile_directory.json keys it
    data: bytes
    first_payload_line: str = ""
    #: a provenance record logged with no payload (``tracelog.logs_nothing``): no mapping
    empty: bool = False


def read_records(log: Path) -> list[RawRecord]:
    """Split a log into records without changing a byte (blank and damaged lines stay with
    the record before them)."""
    records: list[RawRecord] = []
    current = RawRecord(0, None, None, b"")
    chunks: list[bytes] = []
    seen_payload = False
    with open(log, "rb") as fh:
        for number, raw in enumerate(fh, 1):
            line = raw.rstrip(b"\r\n")
            prefix = None if line.startswith(b"\t") else GLOG_PREFIX.match(line)
            if prefix is None:
                if line.startswith(b"\t") and not seen_payload:
                    current.first_payload_line = line[1:].decode("utf-8", "replace")
                    seen_payload = True
                chunks.append(raw)
                continue
            if chunks:
                current.data = b"".join(chunks)
                records.append(current)
            chunks, seen_payload = [raw], False
            name, cid, empty = _name_and_id(line[prefix.end() :])
            current = RawRecord(number, name, cid, b"", empty=empty)
    if chunks:
        current.data = b"".join(chunks)
        records.append(current)
    return records


def _name_and_id(envelope_text: bytes) -> tuple[str | None, str | None, bool]:
    """The record's name, compile id, and whether it is an empty provenance record."""
    try:
        envelope = json.loads(envelope_text)
    except (ValueError, UnicodeDecodeError):
        return None, None, False
    if not isinstance(envelope, dict):
        return None, None, False
    name, cid = record_name(envelope), compile_id(envelope)
    dump = envelope.get("graph_dump")
    if name == "graph_dump" and isinstance(dump, dict) and isinstance(dump.get("name"), str):
        name = dump["name"]  # AOTInductor's code: inductor_aot_wrapper_code, inductor_aot_kernel_code
    if cid is None and name in _NO_COMPILE_ID_GRAPH_RECORDS:
        cid = NO_COMPILE_ID  # an AOTInductor compile's graph: where tlparse files it
    return name, cid, logs_nothing(envelope)


class LogGraph(msgspec.Struct):
    """One compiled graph of a log: its compile id, position and records."""

    compile_id: str
    position: int  # 0-based among the graphs of its compile id
    first: int  # index into the record list of the graph's first record (GraphSplitter)
    last: int  # index of its last record (the compile id's tail goes to its last graph)
    code_kind: str | None = None  # inference | forward | backward (the code's "# AOT ID:" line)
    logged_kind: str | None = None  # what the hook's diagnostics say (its graph folder's kind)
    has_code: bool = False
    has_mapping: bool = False

    @property
    def kind(self) -> str | None:
        """The graph's kind as its graph folder names it (the hook's diagnostics, from
        Inductor's own flag), else as the code's ``# AOT ID:`` line does. The two differ:
        AOTAutograd names a graph ``_forward`` when it traced it for autograd, and Inductor
        may still compile it as an inference graph."""
        return self.logged_kind or self.code_kind


def _splitter_name(record: RawRecord) -> str | None:
    """The record's name as ``GraphSplitter`` reads it: AOTInductor's wrapper code is the
    graph's code, and, since every AOTInductor compile of a process shares one compile id,
    its pre-grad graph begins the next graph."""
    if record.name == AOT_WRAPPER_CODE:
        return OUTPUT_CODE
    if record.compile_id == NO_COMPILE_ID and record.name == PRE_GRAD_GRAPH:
        return POST_GRAD_GRAPHS[0]
    return record.name


def _diagnosed_kind(record: RawRecord) -> str | None:
    """The graph kind the hook's diagnostics record holds (its one-line JSON payload)."""
    try:
        value = json.loads(record.first_payload_line)
    except ValueError:
        return None
    kind = value.get("graph") if isinstance(value, dict) else None
    return kind if isinstance(kind, str) else None


def graphs_of(records: list[RawRecord], *, with_code: bool = True) -> list[LogGraph]:
    """The graphs of each compile id that have output code (``with_code`` False: also those
    that have none, a backward whose compile failed after its post-grad graph was logged),
    in log order.

    Split by ``tracelog.GraphSplitter``, the rule ``logs.graphs.read_log_graphs`` uses.
    """
    graphs: list[LogGraph] = []
    current: dict[str, LogGraph] = {}
    tail: dict[str, int] = {}  # compile id -> index of its last record
    splitter = GraphSplitter()
    for index, record in enumerate(records):
        cid, name = record.compile_id, record.name
        if cid is None:
            continue
        tail[cid] = index
        position, starts = splitter.place(cid, _splitter_name(record))
        if starts:
            graph = current[cid] = LogGraph(cid, position, index, index)
            graphs.append(graph)
        graph = current[cid]
        graph.last = index
        if name in (OUTPUT_CODE, AOT_WRAPPER_CODE):
            graph.has_code = True
            kind = _AOT_ID.search(record.first_payload_line)
            graph.code_kind = kind["kind"] if kind else None
        elif name == NODE_MAPPINGS and not record.empty:
            graph.has_mapping = True
        elif name == DIAGNOSTICS:
            graph.logged_kind = _diagnosed_kind(record)
    for graph in current.values():  # metrics, guards after the last graph stay with it
        graph.last = tail[graph.compile_id]
    return [g for g in graphs if g.has_code or not with_code]


def graph_log(records: list[RawRecord], graphs: list[LogGraph], graph: LogGraph) -> bytes:
    """A log holding what tlparse needs to render ``graph`` as its compile folder's page.

    Kept: records without a compile id; the compile id's records up to the graph's end,
    except the post-grad graphs, code and provenance artifacts of its earlier graphs.
    Dropped: other compile ids, and everything of this one after the graph.
    """
    earlier = [g for g in graphs if g.compile_id == graph.compile_id and g.position < graph.position]
    chunks = []
    for index, record in enumerate(records):
        if record.compile_id is None:
            chunks.append(record.data)
            continue
        dropped = record.compile_id != graph.compile_id or index > graph.last
        earlier_graphs = record.name in GRAPH_ARTIFACTS and any(g.first <= index <= g.last for g in earlier)
        if not (dropped or earlier_graphs):
            chunks.append(record.data)
    return b"".join(chunks)


# --- pages -----------------------------------------------------------------------------------


class GraphPage(msgspec.Struct):
    compile_id: str  # "[0/0]"; NO_COMPILE_ID: AOTInductor's
    position: int
    kind: str | None
    page: Path
    has_mapping: bool
    rank: int | None = None  # of a multi-rank report
    has_code: bool = True  # False: tlparse's page of a compile that compiled no graph

    @property
    def label(self) -> str:
        if not self.has_code:
            graph = f"{self.compile_id} no compiled graph"
        elif self.compile_id == NO_COMPILE_ID:
            graph = f"AOTInductor {self.kind or 'graph'}" + (f" {self.position}" if self.position else "")
        else:
            graph = f"{self.compile_id} {self.kind or f'graph {self.position}'}"
        return graph if self.rank is None else f"rank {self.rank} {graph}"

    @property
    def note(self) -> str:
        """What a line listing the page says beside it: why nothing on it is linked."""
        if not self.has_code:
            return "  (no compiled code logged for this compile: nothing to link)"
        return "" if self.has_mapping else "  (no provenance mapping logged: nothing is linked)"


def render_pages(tlparse: str, log: Path, out: Path) -> list[GraphPage]:
    """tlparse on the whole log into ``out``, plus one log and run per graph where a compile
    folder holds several graphs (under ``out/graphs/``). One page per graph, in log order.
    """
    run_tlparse_raw(tlparse, log, out)
    return _graph_pages(tlparse, log, out)


class MultiRankReport(msgspec.Struct):
    landing: Path  # tlparse's multi-rank index.html
    pages: list[GraphPage]  # every rank's, rank by rank


#: How ``tlparse --all-ranks-html`` finds the ranks of a folder: files named
#: ``dedicated_log_torch_trace_rank_<r>[_...].log`` (torch's own names for them).
RANK_LOG = "dedicated_log_torch_trace_rank_{rank}_{stem}.log"


def render_all_ranks(tlparse: str, logs: dict[int, Path], out: Path) -> MultiRankReport:
    """tlparse's multi-rank report of one log per rank into ``out``: its landing page
    (``out/index.html``) and each rank's pages in ``out/rank_<r>/``, plus one page per
    graph where a compile folder holds several (as ``render_pages``).

    tlparse reads the ranks from file names in one folder; each rank's log lives in its
    own rank folder under the name ``compile`` gave it, so the folder tlparse reads is a
    temporary one of links to them.
    """
    with tempfile.TemporaryDirectory(prefix="spyre-provenance-ranks-") as stage:
        for rank, log in sorted(logs.items()):
            link = Path(stage) / RANK_LOG.format(rank=rank, stem=log.stem.replace("_", "-"))
            try:
                link.symlink_to(log.resolve())
            except OSError:  # no symlinks here: a copy reads the same
                shutil.copyfile(log, link)
        _run_tlparse(tlparse, [stage, "--all-ranks-html"], out, what=f"the ranks {', '.join(map(str, sorted(logs)))}")
    pages: list[GraphPage] = []
    for rank, log in sorted(logs.items()):
        pages += [msgspec.structs.replace(p, rank=rank) for p in _graph_pages(tlparse, log, out / f"rank_{rank}")]
    return MultiRankReport(out / "index.html", pages)


def _graph_pages(tlparse: str, log: Path, out: Path) -> list[GraphPage]:
    """The page of each graph of ``log``, whose tlparse output is ``out``; compile folders
    with several graphs get one log and tlparse run per graph (``out/graphs/``), but for a
    last graph whose page the whole log's already is (``_whole_log_page_is``)."""
    folders = _compile_folders(out)
    records = read_records(log)
    graphs = graphs_of(records)
    # a graph without code still has its post-grad graph in the folder (a backward that
    # failed after its forward compiled): tlparse's page of the folder would read that
    # one, so the forward gets a log and a page of its own
    every = graphs_of(records, with_code=False)
    pages: list[tuple[int, GraphPage]] = []  # (index of the graph's first record, its page)
    for graph in graphs:
        folder = folders.get(graph.compile_id)
        if folder is None:
            continue
        siblings = [g for g in every if g.compile_id == graph.compile_id]
        if len(siblings) == 1 or _whole_log_page_is(records, siblings, graph):
            page = out / f"provenance_tracking_{folder}.html"
        else:
            name = f"{folder}_{graph.kind or 'graph'}"
            if sum(1 for g in siblings if g.kind == graph.kind) > 1:
                name += f"_{graph.position}"
            split_log = out / "graphs" / f"{name}.log"
            split_log.parent.mkdir(parents=True, exist_ok=True)
            split_log.write_bytes(graph_log(records, graphs, graph))
            run_tlparse_raw(tlparse, split_log, out / "graphs" / name)
            page = out / "graphs" / name / f"provenance_tracking_{folder}.html"
        if page.exists():
            listed = GraphPage(graph.compile_id, graph.position, graph.kind, page, graph.has_mapping)
            pages.append((graph.first, listed))
    return _in_log_order(records, pages, _pages_of_no_graph(out, folders, every))


def _pages_of_no_graph(out: Path, folders: dict[str, str], every: list[LogGraph]) -> list[GraphPage]:
    """tlparse's pages of the compiles that compiled no graph (a Dynamo trace that
    ``torch.export`` handed to AOTInductor, a frame Dynamo gave up on): tlparse writes one for
    every compile id, so they are listed too, as what they are. The page of the records with
    no compile id is only listed as AOTInductor's, when it holds an AOTInductor graph."""
    compiled = {g.compile_id for g in every if g.has_code}
    return [
        GraphPage(cid, 0, None, page, has_mapping=False, has_code=False)
        for cid, folder in folders.items()
        if cid not in compiled
        and cid != NO_COMPILE_ID
        and (page := out / f"provenance_tracking_{folder}.html").exists()
    ]


def _in_log_order(
    records: list[RawRecord], graph_pages: list[tuple[int, GraphPage]], no_graph: list[GraphPage]
) -> list[GraphPage]:
    """The pages in log order: a graph's where the graph begins, a compile's that compiled
    no graph where its compile id first appears. Not grouped by compile id: a training
    compile's backward is compiled when the first backward runs, after the graphs of the
    frames that ran later (a graph break's ``[0/0_1]`` forward, ``[1/0]`` forward and
    backward, then ``[0/0_1]`` backward), and the pages go in the order of the graphs: the
    order of the graph folders, of the summary's graphs and of ``read_log_graphs``."""
    first: dict[str | None, int] = {}
    for index, record in enumerate(records):
        first.setdefault(record.compile_id, index)
    keyed = graph_pages + [(first.get(page.compile_id, len(records)), page) for page in no_graph]
    return [page for _, page in sorted(keyed, key=lambda item: item[0])]


def _whole_log_page_is(records: list[RawRecord], siblings: list[LogGraph], graph: LogGraph) -> bool:
    """Whether tlparse's page of the whole log already is ``graph``'s own page: ``graph`` is
    its compile id's last graph and logs again every kind of artifact its earlier graphs
    logged, so tlparse, which keeps the last of each, reads ``graph``'s copies alone (its own
    log would give the same page: one tlparse run saved, the costliest part of ``run``'s end)."""
    if graph.position != siblings[-1].position:  # siblings: graphs_of(with_code=False)
        return False

    def kinds(g: LogGraph) -> set[str | None]:
        return {r.name for r in records[g.first : g.last + 1] if r.name in GRAPH_ARTIFACTS}

    return set().union(*map(kinds, siblings[:-1])) <= kinds(graph)


def _compile_folders(out: Path) -> dict[str, str]:
    """Compile id ("[0/0]") -> tlparse's folder name ("-_0_0_0"), from its own index."""
    try:
        directory = json.loads((out / "compile_directory.json").read_text())
    except (OSError, ValueError):
        return {}
    folders: dict[str, str] = {}
    for cid, entry in directory.items() if isinstance(directory, dict) else ():
        for artifact in (entry or {}).get("artifacts", ()):
            url = artifact.get("url") if isinstance(artifact, dict) else None
            if isinstance(url, str) and "/" in url:
                folders[cid] = url.split("/", 1)[0]
                break
    return folders


def find_logs(target: Path) -> list[Path]:
    """The TORCH_TRACE logs of a compile output folder, a trace folder, or a log file."""
    if target.is_file():
        return [target]
    if not target.is_dir():
        return []
    return Layout(target).trace_logs() or sorted(p for p in target.glob("*.log") if p.is_file())


def find_rank_logs(target: Path) -> dict[str, dict[int, Path]]:
    """The logs of a ``compile --ranks N`` run folder (``rank<r>/trace/*.log``), or of the
    torchrun ranks of a ``run`` folder (``process_logs``), by model (the log's name)
    and rank; {} for any other target."""
    found: dict[str, dict[int, Path]] = {}
    for rank, ranked in Layout(target).ranks():
        for log in ranked.trace_logs():
            found.setdefault(log.stem, {})[rank] = log
    for stem, logs in process_logs(Layout(target).processes())[0].items():
        for rank, log in logs.items():
            found.setdefault(stem, {}).setdefault(rank, log)
    return {stem: dict(sorted(logs.items())) for stem, logs in sorted(found.items())}


def process_logs(
    processes: ProcessLayouts,
) -> tuple[dict[str, dict[int, Path]], list[tuple[str, Path]]]:
    """The logs of a ``run`` folder's processes (``Layout.processes``: each
    ``<program>_rank<r>_..._pid<p>/trace/*.log``): those of torchrun's ranks by program and
    rank (one multi-rank report each), and every other (a process without a rank, or a
    second one of a rank: a worker it started) with its folder's name."""
    ranked: dict[str, dict[int, Path]] = {}
    others: list[tuple[str, Path]] = []
    for process, layout in processes:
        for log in layout.trace_logs():
            ranks = ranked.setdefault(log.stem, {})
            if process.rank is not None and process.rank not in ranks:
                ranks[process.rank] = log
            else:
                others.append((layout.out.name, log))
    return {stem: logs for stem, logs in ranked.items() if logs}, others


def looks_like_tlparse_output(folder: Path) -> bool:
    """tlparse's index files, in the folder or (one output per log) in its subfolders."""
    return any(
        (f / "compile_directory.json").is_file() or (f / "index.html").is_file()
        for f in [folder, *(p for p in folder.iterdir() if p.is_dir())]
    )
