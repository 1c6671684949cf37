"""Sets of artifacts: reading them from anything a user points at, writing golden cases.

A ``Provenance`` is artifacts by graph. ``load`` reads an artifact file, a graph folder, a
compile ``--out``, a golden case or a TORCH_TRACE log (split into graphs by
``logs.graphs.read_log_graphs``); ``write_case`` validates, then writes atomically and
removes stale files. Every read goes through the validator's readers (size limit,
duplicate keys refused).

Pure: no torch import.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from spyre_provenance.audit import report as audit_files
from spyre_provenance.base import files as support
from spyre_provenance.base.errors import UnusableInput
from spyre_provenance.golden.cases import MANIFEST, Case, case_manifest
from spyre_provenance.golden.normalize import (
    BUNDLE_HANDLES,
    Roots,
    dumps,
    normalize,
    normalize_bundle_handles,
)
from spyre_provenance.logs import tracelog
from spyre_provenance.logs.graphs import read_log_graphs
from spyre_provenance.model import folders, jsonio
from spyre_provenance.model.detect import json_type
from spyre_provenance.model.folders import (
    GRAPH_PREFIX,
    graph_folder,
    without_label,
)
from spyre_provenance.model.layout import Layout, bundle_files
from spyre_provenance.model.names import (
    AUDIT,
    GOLDEN_ARTIFACTS,
    KERNEL_STACK_TRACES,
    KINDS,
    NODE_MAPPINGS,
    OPSPEC_DEBUG_HANDLES,
    artifact_file,
)
from spyre_provenance.model.superdsc import checked_handle, handle_of
from spyre_provenance.validate import schemas

#: File name of each artifact golden files compare inside a graph folder (what compile --out
#: writes, too): the table's golden kinds (``names.ARTIFACT_KINDS``), in its order.
ARTIFACT_FILES = {artifact: KINDS[artifact].file for artifact in GOLDEN_ARTIFACTS}

#: The golden file of the SuperDSC bundles' handles, at the top of a case: bundles are per
#: kernel name, not per graph (a later graph's kernel of the same name overwrites an earlier
#: one's), so they are one group of the whole compile. Its name is no artifact's and its
#: shape none either, so ``validate``'s folder scan skips it.
BUNDLE_HANDLES_FILE = artifact_file(BUNDLE_HANDLES)
BUNDLE_FORMAT = 1
#: The provenance audit's file, at the top of a ``compile --audit`` folder and of an audit case.
AUDIT_FILE = audit_files.JSON_FILE


@dataclasses.dataclass
class Provenance:
    """Artifacts by graph: ``graphs[graph name][artifact] = document``, in compile order;
    ``bundles``: each SuperDSC bundle's ``debug_handle_`` (dict or None) by its kernel and
    file (``sdsc_fused_addmm_0/sdsc_1.json``, ``read_bundles``), None where there are no bundles.
    ``holds_bundles``: False for a bare TORCH_TRACE log, which can hold none (so its lack of
    bundles is no difference)."""

    label: str
    graphs: dict[str, dict[str, Any]]
    manifest: dict[str, Any] | None = None
    bundles: dict[str, Any] | None = None
    holds_bundles: bool = True
    #: the compile's provenance audit (a valid ``provenance_audit`` document), None if none
    audit: dict[str, Any] | None = None

    def normalized(self, roots: Roots | None = None) -> Provenance:
        roots = roots if roots is not None else Roots.default()
        return Provenance(
            self.label,
            {g: {a: normalize(a, d, roots) for a, d in arts.items()} for g, arts in self.graphs.items()},
            self.manifest,
            None if self.bundles is None else normalize_bundle_handles(self.bundles, roots),
            self.holds_bundles,
            None if self.audit is None else normalize(AUDIT, self.audit, roots),
        )

    def files(self) -> dict[str, bytes]:
        """Relative path -> bytes, as a golden case folder holds them (normalize first)."""
        out: dict[str, bytes] = {}
        if self.manifest is not None:
            out[MANIFEST] = dumps(self.manifest)
        for graph, artifacts in self.graphs.items():
            for artifact in ARTIFACT_FILES:
                if artifact in artifacts:
                    out[f"{graph}/{ARTIFACT_FILES[artifact]}"] = dumps(artifacts[artifact])
        if self.bundles is not None:  # only the handles: the device specs are not provenance
            out[BUNDLE_HANDLES_FILE] = dumps({"format": BUNDLE_FORMAT, "bundles": self.bundles})
        if self.audit is not None:
            out[AUDIT_FILE] = dumps(self.audit)
        return out


def load(path: str | os.PathLike[str]) -> Provenance:
    """Read an artifact file, a graph folder, a compile ``--out``, a golden case or a
    TORCH_TRACE log. Raises UnusableInput (one line) for anything else."""
    path = Path(path)
    if not path.exists():
        raise UnusableInput(str(path), "no such file or folder")
    if path.is_dir():
        return _load_folder(path)
    if tracelog.is_trace_log(path):
        return _load_log(path, str(path))
    if path.name == BUNDLE_HANDLES_FILE:
        return Provenance(str(path), {}, bundles=_read_bundle_file(path))
    if schemas.artifact_for_filename(path.name) == AUDIT:
        return Provenance(str(path), {}, audit=read_audit(path), holds_bundles=False)
    artifact, doc = _read_artifact(path)
    return Provenance(str(path), {"": {artifact: doc}})


def _read_artifact(path: Path, artifact: str | None = None) -> tuple[str, Any]:
    # the validator's readers: the size limit, and a duplicate key refused, never dropped
    doc = jsonio.load_json(jsonio.read_file(path), location=str(path))
    if not isinstance(doc, dict):
        raise UnusableInput(str(path), f"top level is a JSON {json_type(doc)}, expected an object")
    artifact = artifact or schemas.artifact_for_filename(path.name) or schemas.guess_artifact(doc)
    if artifact is None:
        raise UnusableInput(str(path), "not a provenance artifact (node mappings, stack traces, OpSpec handles)")
    return artifact, doc


def read_audit(path: Path) -> dict[str, Any]:
    """A provenance audit file, validated (UnusableInput, one line, when it is not a valid
    one: its counts cannot be compared)."""
    import msgspec

    return msgspec.to_builtins(audit_files.read(path))


def _graph_artifacts(folder: Path) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for file in sorted(folder.glob("*.json")):
        artifact = schemas.artifact_for_filename(file.name)
        if artifact is None or artifact == AUDIT:  # an audit is the whole compile's, not a graph's
            continue
        if artifact in found:
            raise UnusableInput(str(folder), f"holds two {artifact} files; compare the files themselves")
        found[artifact] = _read_artifact(file, artifact)[1]
    return {a: found[a] for a in ARTIFACT_FILES if a in found}  # one artifact order everywhere


def graph_names(names: Sequence[str]) -> list[str]:
    """Graph folder names without a model label (``graph_mlp_00_0-0_forward`` ->
    ``graph_00_0-0_forward``): a golden case names its model once, in its folder. Names
    that would then collide (several models in one ``--out``) are kept as they are."""
    stripped = [without_label(name) for name in names]
    return stripped if len(set(stripped)) == len(stripped) else list(names)


def _load_folder(folder: Path) -> Provenance:
    manifest = None
    if (folder / MANIFEST).is_file():
        doc, _ = jsonio.parse_json((folder / MANIFEST).read_bytes(), location=str(folder / MANIFEST))
        manifest = doc if isinstance(doc, dict) else None
    graphs = _folder_graphs(folder)
    audit = read_audit(folder / AUDIT_FILE) if (folder / AUDIT_FILE).is_file() else None
    # the bundles are read once, in the branch that knows the graphs naming them
    if graphs is not None:
        return Provenance(str(folder), graphs, manifest, read_bundles(folder, graphs), audit=audit)
    ranks = _rank_folders(folder)
    if ranks:
        return _load_ranks(folder, ranks, manifest, read_bundles(folder))
    trace_dir = Layout(folder).trace_dir
    if audit is not None and not any(trace_dir.glob("*")) and not any(folder.glob("*.log")):
        return Provenance(str(folder), {}, manifest, read_bundles(folder), audit=audit)  # an audit case
    logs = [
        p
        for p in sorted(folder.glob("*.log")) + sorted(trace_dir.glob("*"))
        if p.is_file() and tracelog.is_trace_log(p)
    ]
    if len(logs) > 1:
        raise UnusableInput(str(folder), f"holds {len(logs)} TORCH_TRACE logs; name one")
    if logs:
        logged = _load_log(logs[0], str(folder))
        # the folder could hold them; named after the log's graphs where two share a kernel
        logged.bundles, logged.holds_bundles = read_bundles(folder, logged.graphs), True
        logged.audit = audit
        return logged
    bundles = read_bundles(folder)
    if bundles is not None:  # bundles alone (a copied sdsc/ tree): still comparable
        return Provenance(str(folder), {}, manifest, bundles)
    raise UnusableInput(
        str(folder), "no provenance artifacts, graph_* folders, bundles or TORCH_TRACE log in this folder"
    )


def _rank_folders(folder: Path) -> list[Path]:
    """The ``rank<r>/`` folders of a ``compile --ranks N`` run or its golden, in rank order."""
    return [ranked.out for _, ranked in Layout(folder).ranks()]


def _load_ranks(
    folder: Path, ranks: list[Path], manifest: dict[str, Any] | None, bundles: dict[str, Any] | None
) -> Provenance:
    """A multi-rank run: each rank's graphs (and bundles) under its folder's name
    (``rank0/graph_00_0-0_inference``), so two runs compare rank by rank. A golden case
    keeps all ranks' bundle handles in its one top-level file, already so named."""
    graphs: dict[str, dict[str, Any]] = {}
    rank_bundles: dict[str, Any] = {}
    for rank in ranks:
        try:
            loaded = _load_folder(rank)
        except UnusableInput:
            continue  # a rank that wrote nothing (it failed): its graphs are missing, which compare shows
        graphs.update({f"{rank.name}/{g}": arts for g, arts in loaded.graphs.items()})
        rank_bundles.update({f"{rank.name}/{k}": h for k, h in (loaded.bundles or {}).items()})
    if not graphs:
        raise UnusableInput(str(folder), "no rank folder holds provenance artifacts")
    return Provenance(str(folder), graphs, manifest, bundles if bundles is not None else rank_bundles or None)


def _folder_graphs(folder: Path) -> dict[str, dict[str, Any]] | None:
    """The artifacts of ``folder``'s graph folders, else of the folder itself, else None."""
    found = [
        (sub.name, arts)
        for sub in sorted(folder.glob(GRAPH_PREFIX + "*"))
        if sub.is_dir() and (arts := _graph_artifacts(sub))
    ]
    if found:
        names = graph_names([name for name, _ in found])
        return {name: arts for name, (_, arts) in zip(names, found, strict=True)}
    direct = _graph_artifacts(folder)
    return {folder.name: direct} if direct else None


# --- SuperDSC bundles: only their debug_handle_ -----------------------------------------------


def read_bundles(folder: Path, graphs: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, Any] | None:
    """The bundle handles of a golden case (its ``BUNDLE_HANDLES_FILE``) or of a ``compile --out``
    (``sdsc/<label>/inductor-spyre/<uuid8>_<kernel>_<suffix>/``, ``Layout.bundle_folders``),
    by bundle path; None when the folder holds no bundles.

    A bundle's path is ``<kernel>/sdsc_<i>.json`` (the model's label first when the folder
    holds several models' bundles): the folder's ``<uuid8>_`` and ``_<suffix>`` differ from
    machine to machine (torch-spyre's are random, the reference backend's hash the bundles'
    bytes, which hold absolute paths). Where two folders hold one kernel (kernel suffixes
    restart per graph), each is named after the first of ``graphs`` whose OpSpec artifact
    records it (``<graph>/<kernel>/sdsc_<i>.json``), else by its own whole name."""
    if (folder / BUNDLE_HANDLES_FILE).is_file():
        return _read_bundle_file(folder / BUNDLE_HANDLES_FILE)
    found = Layout(folder).bundle_folders()  # every model's
    labels = {label for label, _ in found}
    named = [((label,) if len(labels) > 1 and label else (), path) for label, path in found]
    kernels = [(*label, folders.kernel_of_bundle_folder(path.name) or path.name) for label, path in named]
    recorded = _recording_graphs(graphs or {})
    files = []
    for (label, path), kernel in zip(named, kernels, strict=True):
        key = kernel
        if kernels.count(kernel) > 1:  # several folders of one kernel: which graph's is it
            key = (*label, recorded[path.name], kernel[-1]) if path.name in recorded else (*label, path.name)
        files += [(key, f) for f in bundle_files(path)]
    if not files:
        return None
    files.sort(key=lambda found: found[0])  # in key order, not the folders' (their names begin with a hash)
    return {"/".join((*key, file.name)): _bundle_handle(file) for key, file in files}


def _recording_graphs(graphs: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """Bundle folder name -> the first graph (in compile order) whose OpSpec artifact records
    a call site running it (``bundles[<call site>].folder``)."""
    found: dict[str, str] = {}
    for name, artifacts in graphs.items():
        doc = artifacts.get(OPSPEC_DEBUG_HANDLES)
        entries = doc.get("bundles") if isinstance(doc, dict) else None
        for entry in entries.values() if isinstance(entries, dict) else ():
            if isinstance(entry, dict) and isinstance(entry.get("folder"), str):
                found.setdefault(entry["folder"], name)
    return found


def _bundle_handle(path: Path) -> Any:
    """A bundle's ``debug_handle_`` (``superdsc.handle_of``, strict: the golden's record)."""
    try:
        return handle_of(jsonio.load_json(jsonio.read_file(path), location=str(path)), strict=True)
    except ValueError as exc:
        raise UnusableInput(str(path), str(exc)) from None


def _read_bundle_file(path: Path) -> dict[str, Any]:
    doc = jsonio.load_json(jsonio.read_file(path), location=str(path))
    bundles = doc.get("bundles") if isinstance(doc, dict) else None
    if not isinstance(bundles, dict) or doc.get("format") != BUNDLE_FORMAT:
        raise UnusableInput(
            str(path), f'not a bundle-handle file: expected {{"format": {BUNDLE_FORMAT}, "bundles": {{...}}}}'
        )
    return {key: _checked_handle(handle, f"{path}: {key}") for key, handle in bundles.items()}


def _checked_handle(handle: Any, where: str) -> Any:
    try:
        return checked_handle(handle)
    except ValueError as exc:
        raise UnusableInput(where, str(exc)) from None


def _load_log(path: Path, label: str) -> Provenance:
    """Graphs of a TORCH_TRACE log, split as ``logs.graphs.read_log_graphs`` splits them."""
    graphs: dict[str, dict[str, Any]] = {}
    for i, logged in enumerate(read_log_graphs(path)):
        found = {
            NODE_MAPPINGS: logged.node_mappings,
            KERNEL_STACK_TRACES: logged.stack_traces,
            OPSPEC_DEBUG_HANDLES: logged.opspec_handles,
        }
        artifacts = {a: doc for a, doc in found.items() if doc is not None}
        if artifacts:
            graphs[graph_folder(i, logged.compile_id)] = artifacts
    if not graphs:
        raise UnusableInput(str(path), "no provenance artifacts in this TORCH_TRACE log")
    return Provenance(label, graphs, holds_bundles=False)


def fresh_case(case: Case, out: str | os.PathLike[str], roots: Roots | None = None) -> Provenance:
    """What a compile of ``case`` wrote into ``out`` (its ``--out``), as the golden holds it:
    normalized, with the case's manifest."""
    fresh = load(out)
    fresh.manifest = case_manifest(case)
    if case.audit:  # an audit case keeps the audit alone (its artifacts are another case's)
        if fresh.audit is None:
            raise UnusableInput(str(out), f"holds no {AUDIT_FILE} (compile --audit writes it)")
        fresh = Provenance(fresh.label, {}, fresh.manifest, None, audit=fresh.audit)
    return fresh.normalized(roots)


def read_case(folder: str | os.PathLike[str]) -> Provenance | None:
    """A golden case folder, or None when it holds no golden yet."""
    folder = Path(folder)
    if not folder.is_dir() or not any(folder.iterdir()):
        return None
    return _load_folder(folder)


def write_case(folder: str | os.PathLike[str], files: Mapping[str, bytes]) -> list[str]:
    """Validate every artifact in ``files``, then write them atomically and delete stale
    ones. Nothing is written when any artifact is invalid: the problems are returned
    (``"<file>: <path>: <message>"``), else an empty list."""
    problems = validate_files(files)
    if problems:
        return problems
    folder = Path(folder)
    if folder.is_dir():
        support.remove_stale_temporaries(folder)  # what a killed update left behind
    for rel, data in files.items():
        target = folder / rel
        if not target.is_file() or target.read_bytes() != data:
            support.atomic_write_bytes(target, data)  # looked up per call: crash tests interpose it
    for stale in stale_files(folder, files):
        (folder / stale).unlink()
    ranks = [ranked.out for _, ranked in Layout(folder).ranks()]
    rank_graphs = [sub for ranked in ranks for sub in ranked.glob(GRAPH_PREFIX + "*")]
    for sub in sorted([*folder.glob(GRAPH_PREFIX + "*"), *rank_graphs, *ranks], reverse=True):
        if sub.is_dir() and not any(sub.iterdir()):
            sub.rmdir()
    return []


def stale_files(folder: Path, files: Mapping[str, bytes]) -> list[str]:
    """Golden files in ``folder`` that ``files`` no longer has (a graph or artifact gone)."""
    if not folder.is_dir():
        return []
    present = [name for name in (MANIFEST, BUNDLE_HANDLES_FILE, AUDIT_FILE) if (folder / name).is_file()]
    present += [p.relative_to(folder).as_posix() for p in sorted(folder.glob(f"{GRAPH_PREFIX}*/*.json"))]
    present += [p.relative_to(folder).as_posix() for p in sorted(folder.glob(f"rank*/{GRAPH_PREFIX}*/*.json"))]
    return [p for p in present if p not in files]


def validate_files(files: Mapping[str, bytes]) -> list[str]:
    """Problems of the artifact files (by name) among ``files``; the manifest is skipped."""
    problems: list[str] = []
    for rel, data in files.items():
        artifact = schemas.artifact_for_filename(rel)
        if artifact is None:
            continue
        try:
            report = schemas.validate_bytes(data, artifact, location=rel, full=True)
        except UnusableInput as exc:
            problems.append(str(exc))
            continue
        problems += [f"{rel}: {p}" for p in report.problems]
    return problems
