"""Every kernel call site that a set of ``--out`` folders and TORCH_TRACE logs records.

An ``--out`` holds each model's TORCH_TRACE log (``trace/<model>.log``), read with the
project's one log reader (``logs.graphs.read_log_graphs``: the graph split, MD5 checks,
strict JSON), and its SuperDSC bundles (``sdsc/<model>/inductor-spyre/<folder>/``, the
folder each call site's OpSpec artifact records). A folder with graph
folders but no log (a copied ``graph_*`` tree) is read from its artifact files. A plain
TORCH_TRACE log that torch wrote with provenance tracking on is read the same way.

Pure: no torch.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from spyre_provenance.base.errors import UnusableInput
from spyre_provenance.logs import tracelog
from spyre_provenance.logs.graphs import read_log_graphs
from spyre_provenance.model import folders, jsonio
from spyre_provenance.model.detect import artifact_for_filename, split_key
from spyre_provenance.model.layout import NO_LOG_FOLDERS, Layout
from spyre_provenance.model.names import (
    DIAGNOSTICS,
    KERNEL_STACK_TRACES,
    MODEL_LABEL,
    NODE_MAPPINGS,
    OPSPEC_DEBUG_HANDLES,
    SPYRE_SIDECAR,
    artifact_file,
)
from spyre_provenance.runtime import kernel_names

DEFAULT_PATH = Path("out")
#: how deep a folder is searched for torch-spyre's own sidecars (``spyre_provenance.json``)
_SIDECAR_DEPTH = 6
_AOT_ID = re.compile(r"^# AOT ID: \['[^']*_(?P<kind>inference|forward|backward)'\]", re.MULTILINE)
# folders an --out holds that are no source of call sites (tlparse copies the log as raw.log)
_SKIPPED_FOLDERS = NO_LOG_FOLDERS
_MAX_DEPTH = 4  # ./out/<model>/rank0/trace/<model>.log


@dataclasses.dataclass
class IndexedGraph:
    """One compiled graph: where it came from and the artifacts lookup reads."""

    model: str
    compile_id: str  # "0/0"
    graph: str  # inference | forward | backward | unknown
    origin: str
    mapping: dict[str, Any]
    stack_traces: dict[str, Any]
    opspecs: dict[str, Any] | None = None
    output_code: str | None = None
    post_grad_graph: str | None = None
    bundle_root: Path | None = None  # sdsc/<model>/ (model.layout.kernel_bundle_folder)
    #: torch-spyre's own provenance logged in this graph's compile (PR #3449's sidecar)
    spyre_provenance: dict[str, Any] | None = None
    #: the hook's diagnostics of the graph (``spyre_provenance_diagnostics``), where logged
    diagnostics: dict[str, Any] | None = None
    #: call site -> the kernel provenance key torch-spyre's sidecar gives it (``KernelIndex``)
    sidecar_keys: dict[str, str] = dataclasses.field(default_factory=dict)
    #: call site -> the ids of its kernel's handles in that sidecar, fused constituents too
    sidecar_handles: dict[str, set[str]] = dataclasses.field(default_factory=dict)
    view: Any = dataclasses.field(default=None, repr=False, compare=False)  # lookup.GraphView, made on first use

    @property
    def label(self) -> str:
        """``<model> <compile id> <graph kind>``: how annotated events, the time summary and
        ``compare`` name this graph (so one can join what another printed)."""
        return f"{self.model} {self.compile_id} {self.graph}"

    @property
    def keys(self) -> list[str]:
        sites = self.mapping.get("cppCodeToPost")
        return list(sites) if isinstance(sites, dict) else []

    @property
    def bundles(self) -> dict[str, dict[str, Any]]:
        """Call site -> its bundle's ``provenance_key`` and ``folder`` (OpSpec artifact v2)."""
        found = (self.opspecs or {}).get("bundles")
        return found if isinstance(found, dict) else {}


Site = tuple[int, str]  # (graph position in the index, mapping key name:N)


@dataclasses.dataclass
class KernelIndex:
    graphs: list[IndexedGraph]
    # kernel name -> (graph position, key) for every call site, in compile and call order
    by_name: dict[str, list[Site]] = dataclasses.field(default_factory=dict)
    # torch-spyre's kernel provenance key -> its call sites
    by_provenance_key: dict[str, list[Site]] = dataclasses.field(default_factory=dict)
    # how a device event's name ends once acelyzer renamed it ("_" + key, renamed) -> call sites
    by_renamed_key: dict[str, list[Site]] = dataclasses.field(default_factory=dict)
    # bundle folder name, and that name without its <uuid8>_ prefix -> its call sites
    by_folder: dict[str, list[Site]] = dataclasses.field(default_factory=dict)
    #: torch-spyre's own sidecars found beside the logs (``spyre_provenance.json``), valid ones
    sidecars: list[dict[str, Any]] = dataclasses.field(default_factory=list)

    def __post_init__(self) -> None:
        for position, graph in enumerate(self.graphs):
            bundles = graph.bundles
            graph.sidecar_keys, graph.sidecar_handles = sidecar_evidence(graph, self.sidecars)
            for key in graph.keys:
                name, _ = split_key(key)
                self.by_name.setdefault(name or key, []).append((position, key))
                bundle = bundles.get(key)
                bundle = bundle if isinstance(bundle, dict) else {}
                # the hook's record of the key, else torch-spyre's own (more evidence, never less)
                for provenance_key in dict.fromkeys((bundle.get("provenance_key"), graph.sidecar_keys.get(key))):
                    if isinstance(provenance_key, str):
                        self.by_provenance_key.setdefault(provenance_key, []).append((position, key))
                        tail = kernel_names.renamed("_" + provenance_key)
                        self.by_renamed_key.setdefault(tail, []).append((position, key))
                folder = bundle.get("folder")
                if isinstance(folder, str):
                    for form in dict.fromkeys((folder, kernel_names.without_uuid(folder))):
                        if form:
                            self.by_folder.setdefault(form, []).append((position, key))

    def sites_of_renamed_event(self, name: str) -> list[Site]:
        """The call sites whose key ends ``name`` once acelyzer renamed it (``names.renamed``)."""
        return [s for tail, sites in self.by_renamed_key.items() if name.endswith(tail) for s in sites]


def sidecar_for(graph: IndexedGraph, sidecars: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The torch-spyre sidecar that holds this graph's call sites: the one its compile logged,
    else the first of the sidecar files with a compile holding them (``spyre_sidecar.cross_check``'s
    rule); None when none does. Only valid sidecars are read."""
    from spyre_provenance.validate import schemas, spyre_sidecar

    logged = [graph.spyre_provenance] if graph.spyre_provenance is not None else []
    for doc in logged + sidecars:
        if doc is graph.spyre_provenance and not schemas.validate(doc, SPYRE_SIDECAR).ok:
            continue
        chosen = spyre_sidecar.occurrences_for(set(graph.keys), doc)
        if any(key in chosen for key in graph.keys):
            return doc
    return None


def sidecar_evidence(graph: IndexedGraph, sidecars: list[dict[str, Any]]) -> tuple[dict[str, str], dict[str, set[str]]]:
    """Call site -> the key torch-spyre's own provenance gives it, and its handle ids (fused
    constituents too), from the sidecar ``sidecar_for`` chooses."""
    from spyre_provenance.validate import spyre_sidecar

    doc = sidecar_for(graph, sidecars)
    if doc is None:
        return {}, {}
    chosen = spyre_sidecar.occurrences_for(set(graph.keys), doc)
    keys = {key: chosen[key]["identityKey"] for key in graph.keys if key in chosen}
    identities = doc["kernelIdentities"]
    handles = {
        key: spyre_sidecar.handle_closure(identities[k]["directHandleIds"], doc["handles"]) for key, k in keys.items()
    }
    return keys, handles


def sidecars_under(folder: Path) -> list[dict[str, Any]]:
    """The valid torch-spyre sidecars found under ``folder`` (an invalid one is passed over)."""
    return [doc for file in _sidecar_files(folder) for doc in _sidecar(file, explicit=False)]


def build(paths: Iterable[str | os.PathLike[str]] = ()) -> KernelIndex:
    """The index of every graph under ``paths`` (default ``./out``). Raises UnusableInput
    for a path that does not exist, a file that is no TORCH_TRACE log, or when nothing
    holding provenance is found."""
    folders = [Path(p) for p in paths] or [DEFAULT_PATH]
    graphs: list[IndexedGraph] = []
    sidecars: list[dict[str, Any]] = []
    for path in folders:
        if not path.exists():
            hint = " (compile with --out, or name one with --from)" if path == DEFAULT_PATH else ""
            raise UnusableInput(str(path), f"no such file or folder{hint}")
        if path.is_file() and artifact_for_filename(path.name) == SPYRE_SIDECAR:
            sidecars += _sidecar(path, explicit=True)
        elif path.is_file():
            if not tracelog.looks_like_trace_log(path):
                raise UnusableInput(str(path), "not a TORCH_TRACE log (no glog-prefixed record) nor a folder")
            graphs += _log_graphs(path)
        else:
            graphs += _folder_graphs(path)
            sidecars += sidecars_under(path)
    if not any(g.keys for g in graphs):
        where = ", ".join(map(str, paths))
        logs = [p for p in folders if p.is_file()] + [log for p in folders if p.is_dir() for log in _trace_logs(p)]
        why = tracelog.empty_records_aside(logs)
        raise UnusableInput(
            where, f"no kernel call sites found: no TORCH_TRACE log or graph folder with a node mapping{why}"
        )
    return KernelIndex(graphs, sidecars=sidecars)


def _sidecar_files(folder: Path) -> Iterator[Path]:
    """torch-spyre's sidecars under ``folder`` (by the table's name pattern, not diagnostics)."""
    for root, dirs, files in os.walk(folder):
        depth = len(Path(root).relative_to(folder).parts)
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and depth < _SIDECAR_DEPTH)
        yield from (Path(root, f) for f in sorted(files) if artifact_for_filename(f) == SPYRE_SIDECAR)


def _sidecar(path: Path, *, explicit: bool) -> list[dict[str, Any]]:
    """A sidecar's document when it is valid. Named with --from, an invalid one is unusable
    input (validate says what is wrong); found in a folder, it is passed over."""
    from spyre_provenance.validate import schemas

    doc = jsonio.load_json(jsonio.read_file(path), location=str(path))
    report = schemas.validate(doc, SPYRE_SIDECAR, location=str(path)) if isinstance(doc, dict) else None
    if report is not None and report.ok:
        return [doc]
    if explicit:
        raise UnusableInput(str(path), "not a valid spyre_provenance sidecar (spyre-provenance validate says why)")
    return []


def _folder_graphs(folder: Path) -> list[IndexedGraph]:
    logs = sorted(_trace_logs(folder))
    graphs = [g for log in logs for g in _log_graphs(log)]
    if not logs:
        graphs += _graph_folder_graphs(folder)
    return graphs


def _trace_logs(folder: Path) -> Iterator[Path]:
    for root, dirs, files in os.walk(folder):
        depth = len(Path(root).relative_to(folder).parts)
        dirs[:] = sorted(d for d in dirs if d not in _SKIPPED_FOLDERS and depth < _MAX_DEPTH)
        for name in files:
            path = Path(root) / name
            if tracelog.is_trace_log(path):
                yield path


def _log_graphs(log: Path) -> list[IndexedGraph]:
    """The graphs of one log; an --out's ``trace/<model>.log`` names its model and bundles."""
    model = _logged_label(log) or log.stem
    owner = Layout.of_log(log, model)
    bundles = owner.bundle_root if owner is not None else None
    found = []
    for logged in read_log_graphs(log):
        if not isinstance(logged.node_mappings, dict):
            continue
        found.append(
            IndexedGraph(
                model=model,
                compile_id=logged.compile_id.strip("[]"),
                graph=graph_kind(logged.diagnostics, logged.output_code),
                origin=str(log),
                mapping=logged.node_mappings,
                stack_traces=logged.stack_traces or {},
                opspecs=logged.opspec_handles,
                output_code=logged.output_code,
                post_grad_graph=logged.post_grad_graph,
                bundle_root=bundles if bundles is not None and bundles.is_dir() else None,
                spyre_provenance=logged.spyre_provenance,
                diagnostics=logged.diagnostics if isinstance(logged.diagnostics, dict) else None,
            )
        )
    return found


def _logged_label(log: Path) -> str | None:
    """The label the hook logged (``MODEL_LABEL``), when the log's graphs share one."""
    labels = set()
    for _, _, payload in tracelog.artifact_payloads(log, {MODEL_LABEL}):
        doc = jsonio.load_json(payload, location=f"{log} {MODEL_LABEL}")
        if isinstance(doc, dict) and isinstance(doc.get("label"), str):
            labels.add(doc["label"])
    return labels.pop() if len(labels) == 1 else None


def graph_kind(diagnostics: dict[str, Any] | None, output_code: str | None, folder: str | None = None) -> str:
    """The hook's diagnostics say; else the wrapper's first line (``# AOT ID: ['0_forward']``);
    else the graph folder's name."""
    if isinstance(diagnostics, dict) and isinstance(diagnostics.get("graph"), str):
        return diagnostics["graph"]
    match = _AOT_ID.search(output_code or "")
    if match:
        return match["kind"]
    return folders.kind_of_folder(folder) if folder is not None else "unknown"


def _graph_folder_graphs(folder: Path) -> list[IndexedGraph]:
    """Graph folders without their log: the artifact files alone (no wrapper code)."""
    found = []
    candidates = [folder] if (folder / artifact_file(NODE_MAPPINGS)).is_file() else []
    # os.walk, not rglob: a compile writing into ``folder`` meanwhile may remove a folder
    # between its parent's listing and its own, which os.walk passes over and rglob raises on
    candidates += sorted(
        Path(root, d) for root, dirs, _ in os.walk(folder) for d in dirs if d.startswith(folders.GRAPH_PREFIX)
    )
    for sub in candidates:
        mapping_file = sub / artifact_file(NODE_MAPPINGS)
        if not mapping_file.is_file():
            continue
        docs = {
            a: _read(sub / artifact_file(a))
            for a in (NODE_MAPPINGS, KERNEL_STACK_TRACES, OPSPEC_DEBUG_HANDLES, DIAGNOSTICS)
        }
        diagnostics = docs[DIAGNOSTICS]
        label, folder_cid = folders.label_and_compile_id(sub.name) or (None, "")
        compile_id = (diagnostics or {}).get("compile_id") or folder_cid
        model = label or sub.parent.name
        bundles = Layout(sub.parent, model).bundle_root
        found.append(
            IndexedGraph(
                model=model,
                compile_id=str(compile_id),
                graph=graph_kind(diagnostics, None, sub.name),
                origin=str(sub),
                mapping=docs[NODE_MAPPINGS] or {},
                stack_traces=docs[KERNEL_STACK_TRACES] or {},
                opspecs=docs[OPSPEC_DEBUG_HANDLES],
                bundle_root=bundles if bundles.is_dir() else None,
                diagnostics=diagnostics,
            )
        )
    return found


def _read(path: Path) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    doc = jsonio.load_json(jsonio.read_file(path), location=str(path))
    if not isinstance(doc, dict):
        raise UnusableInput(str(path), "top level is not a JSON object")
    return doc
