"""Golden provenance: the case list, normalization, one serializer, structural comparison.

A *golden case* is a folder ``golden/<case>/`` laid out like a compile's ``--out``::

    manifest.json                       how it was made: model, backend, dtype, train, torch
    graph_00_0-0_inference/             one folder per compiled graph, in compile order
        inductor_provenance_tracking_node_mappings.json
        inductor_provenance_tracking_kernel_stack_traces.json
        spyre_opspec_debug_handles.json  (backends with OpSpecs)

Every artifact in it is *normalized* (``normalize``): what varies between machines is
rewritten, nothing else. Absolute paths in stack traces and handle sources become relative
to the project root, or ``<site-packages>/...``, ``<stdlib>/...``, ``<tmp>/...``; memory
addresses become ``0xADDR``; debug-handle ids (content hashes, so they hash the absolute
paths) are recomputed from the normalized content, and every reference to them
(``debug_handle``, ``fused_from``) is remapped. Kernel names, handle numbers, node names and
every order stay as compiled. Normalizing twice changes nothing.

``compare(a, b)`` explains the difference between two sets of artifacts the way a person
asks about it: kernels added, removed or renamed, post-grad nodes gained or lost per kernel,
pre/post links changed, OpSpec handle changes; ``render`` prints it, one line per change.

Pure module: no torch import. The commands (``diff``, ``golden``) and the pytest plugin
are thin layers over these functions, so all three write and read the same bytes.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import importlib.metadata
import json
import os
import re
import sysconfig
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec

from spyre_provenance.errors import UnusableInput
from spyre_provenance.logs import tracelog
from spyre_provenance.model import wire
from spyre_provenance.model.detect import guess_artifact, json_type
from spyre_provenance.model.folders import GRAPH_PREFIX, graph_folder, without_label
from spyre_provenance.model.names import (
    KERNEL_INFORMATION,
    KERNEL_STACK_TRACES,
    MAP_FIELDS,
    NODE_MAPPINGS,
    OPSPEC_DEBUG_HANDLES,
)
from spyre_provenance.redact import path_variants
from spyre_provenance.validate import schemas

MANIFEST = "manifest.json"
MANIFEST_FORMAT = 1
#: File name of each artifact inside a graph folder (what compile --out writes, too).
ARTIFACT_FILES = {
    NODE_MAPPINGS: f"{NODE_MAPPINGS}.json",
    KERNEL_STACK_TRACES: f"{KERNEL_STACK_TRACES}.json",
    OPSPEC_DEBUG_HANDLES: f"{OPSPEC_DEBUG_HANDLES}.json",
    KERNEL_INFORMATION: f"{KERNEL_INFORMATION}.json",
}


# --- the cases --------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Case:
    """One golden case: a built-in model compiled one way."""

    name: str
    model: str
    backend: str
    dtype: str = "float32"
    train: bool = False
    about: str = ""

    def compile_args(self) -> list[str]:
        """``spyre-provenance compile`` arguments (defaults left out), without ``--out``."""
        args = [self.model, "--backend", self.backend]
        if self.dtype != "float32":
            args += ["--dtype", self.dtype]
        if self.train:
            args.append("--train")
        return args

    def recipe(self) -> dict[str, Any]:
        return {"model": self.model, "backend": self.backend, "dtype": self.dtype, "train": self.train}


#: The one list of golden cases (``golden check``/``update`` and the golden tests read it).
CASES: dict[str, Case] = {
    case.name: case
    for case in (
        Case("mlp", "mlp", "reference", about="the seed MLP on the Spyre-modelled reference backend"),
        Case("mlp_fp16", "mlp", "reference", "float16", about="the seed MLP in half precision"),
        Case("mlp_inductor", "mlp", "inductor", about="the seed MLP on stock Inductor (extern GEMMs)"),
        Case("residual", "residual", "reference", about="LayerNorm + residual + softmax: views, reductions"),
        Case("mlp_train", "mlp", "reference", train=True, about="forward and backward graphs"),
    )
}


def select_cases(names: Sequence[str]) -> list[Case]:
    """The named cases (all when none are named); unknown names are unusable input."""
    unknown = [n for n in names if n not in CASES]
    if unknown:
        raise UnusableInput(unknown[0], f"not a golden case; known: {', '.join(CASES)}")
    return [CASES[n] for n in (names or list(CASES))]


def source_checkout() -> Path | None:
    """The repository this package runs from (an editable install), else None."""
    root = Path(__file__).resolve().parents[2]
    if (root / "pyproject.toml").is_file() and (root / "src" / "spyre_provenance").is_dir():
        return root
    return None


def torch_version() -> str | None:
    """The installed torch's version, read from its metadata (torch is not imported)."""
    try:
        return importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        return None


def make_manifest(recipe: Mapping[str, Any], *, case: str | None = None, how: Mapping[str, str] = {}) -> dict[str, Any]:
    """A case's manifest: what it was compiled from, with which torch, how to remake it.

    Nothing time- or machine-dependent goes in: the same toolchain writes the same bytes.
    """
    manifest: dict[str, Any] = {"format": MANIFEST_FORMAT}
    if case is not None:
        manifest["case"] = case
    manifest.update({k: recipe[k] for k in ("model", "backend", "dtype", "train") if k in recipe})
    manifest["torch"] = torch_version()
    manifest.update(how)
    return manifest


def case_manifest(case: Case) -> dict[str, Any]:
    return make_manifest(
        case.recipe(),
        case=case.name,
        how={
            "update": f"spyre-provenance golden update {case.name}",
            "compile": "spyre-provenance compile " + " ".join(case.compile_args()) + " --no-tlparse --out DIR",
        },
    )


def manifest_hints(expected: Mapping[str, Any] | None, actual: Mapping[str, Any] | None, *, a: str = "A", b: str = "B") -> list[str]:
    """What the two manifests say about comparing A with B (toolchain, recipe): hints, never
    differences. A torch mismatch explains a diff; it does not stop the comparison."""
    if not expected or not actual:
        return []
    hints = []
    ta, tb = expected.get("torch"), actual.get("torch")
    if ta and tb and ta != tb:
        hints.append(
            f"{a} was made with torch {ta}, {b} with torch {tb}: differences may come from the "
            "compiler version rather than a regression"
        )
    for key in ("model", "backend", "dtype", "train"):
        if key in expected and key in actual and expected[key] != actual[key]:
            hints.append(f"{a} has {key} {json.dumps(expected[key])}, {b} has {json.dumps(actual[key])}")
    return hints


# --- normalization ----------------------------------------------------------------------------

ADDRESS = re.compile(r"(?<![0-9A-Za-z])0x[0-9a-fA-F]{8,16}(?![0-9A-Za-z])")
ADDRESS_TEXT = "0xADDR"
_FRAME_FILE = re.compile(r'(File ")([^"\n]+)(")')
_PACKAGES = re.compile(r"^.*?[/\\](?:site|dist)-packages[/\\]")
_ID_MASK = (1 << 63) - 1


@dataclasses.dataclass(frozen=True)
class Roots:
    """Folders whose absolute paths are rewritten: ``project`` ones to relative paths,
    ``tmp`` ones to ``<tmp>/...``. Any ``site-packages`` folder becomes ``<site-packages>``."""

    project: tuple[str, ...] = ()
    tmp: tuple[str, ...] = ()
    stdlib: tuple[str, ...] = ()

    @classmethod
    def default(cls, *project: str | os.PathLike[str] | None) -> Roots:
        """The given project roots (None skipped), else this source checkout, else the
        current folder; the temp dir; the standard library."""
        roots = [Path(p) for p in project if p is not None]
        if not roots:
            roots = [source_checkout() or Path.cwd()]
        tmp = {tempfile.gettempdir(), "/tmp"}
        stdlib = {sysconfig.get_paths()["stdlib"]}
        return cls(project=_variants(roots), tmp=_variants(tmp), stdlib=_variants(stdlib))

    def rules(self) -> list[tuple[str, str]]:
        """(prefix, replacement), longest prefix first: a project inside /tmp stays relative."""
        pairs = [(r, "") for r in self.project] + [(r, "<tmp>/") for r in self.tmp]
        pairs += [(r, "<stdlib>/") for r in self.stdlib]
        return sorted(pairs, key=lambda p: -len(p[0]))


def _variants(paths: Iterable[str | os.PathLike[str]]) -> tuple[str, ...]:
    """Each path as given and resolved, with a trailing separator (redact's rule)."""
    return tuple(path_variants(paths))


def normalize_path(path: str, roots: Roots) -> str:
    """An absolute path as the machine-independent text a golden file holds."""
    path = ADDRESS.sub(ADDRESS_TEXT, path)
    if not (path.startswith("/") or re.match(r"^[A-Za-z]:[/\\]", path)):
        return path  # already relative or a placeholder: normalizing is idempotent
    packages = _PACKAGES.match(path)
    if packages:
        return "<site-packages>/" + path[packages.end():].replace("\\", "/")
    for prefix, replacement in roots.rules():
        if path.startswith(prefix):
            return replacement + path[len(prefix):]
    return path


def normalize_text(text: str, roots: Roots) -> str:
    """A stack trace: the path of every ``File "..."`` frame, and memory addresses."""
    text = _FRAME_FILE.sub(lambda m: m[1] + normalize_path(m[2], roots) + m[3], text)
    return ADDRESS.sub(ADDRESS_TEXT, text)


def normalize(artifact: str, doc: Any, roots: Roots | None = None) -> Any:
    """The one normalize function: a machine-independent copy of one artifact document.

    Node mappings hold only names, so they come back as they are. Stack traces and handle
    sources lose their machine's paths and addresses; handle ids are recomputed from the
    normalized content (children first) and remapped wherever they are referenced.
    """
    roots = roots if roots is not None else Roots.default()
    doc = copy.deepcopy(doc)
    if artifact == KERNEL_STACK_TRACES and isinstance(doc, dict):
        return {k: _normalize_traces(v, roots) for k, v in doc.items()}
    if artifact == KERNEL_INFORMATION and isinstance(doc, dict):
        for entry in doc.values():
            if isinstance(entry, dict) and "stack_traces" in entry:
                entry["stack_traces"] = _normalize_traces(entry["stack_traces"], roots)
        return doc
    if artifact == OPSPEC_DEBUG_HANDLES and isinstance(doc, dict):
        return _normalize_opspecs(doc, roots)
    return doc


def _normalize_traces(traces: Any, roots: Roots) -> Any:
    if not isinstance(traces, list):
        return traces
    return [normalize_text(t, roots) if isinstance(t, str) else t for t in traces]


def _normalize_opspecs(doc: dict[str, Any], roots: Roots) -> dict[str, Any]:
    handles = doc.get("handles")
    if not isinstance(handles, dict):
        return doc
    for entry in handles.values():
        if not isinstance(entry, dict):
            continue
        source = entry.get("source")
        if isinstance(source, dict) and isinstance(source.get("file"), str):
            source["file"] = normalize_path(source["file"], roots)
        for step in entry.get("transform_history") or ():
            if isinstance(step, dict):
                for key in ("pass_name", "reason"):
                    if isinstance(step.get(key), str):
                        step[key] = ADDRESS.sub(ADDRESS_TEXT, step[key])

    new_ids: dict[str, str] = {}

    def new_id(old: str, visiting: frozenset[str]) -> str:
        if old in new_ids:
            return new_ids[old]
        entry = handles.get(old)
        if not isinstance(entry, dict) or old in visiting:  # dangling or cyclic: leave it
            return old
        children = entry.get("fused_from") or []
        remapped = [new_id(c, visiting | {old}) if isinstance(c, str) else c for c in children]
        entry["fused_from"] = remapped
        new_ids[old] = handle_id(entry)
        return new_ids[old]

    for old in list(handles):
        new_id(old, frozenset())
    doc["handles"] = {}
    for old, entry in handles.items():  # table order kept; equal content merges
        doc["handles"].setdefault(new_ids.get(old, old), entry)
    for specs in (doc.get("kernels") or {}).values():
        for spec in specs if isinstance(specs, list) else ():
            if isinstance(spec, dict) and isinstance(spec.get("debug_handle"), str):
                spec["debug_handle"] = new_ids.get(spec["debug_handle"], spec["debug_handle"])
    return doc


def handle_id(entry: Mapping[str, Any]) -> str:
    """A handle's id from its content: BLAKE2b-64 of its sorted-key JSON, 63 bits, as text.

    The function the reference backend uses for its ids (``backends.opspec.stable_id``), on
    the flattened form (children by id), so a handle whose paths are already normalized
    keeps its id.
    """
    content = {
        "source": entry.get("source"),
        "aten_op": entry.get("aten_op"),
        "ir_chain": list(entry.get("ir_chain") or []),
        "fused_from": [str(c) for c in entry.get("fused_from") or []],
        "transform_history": list(entry.get("transform_history") or []),
    }
    canonical = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    digest = hashlib.blake2b(canonical.encode("ascii"), digest_size=8).digest()
    return str(int.from_bytes(digest, "big") & _ID_MASK)


# --- the serializer -------------------------------------------------------------------------------


def dumps(doc: Any) -> bytes:
    """The one serializer for golden files: key order as built, 2-space indent, UTF-8, final
    newline. Readable in a code review; ``golden update``, ``pytest --force-regen`` and the
    pytest plugin all write through it."""
    return (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


# --- a set of artifacts: a file, a graph folder, a compile --out, a golden case, a log ----------


@dataclasses.dataclass
class Provenance:
    """Artifacts by graph: ``graphs[graph name][artifact] = document``, in compile order."""

    label: str
    graphs: dict[str, dict[str, Any]]
    manifest: dict[str, Any] | None = None

    def normalized(self, roots: Roots | None = None) -> Provenance:
        roots = roots if roots is not None else Roots.default()
        return Provenance(
            self.label,
            {g: {a: normalize(a, d, roots) for a, d in arts.items()} for g, arts in self.graphs.items()},
            self.manifest,
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
    artifact, doc = _read_artifact(path)
    return Provenance(str(path), {"": {artifact: doc}})


def _read_artifact(path: Path, artifact: str | None = None) -> tuple[str, Any]:
    # the validator's readers: the size limit, and a duplicate key refused, never dropped
    doc = schemas.load_json(schemas.read_file(path), location=str(path))
    if not isinstance(doc, dict):
        raise UnusableInput(str(path), f"top level is a JSON {json_type(doc)}, expected an object")
    artifact = artifact or schemas.artifact_for_filename(path.name) or guess_artifact(doc)
    if artifact is None:
        raise UnusableInput(str(path), "not a provenance artifact (node mappings, stack traces, OpSpec handles)")
    return artifact, doc


def _graph_artifacts(folder: Path) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for file in sorted(folder.glob("*.json")):
        artifact = schemas.artifact_for_filename(file.name)
        if artifact is None:
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
        doc, _ = schemas.parse_json((folder / MANIFEST).read_bytes(), location=str(folder / MANIFEST))
        manifest = doc if isinstance(doc, dict) else None
    found = [
        (sub.name, arts)
        for sub in sorted(folder.glob(GRAPH_PREFIX + "*"))
        if sub.is_dir() and (arts := _graph_artifacts(sub))
    ]
    if found:
        names = graph_names([name for name, _ in found])
        return Provenance(str(folder), {name: arts for name, (_, arts) in zip(names, found)}, manifest)
    direct = _graph_artifacts(folder)
    if direct:
        return Provenance(str(folder), {folder.name: direct}, manifest)
    logs = [p for p in sorted(folder.glob("*.log")) + sorted(folder.glob("trace/*")) if p.is_file() and tracelog.is_trace_log(p)]
    if len(logs) == 1:
        return _load_log(logs[0], str(folder))
    if logs:
        raise UnusableInput(str(folder), f"holds {len(logs)} TORCH_TRACE logs; name one")
    raise UnusableInput(str(folder), "no provenance artifacts, graph_* folders or TORCH_TRACE log in this folder")


def _load_log(path: Path, label: str) -> Provenance:
    """Graphs of a TORCH_TRACE log, split as ``logs.graphs.read_log_graphs`` splits them."""
    from spyre_provenance.logs.graphs import read_log_graphs

    graphs: dict[str, dict[str, Any]] = {}
    for i, logged in enumerate(read_log_graphs(path)):
        found = {NODE_MAPPINGS: logged.node_mappings, KERNEL_STACK_TRACES: logged.stack_traces,
                 OPSPEC_DEBUG_HANDLES: logged.opspec_handles}
        artifacts = {a: doc for a, doc in found.items() if doc is not None}
        if artifacts:
            graphs[graph_folder(i, logged.compile_id)] = artifacts
    if not graphs:
        raise UnusableInput(str(path), "no provenance artifacts in this TORCH_TRACE log")
    return Provenance(label, graphs)


def fresh_case(case: Case, out: str | os.PathLike[str], roots: Roots | None = None) -> Provenance:
    """What a compile of ``case`` wrote into ``out`` (its ``--out``), as the golden holds it:
    normalized, with the case's manifest."""
    fresh = load(out)
    fresh.manifest = case_manifest(case)
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
    from spyre_provenance.support import atomic_write_bytes, remove_stale_temporaries

    problems = validate_files(files)
    if problems:
        return problems
    folder = Path(folder)
    if folder.is_dir():
        remove_stale_temporaries(folder)  # what a killed update left behind
    for rel, data in files.items():
        target = folder / rel
        if not target.is_file() or target.read_bytes() != data:
            atomic_write_bytes(target, data)
    for stale in stale_files(folder, files):
        (folder / stale).unlink()
    for sub in sorted(folder.glob(GRAPH_PREFIX + "*"), reverse=True):
        if sub.is_dir() and not any(sub.iterdir()):
            sub.rmdir()
    return []


def stale_files(folder: Path, files: Mapping[str, bytes]) -> list[str]:
    """Golden files in ``folder`` that ``files`` no longer has (a graph or artifact gone)."""
    if not folder.is_dir():
        return []
    present = [MANIFEST] if (folder / MANIFEST).is_file() else []
    present += [p.relative_to(folder).as_posix() for p in sorted(folder.glob(f"{GRAPH_PREFIX}*/*.json"))]
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


# --- comparison ---------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Change:
    graph: str
    text: str

    def __str__(self) -> str:
        return f"{self.graph}: {self.text}" if self.graph else self.text


@dataclasses.dataclass
class Comparison:
    changes: list[Change]
    hints: list[str]

    @property
    def equal(self) -> bool:
        return not self.changes


def compare(
    a: Provenance, b: Provenance, roots: Roots | None = None, *, labels: tuple[str, str] = ("A", "B")
) -> Comparison:
    """Normalize both sides, then explain every difference (A is the old side, B the new).

    ``labels`` name the sides in hints (a torch mismatch between the manifests is a hint:
    it explains a difference, it does not stop the comparison)."""
    roots = roots if roots is not None else Roots.default()
    a, b = a.normalized(roots), b.normalized(roots)
    hints = manifest_hints(a.manifest, b.manifest, a=labels[0], b=labels[1])
    changes: list[Change] = []
    for name_a, name_b in _pair_graphs(list(a.graphs), list(b.graphs)):
        if name_b is None:
            changes.append(Change(name_a or "", f"graph only in {labels[0]}"))
            continue
        if name_a is None:
            changes.append(Change(name_b, f"graph only in {labels[1]}"))
            continue
        label = name_b if name_a == name_b else f"{name_a} -> {name_b}"
        try:
            lines = GraphDiff(a.graphs[name_a], b.graphs[name_b], labels).lines()
        except _Malformed as bad:
            which = a if bad.side == "A" else b
            raise UnusableInput(which.label, f"{label}: {bad}") from None
        changes += [Change(label, line) for line in lines]
    return Comparison(changes, hints)


def _pair_graphs(a: list[str], b: list[str]) -> list[tuple[str | None, str | None]]:
    """Same names pair up; what is left pairs by position (compile ids may differ)."""
    if a == b:
        return list(zip(a, b))
    left_a = [g for g in a if g not in b]
    left_b = [g for g in b if g not in a]
    by_position = dict(zip(left_a, left_b))
    pairs: list[tuple[str | None, str | None]] = []
    used_b = set()
    for g in a:
        other = g if g in b else by_position.get(g)
        pairs.append((g, other))
        if other is not None:
            used_b.add(other)
    pairs += [(None, g) for g in b if g not in used_b]
    return pairs


def render(comparison: Comparison, a_label: str, b_label: str) -> str:
    """The text ``diff`` and ``golden check`` print: a headline, one line per change, hints."""
    n = len(comparison.changes)
    if not n:
        lines = [f"same provenance: {a_label} and {b_label} (after normalization)"]
    else:
        lines = [f"{n} change(s) from {a_label} to {b_label}:"]
        lines += [f"  {_clip(str(c))}" for c in comparison.changes]
    lines += [f"hint: {h}" for h in comparison.hints]
    return "\n".join(lines)


class _Malformed(Exception):
    def __init__(self, side: str, message: str) -> None:
        super().__init__(message)
        self.side = side


def _node_map(value: Any, side: str, field: str) -> dict[str, list[str]]:
    if value is None:
        return {}
    try:
        return msgspec.convert(value, dict[str, list[str]])
    except msgspec.ValidationError as exc:
        raise _Malformed(side, f"{field} is not an object of string lists ({exc})") from None


def _names(items: Iterable[str]) -> str:
    return ", ".join(items) or "(none)"


def _list_change(old: list[str], new: list[str], noun: str, plural: str | None = None) -> str | None:
    """How one list of names changed, in the fewest words; None when equal.

    ``post-grad node relux -> relu`` (one name replaced in place), ``post-grad node order
    [a, b] -> [b, a]``, ``post-grad nodes lost: a; gained: c``.
    """
    if old == new:
        return None
    lost = [x for x in old if x not in new]
    gained = [x for x in new if x not in old]
    if not lost and not gained:
        return f"{noun} order [{_names(old)}] -> [{_names(new)}]"
    if len(old) == len(new) and len(lost) == len(gained) == 1 and old.index(lost[0]) == new.index(gained[0]):
        if [x for x in old if x != lost[0]] == [x for x in new if x != gained[0]]:
            return f"{noun} {lost[0]} -> {gained[0]}"
    parts = []
    if lost:
        parts.append(f"lost: {_names(lost)}")
    if gained:
        parts.append(f"gained: {_names(gained)}")
    if [x for x in old if x in new] != [x for x in new if x in old]:
        parts.append(f"order [{_names(old)}] -> [{_names(new)}]")
    return f"{plural or noun + 's'} " + "; ".join(parts)


def _rename(mapping: Mapping[str, str], name: str) -> str:
    return mapping.get(name, name)


def _first_seen(groups: Iterable[Iterable[str]]) -> list[str]:
    return list(dict.fromkeys(x for group in groups for x in group))


class GraphDiff:
    """The changes between two graphs' artifacts (both normalized)."""

    def __init__(self, a: Mapping[str, Any], b: Mapping[str, Any], labels: tuple[str, str] = ("A", "B")) -> None:
        self.a, self.b = a, b
        self.labels = labels
        self.out: list[str] = []
        self.kernel_renames: dict[str, str] = {}
        self.post_renames: dict[str, str] = {}
        self.pre_renames: dict[str, str] = {}
        self.kernels_added: set[str] = set()
        self.kernels_removed: set[str] = set()

    def lines(self) -> list[str]:
        for artifact in ARTIFACT_FILES:
            in_a, in_b = artifact in self.a, artifact in self.b
            if in_a and not in_b:
                self.out.append(f"{_LABEL[artifact]} only in {self.labels[0]}")
            elif in_b and not in_a:
                self.out.append(f"{_LABEL[artifact]} only in {self.labels[1]}")
        if NODE_MAPPINGS in self.a and NODE_MAPPINGS in self.b:
            self._mappings(self.a[NODE_MAPPINGS], self.b[NODE_MAPPINGS])
        if KERNEL_STACK_TRACES in self.a and KERNEL_STACK_TRACES in self.b:
            self._guarded(KERNEL_STACK_TRACES, self._stack_traces)
        if OPSPEC_DEBUG_HANDLES in self.a and OPSPEC_DEBUG_HANDLES in self.b:
            self._guarded(OPSPEC_DEBUG_HANDLES, self._opspecs)
        if KERNEL_INFORMATION in self.a and KERNEL_INFORMATION in self.b:
            before = len(self.out)
            self.out += _generic(
                self._renamed_kernel_keys(self.a[KERNEL_INFORMATION]), self.b[KERNEL_INFORMATION], "kernel_information"
            )
            del self.out[before + _GENERIC_MAX :]
        return self.out

    def _guarded(self, artifact: str, method: Any) -> None:
        """Run one artifact's explainer; if it explained nothing yet the documents differ,
        fall back to JSON paths, so no difference is ever silent."""
        before = len(self.out)
        implied = method(self.a[artifact], self.b[artifact])
        if len(self.out) == before and not implied:
            mine, theirs = self._comparable(artifact, "A"), self._comparable(artifact, "B")
            self.out += _generic(mine, theirs, _LABEL[artifact])[:_GENERIC_MAX]

    # -- node mappings ------------------------------------------------------------------------

    def _mappings(self, doc_a: Mapping[str, Any], doc_b: Mapping[str, Any]) -> None:
        if not isinstance(doc_a, Mapping) or not isinstance(doc_b, Mapping):
            raise _Malformed("A" if not isinstance(doc_a, Mapping) else "B", "node mappings are not an object")
        ma = {f: _node_map(doc_a.get(f), "A", f) for f in MAP_FIELDS}
        mb = {f: _node_map(doc_b.get(f), "B", f) for f in MAP_FIELDS}
        before = len(self.out)

        self._match_kernels(ma["cppCodeToPost"], mb["cppCodeToPost"])
        for old, new in self.kernel_renames.items():
            same = sorted(ma["cppCodeToPost"][old]) == sorted(mb["cppCodeToPost"][new])
            self.out.append(f"kernel renamed: {old} -> {new}" + (" (same post-grad nodes)" if same else ""))
        ma = self._apply_kernel_renames(ma)

        self.post_renames = _global_renames(
            _first_seen([*ma["cppCodeToPost"].values(), ma["postToCppCode"], ma["postToPre"], *ma["preToPost"].values()]),
            _first_seen([*mb["cppCodeToPost"].values(), mb["postToCppCode"], mb["postToPre"], *mb["preToPost"].values()]),
        )
        self.pre_renames = _global_renames(
            _first_seen([ma["preToPost"], *ma["postToPre"].values()]),
            _first_seen([mb["preToPost"], *mb["postToPre"].values()]),
        )
        for old, new in self.post_renames.items():
            self.out.append(f"post-grad node renamed: {old} -> {new} (everywhere)")
        for old, new in self.pre_renames.items():
            self.out.append(f"pre-grad node renamed: {old} -> {new} (everywhere)")
        ma = _rename_maps(ma, self.post_renames, self.pre_renames)

        self._kernels(ma["cppCodeToPost"], mb["cppCodeToPost"])
        self._inverse(ma, mb, "postToCppCode", "cppCodeToPost", "kernel")
        self._pre_links(ma["preToPost"], mb["preToPost"])
        self._inverse(ma, mb, "postToPre", "preToPost", "pre-grad node")
        if doc_a.get("version") != doc_b.get("version"):
            self.out.append(f"version {json.dumps(doc_a.get('version'))} -> {json.dumps(doc_b.get('version'))}")
        extra_a = {k: v for k, v in doc_a.items() if k not in (*MAP_FIELDS, "version")}
        extra_b = {k: v for k, v in doc_b.items() if k not in (*MAP_FIELDS, "version")}
        self.out += _generic(extra_a, extra_b, "node mappings")[:_GENERIC_MAX]
        if len(self.out) == before:
            renamed = {f: ma[f] for f in MAP_FIELDS}
            theirs = {f: mb[f] for f in MAP_FIELDS}
            if _canon(renamed) != _canon(theirs):  # never silent
                self.out += _generic(renamed, theirs, "node mappings")[:_GENERIC_MAX]

    def _match_kernels(self, a: dict[str, list[str]], b: dict[str, list[str]]) -> None:
        """Pair kernels that are only on one side: same node set (a rename), else same
        kernel name (renumbered), else same handle N with nodes in common."""
        only_a = [k for k in a if k not in b]
        only_b = [k for k in b if k not in a]

        def pair(test: Any) -> None:
            for ka in list(only_a):
                for kb in only_b:
                    if test(ka, kb):
                        self.kernel_renames[ka] = kb
                        only_a.remove(ka)
                        only_b.remove(kb)
                        break

        pair(lambda ka, kb: bool(a[ka]) and set(a[ka]) == set(b[kb]))
        pair(lambda ka, kb: ka.rpartition(":")[0] == kb.rpartition(":")[0])
        pair(lambda ka, kb: ka.rpartition(":")[2] == kb.rpartition(":")[2] and set(a[ka]) & set(b[kb]))
        self.kernels_removed = set(only_a)
        self.kernels_added = set(only_b)

    def _apply_kernel_renames(self, maps: dict[str, dict[str, list[str]]]) -> dict[str, dict[str, list[str]]]:
        r = self.kernel_renames
        out = dict(maps)
        out["cppCodeToPost"] = {_rename(r, k): v for k, v in maps["cppCodeToPost"].items()}
        out["postToCppCode"] = {k: [_rename(r, x) for x in v] for k, v in maps["postToCppCode"].items()}
        return out

    def _kernels(self, a: dict[str, list[str]], b: dict[str, list[str]]) -> None:
        for key in a:
            if key not in b:
                self.out.append(f"kernel removed: {key} (was [{_names(a[key])}])")
        for key in b:
            if key not in a:
                self.out.append(f"kernel added: {key} -> [{_names(b[key])}]")
        for key in b:
            if key in a:
                change = _list_change(a[key], b[key], "post-grad node")
                if change:
                    self.out.append(f"kernel {key}: {change}")
        common_a = [k for k in a if k in b]
        common_b = [k for k in b if k in a]
        if common_a != common_b:
            self.out.append(f"kernel order [{_names(common_a)}] -> [{_names(common_b)}]")

    def _inverse(self, ma: dict, mb: dict, field: str, of: str, what: str) -> None:
        """An inverse map is only news when it is not the inverse of its forward map."""
        if _canon(ma[field]) == _canon(mb[field]):
            return
        if _canon(ma[field]) == _canon(_invert(ma[of])) and _canon(mb[field]) == _canon(_invert(mb[of])):
            return  # implied by the forward map's changes, already listed
        for key in _first_seen([ma[field], mb[field]]):
            old, new = ma[field].get(key), mb[field].get(key)
            if old is None:
                self.out.append(f"{field}[{key}] added -> [{_names(new or [])}]")
            elif new is None:
                self.out.append(f"{field}[{key}] removed (was [{_names(old)}])")
            else:
                change = _list_change(old, new, what)
                if change:
                    self.out.append(f"{field}[{key}]: {change}")
        if [k for k in ma[field] if k in mb[field]] != [k for k in mb[field] if k in ma[field]]:
            self.out.append(f"{field}: key order changed")

    def _pre_links(self, a: dict[str, list[str]], b: dict[str, list[str]]) -> None:
        for pre in a:
            if pre not in b:
                self.out.append(f"pre-grad node unlinked: {pre} (was -> [{_names(a[pre])}])")
        for pre in b:
            if pre not in a:
                self.out.append(f"pre-grad node linked: {pre} -> [{_names(b[pre])}]")
            else:
                change = _list_change(a[pre], b[pre], "linked post-grad node")
                if change:
                    self.out.append(f"pre-grad node {pre}: {change}")
        if [k for k in a if k in b] != [k for k in b if k in a]:
            self.out.append(f"pre-grad node order [{_names(a)}] -> [{_names(b)}]")

    # -- stack traces -------------------------------------------------------------------------

    def _stack_traces(self, doc_a: Any, doc_b: Any) -> bool:
        ta = {_rename(self.kernel_renames, k): v for k, v in _node_map(doc_a, "A", "stack traces").items()}
        tb = _node_map(doc_b, "B", "stack traces")
        implied = False
        for key in _first_seen([ta, tb]):
            if key not in ta or key not in tb:
                implied |= self._one_sided(key, ta, tb, "stack traces", lambda: _traces_short(tb[key]))
                continue
            old, new = ta[key], tb[key]
            if old == new:
                continue
            lost = [t for t in old if t not in new]
            gained = [t for t in new if t not in old]
            if not lost and not gained:
                self.out.append(f"stack traces of {key}: order changed")
            elif [_trace_short(t) for t in lost] == [_trace_short(t) for t in gained]:
                self.out.append(f"stack traces of {key}: same lines, text changed at {_traces_short(gained)}")
            else:
                parts = ([f"lost {_traces_short(lost)}"] if lost else []) + ([f"gained {_traces_short(gained)}"] if gained else [])
                self.out.append(f"stack traces of {key}: " + "; ".join(parts))
        return implied

    # -- OpSpec handles -----------------------------------------------------------------------

    def _opspecs(self, doc_a: Any, doc_b: Any) -> bool:
        ka = {_rename(self.kernel_renames, k): v for k, v in _resolved_opspecs(doc_a, "A").items()}
        kb = _resolved_opspecs(doc_b, "B")
        ka = {k: [_rename_spec(s, self.post_renames) for s in v] for k, v in ka.items()}
        implied = False
        for key in _first_seen([ka, kb]):
            if key not in ka or key not in kb:
                implied |= self._one_sided(key, ka, kb, "OpSpecs", lambda: str(len(kb[key])))
                continue
            for old, new in _pair_specs(ka[key], kb[key]):
                if old is None:
                    self.out.append(f"OpSpec added: {key} {_spec_label(new)}")
                elif new is None:
                    self.out.append(f"OpSpec removed: {key} {_spec_label(old)}")
                else:
                    self.out += [f"OpSpec {key} {_spec_label(new)}: {c}" for c in _spec_changes(old, new)]
        if isinstance(doc_a, Mapping) and isinstance(doc_b, Mapping) and doc_a.get("version") != doc_b.get("version"):
            self.out.append(f"OpSpec artifact version {doc_a.get('version')} -> {doc_b.get('version')}")
        return implied

    # -- helpers --------------------------------------------------------------------------------

    def _one_sided(self, key: str, a: Mapping[str, Any], b: Mapping[str, Any], what: str, added: Any) -> bool:
        """A kernel's ``what`` present on one side only: reported, unless the kernel itself
        was added or removed (then the kernel's own line says it). Returns whether it was
        implied that way. ``added()`` describes B's entry for the "added" line."""
        if key not in b:
            if key in self.kernels_removed:
                return True
            self.out.append(f"{what} of {key} removed")
            return False
        if key in self.kernels_added:
            return True
        self.out.append(f"{what} of {key} added: {added()}")
        return False

    def _renamed_kernel_keys(self, doc: Any) -> Any:
        if not isinstance(doc, Mapping):
            return doc
        return {_rename(self.kernel_renames, k): v for k, v in doc.items()}

    def _comparable(self, artifact: str, side: str) -> Any:
        """One side's artifact as the explainer sees it: A with the renames applied, OpSpec
        handles resolved (their ids are content hashes, so content is what counts)."""
        doc = self.a[artifact] if side == "A" else self.b[artifact]
        if artifact == OPSPEC_DEBUG_HANDLES:
            doc = {"version": doc.get("version"), "kernels": _resolved_opspecs(doc, side)}
            if side == "A":
                doc["kernels"] = {
                    k: [_rename_spec(s, self.post_renames) for s in v]
                    for k, v in self._renamed_kernel_keys(doc["kernels"]).items()
                }
            return doc
        return self._renamed_kernel_keys(doc) if side == "A" else doc


_LABEL = {
    NODE_MAPPINGS: "node mappings",
    KERNEL_STACK_TRACES: "stack traces",
    OPSPEC_DEBUG_HANDLES: "OpSpec handles",
    KERNEL_INFORMATION: "kernel_information",
}
_GENERIC_MAX = 12


def _canon(doc: Any) -> str:
    """Order-sensitive identity (dict equality in Python ignores key order; JSON's does not
    matter to readers, but kernel and node order is part of the provenance)."""
    return json.dumps(doc, ensure_ascii=False, sort_keys=False)


def _invert(forward: Mapping[str, Sequence[str]]) -> dict[str, list[str]]:
    inverse: dict[str, list[str]] = {}
    for key, values in forward.items():
        for value in values:
            targets = inverse.setdefault(value, [])
            if key not in targets:
                targets.append(key)
    return inverse


def _global_renames(names_a: list[str], names_b: list[str]) -> dict[str, str]:
    """Names that vanished and names that appeared, equally many: paired in first-seen order."""
    set_a, set_b = set(names_a), set(names_b)
    lost = [n for n in names_a if n not in set_b]
    gained = [n for n in names_b if n not in set_a]
    if lost and len(lost) == len(gained):
        return dict(zip(lost, gained))
    return {}


def _rename_maps(maps: dict[str, dict[str, list[str]]], post: Mapping[str, str], pre: Mapping[str, str]) -> dict:
    if not post and not pre:
        return maps
    return {
        "preToPost": {_rename(pre, k): [_rename(post, v) for v in vs] for k, vs in maps["preToPost"].items()},
        "postToPre": {_rename(post, k): [_rename(pre, v) for v in vs] for k, vs in maps["postToPre"].items()},
        "cppCodeToPost": {k: [_rename(post, v) for v in vs] for k, vs in maps["cppCodeToPost"].items()},
        "postToCppCode": {_rename(post, k): vs for k, vs in maps["postToCppCode"].items()},
    }


_TRACE_FRAME = re.compile(r'File "([^"]+)", line (\d+)[^\n]*\n([^\n]*)')


def _trace_short(trace: str) -> str:
    """A stack trace as its innermost frame: ``examples.py:38 `h = self.act(self.fc1(x))```."""
    frames = _TRACE_FRAME.findall(trace)
    if not frames:
        first = trace.strip().splitlines()[0] if trace.strip() else "(empty)"
        return first[:80]
    file, line, code = frames[-1]
    return f"{Path(file).name}:{line} `{code.strip()[:60]}`"


def _traces_short(traces: Sequence[str]) -> str:
    return ", ".join(_trace_short(t) for t in traces)


# -- OpSpecs in a comparable form: handles resolved (ids are content hashes: compare content) --


def _resolved_opspecs(doc: Any, side: str) -> dict[str, list[dict[str, Any]]]:
    try:
        typed = msgspec.convert(doc, wire.OpSpecDebugHandles)
    except msgspec.ValidationError as exc:
        raise _Malformed(side, f"OpSpec handles are not well-formed ({exc})") from None
    handles = {k: msgspec.to_builtins(v) for k, v in typed.handles.items()}

    def resolve(hid: str, seen: frozenset[str]) -> dict[str, Any]:
        entry = handles.get(hid)
        if entry is None or hid in seen:
            return {"missing": hid}
        return {
            "source": _source_text(entry["source"]),
            "aten_op": entry["aten_op"],
            "ir_chain": list(entry["ir_chain"]),
            "fused_from": [resolve(c, seen | {hid}) for c in entry["fused_from"]],
            "transform_history": [
                f"{t['kind']} by {t['pass_name']}" + (f" ({t['reason']})" if t["reason"] else "")
                for t in entry["transform_history"]
            ],
        }

    return {
        key: [
            {
                "op": s.op,
                "is_reduction": s.is_reduction,
                "iteration_space": list(s.iteration_space),
                "buffer": s.buffer,
                "handle": None if s.debug_handle is None else resolve(s.debug_handle, frozenset()),
            }
            for s in specs
        ]
        for key, specs in typed.kernels.items()
    }


def _source_text(source: Mapping[str, Any] | None) -> str | None:
    if source is None:
        return None
    text = f"{source['file']}:{source['start_line']}"
    if source.get("start_col"):
        text += f":{source['start_col']}"
    if source.get("end_line") is not None:
        text += f"-{source['end_line']}" + (f":{source['end_col']}" if source.get("end_col") is not None else "")
    return text


def _rename_spec(spec: dict[str, Any], post: Mapping[str, str]) -> dict[str, Any]:
    if not post or spec["handle"] is None:
        return spec

    def tree(h: dict[str, Any]) -> dict[str, Any]:
        if "missing" in h:
            return h
        return {**h, "ir_chain": [_rename(post, n) for n in h["ir_chain"]], "fused_from": [tree(c) for c in h["fused_from"]]}

    return {**spec, "handle": tree(spec["handle"])}


def _spec_label(spec: Mapping[str, Any]) -> str:
    return f"{spec['buffer'] or '?'} ({spec['op']})"


def _pair_specs(a: list[dict], b: list[dict]) -> Iterator[tuple[dict | None, dict | None]]:
    """By buffer name when every buffer is named and unique on both sides, else by position."""
    bufs_a, bufs_b = [s["buffer"] for s in a], [s["buffer"] for s in b]
    named = all(bufs_a) and all(bufs_b) and len(set(bufs_a)) == len(a) and len(set(bufs_b)) == len(b)
    if not named:
        for i in range(max(len(a), len(b))):
            yield (a[i] if i < len(a) else None, b[i] if i < len(b) else None)
        return
    index_b = {s["buffer"]: s for s in b}
    for spec in a:
        yield spec, index_b.get(spec["buffer"])
    names_a = set(bufs_a)
    for spec in b:
        if spec["buffer"] not in names_a:
            yield None, spec


def _spec_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    changes = []
    for field in ("op", "is_reduction", "iteration_space"):
        if old[field] != new[field]:
            changes.append(f"{field} {json.dumps(old[field])} -> {json.dumps(new[field])}")
    if old["handle"] is None and new["handle"] is not None:
        changes.append("gained a debug handle")
    elif old["handle"] is not None and new["handle"] is None:
        changes.append("lost its debug handle")
    elif old["handle"] is not None:
        changes += _handle_changes(old["handle"], new["handle"], "handle")
    return changes


def _handle_label(h: Mapping[str, Any]) -> str:
    return "+".join(h.get("ir_chain") or []) or h.get("missing", "?")


def _handle_changes(old: Mapping[str, Any], new: Mapping[str, Any], what: str) -> list[str]:
    if old == new:
        return []
    if "missing" in old or "missing" in new:
        return [f"{what} {json.dumps(old)} -> {json.dumps(new)}"]
    changes = []
    for field in ("source", "aten_op"):
        if old[field] != new[field]:
            changes.append(f"{what} {field} {old[field] or 'null'} -> {new[field] or 'null'}")
    if old["ir_chain"] != new["ir_chain"]:
        change = _list_change(old["ir_chain"], new["ir_chain"], "ir_chain entry", "ir_chain entries")
        changes.append(f"{what} {change}")
    if old["transform_history"] != new["transform_history"]:
        changes.append(
            f"{what} transform_history [{'; '.join(old['transform_history'])}] -> [{'; '.join(new['transform_history'])}]"
        )
    olds = [_handle_label(c) for c in old["fused_from"]]
    news = [_handle_label(c) for c in new["fused_from"]]
    if olds != news:
        changes.append(f"{what} fused_from [{_names(olds)}] -> [{_names(news)}]")
    else:
        for child_old, child_new in zip(old["fused_from"], new["fused_from"]):
            changes += _handle_changes(child_old, child_new, f"{what} constituent {_handle_label(child_new)}")
    return changes


def _generic(a: Any, b: Any, path: str) -> list[str]:
    """Last resort: JSON paths where two documents differ (order-sensitive)."""
    if _canon(a) == _canon(b):
        return []
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        out = []
        for key in _first_seen([a, b]):
            sub = f"{path}[{json.dumps(key)}]"
            if key not in b:
                out.append(f"{sub} removed")
            elif key not in a:
                out.append(f"{sub} added: {_short(b[key])}")
            else:
                out += _generic(a[key], b[key], sub)
        if not out:
            out.append(f"{path}: key order changed")
        return out
    return [f"{path}: {_short(a)} -> {_short(b)}"]


def _clip(line: str, limit: int = 500) -> str:
    """A change line of readable length: a node name can be any size (100 MB, in a test)."""
    return line if len(line) <= limit else f"{line[: limit - 40]}... ({len(line)} characters)"


def _short(value: Any, limit: int = 100) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 3] + "..."
