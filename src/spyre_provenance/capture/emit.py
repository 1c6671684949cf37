"""Where a graph's artifacts go on disk: the Inductor debug dir and ``--out``.

Everything written here has been validated by the hook first; every file is written
atomically, after the folder's stale temporaries of a killed writer are removed. The log
side (structured-trace artifacts) is ``Inductor.log_artifact``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from spyre_provenance.base.files import atomic_write_bytes, remove_stale_temporaries
from spyre_provenance.links import mapping
from spyre_provenance.model.folders import graph_folder
from spyre_provenance.model.layout import Layout
from spyre_provenance.model.names import (
    DIAGNOSTICS,
    KERNEL_STACK_TRACES,
    KINDS,
    NODE_MAPPINGS,
    OPSPEC_DEBUG_HANDLES,
    SOURCE_LINES,
)
from spyre_provenance.model.records import GraphResult
from spyre_provenance.viewer import sources


def artifact_files(result: GraphResult) -> dict[str, bytes]:
    """File name -> bytes for one graph's documents the hook writes (the kinds of
    ``names.ARTIFACT_KINDS`` written by ``hook`` or ``viewer``; diagnostics apart, in
    ``diagnostics_file``), those it has."""
    documents = {
        NODE_MAPPINGS: result.node_mappings,
        KERNEL_STACK_TRACES: result.stack_traces,
        OPSPEC_DEBUG_HANDLES: result.opspec_handles,
    }
    files = {KINDS[name].file: mapping.to_json_bytes(doc) for name, doc in documents.items() if doc is not None}
    source_lines = _source_lines(result)
    if source_lines is not None:
        files[KINDS[SOURCE_LINES].file] = source_lines
    return files


def _source_lines(result: GraphResult) -> bytes | None:
    """The source lines that made the graph's kernels, read now: where the viewer's page is
    opened, the file may have changed or be gone. None when there are none, or when the
    text does not pass its own check (never emit what was not checked)."""
    made = sources.made_lines(result.stack_traces, result.opspec_handles)
    if not made:
        return None
    data = mapping.to_json_bytes(sources.snapshot(made))
    return data if sources.text_problem(data) is None else None


def diagnostics_file(document: Any) -> dict[str, bytes]:
    return {KINDS[DIAGNOSTICS].file: mapping.to_json_bytes(document)}


def graph_folder_name(result: GraphResult, label: str | None = None, first: int = 0) -> str:
    """The graph's folder (``folders.graph_folder``), named with ``label`` or else the
    result's own model label, so compiles of different models share one ``--out``;
    ``first``: the order the session's first graph takes (``folders.next_unlabeled_order``)."""
    chosen = label if label is not None else result.label
    return graph_folder(first + result.index, result.compile_id, result.kind, chosen)


def graph_folders(result: GraphResult, debug_dir: Path | None, layout: Layout | None, first: int = 0) -> list[Path]:
    """Where the graph's files go: Inductor's debug folder (when tracing) and its folder in
    the session's out folder (``layout``, named after the model's label)."""
    folders = [debug_dir] if debug_dir is not None else []
    if layout is not None:
        folders.append(layout.graph_folder(first + result.index, result.compile_id, result.kind))
    return folders


def write_files(files: Mapping[str, bytes], folders: Iterable[Path]) -> None:
    for folder in folders:
        remove_stale_temporaries(folder, recursive=False)  # a killed writer's leftovers
        for name, data in files.items():
            atomic_write_bytes(folder / name, data)
