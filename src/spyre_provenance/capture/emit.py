"""Where a graph's artifacts go on disk: the Inductor debug dir and ``--out``.

Everything written here has been validated by the hook first; every file is written
atomically, after the folder's stale temporaries of a killed writer are removed. The log
side (structured-trace artifacts) is ``Inductor.log_artifact``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from spyre_provenance import mapping
from spyre_provenance.model.folders import graph_folder
from spyre_provenance.model.layout import Layout
from spyre_provenance.model.names import (
    DIAGNOSTICS,
    KERNEL_STACK_TRACES,
    NODE_MAPPINGS,
    OPSPEC_DEBUG_HANDLES,
    SOURCE_LINES,
    artifact_file,
)
from spyre_provenance.model.records import GraphResult
from spyre_provenance.support import atomic_write_bytes, remove_stale_temporaries
from spyre_provenance.viewer import sources


def artifact_files(result: GraphResult) -> dict[str, bytes]:
    """File name -> bytes for one graph's provenance artifacts (those it has)."""
    files = {}
    if result.node_mappings is not None:
        files[artifact_file(NODE_MAPPINGS)] = mapping.to_json_bytes(result.node_mappings)
    if result.stack_traces is not None:
        files[artifact_file(KERNEL_STACK_TRACES)] = mapping.to_json_bytes(result.stack_traces)
    if result.opspec_handles is not None:
        files[artifact_file(OPSPEC_DEBUG_HANDLES)] = mapping.to_json_bytes(result.opspec_handles)
    made = sources.made_lines(result.stack_traces, result.opspec_handles)
    if made:  # read now: where the viewer's page is opened, the file may have changed or be gone
        snapshot = sources.snapshot(made)
        if sources.problem(snapshot) is None:  # never emit what was not checked
            files[artifact_file(SOURCE_LINES)] = mapping.to_json_bytes(snapshot)
    return files


def diagnostics_file(document: Any) -> dict[str, bytes]:
    return {artifact_file(DIAGNOSTICS): mapping.to_json_bytes(document)}


def graph_folder_name(result: GraphResult, label: str | None = None, first: int = 0) -> str:
    """The graph's folder (``folders.graph_folder``), named with ``label`` or else the
    result's own model label, so compiles of different models share one ``--out``;
    ``first``: the order the session's first graph takes (``folders.next_unlabeled_order``)."""
    chosen = label if label is not None else result.label
    return graph_folder(first + result.index, result.compile_id, result.kind, chosen)


def graph_folders(result: GraphResult, debug_dir: Path | None, out_dir: Path | None, first: int = 0) -> list[Path]:
    """Where the graph's files go: Inductor's debug folder (when tracing) and ``--out``'s
    graph folder."""
    folders = [debug_dir] if debug_dir is not None else []
    if out_dir is not None:
        folders.append(
            Layout(Path(out_dir), result.label).graph_folder(first + result.index, result.compile_id, result.kind)
        )
    return folders


def write_files(files: Mapping[str, bytes], folders: Iterable[Path]) -> None:
    for folder in folders:
        remove_stale_temporaries(folder, recursive=False)  # a killed writer's leftovers
        for name, data in files.items():
            atomic_write_bytes(folder / name, data)
