"""torch-spyre's next formats, as PR #3449's branch writes them (read at torch-spyre/torch-spyre
1e640b3 and d23e29b; never copied): the OpSpec generation with ``core_id_to_work_slice`` and
``TensorWorkDivision.num_cores``, and the ``spyre_provenance.json`` sidecar.

The OpSpec classes have the branch's field names (its ``kernel_provenance._EXPECTED_*_SCHEMA``)
and hold sympy values as its codegen does. The sidecar builder follows the branch's writer
(``_inductor/provenance_artifact.py``, ``provenance_writer.py``): normalized handles keyed by
decimal id, kernel identities keyed by the 16-character bundle key, occurrences and compile
projections keyed by the SHA-256 of their canonical payloads, keys sorted, ``indent=2``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from helpers.fresh_process import environment
from spyre_provenance.model import kernel_keys

COMPILE_DOMAIN = "torch-spyre-compile-v1"
OCCURRENCE_DOMAIN = "torch-spyre-occurrence-v1"


@dataclasses.dataclass(frozen=True)
class TensorWorkDivision:
    work_slices: dict[Any, int]
    core_id_to_work_slice: dict[Any, Any]
    num_cores: int | None = None  # the branch's new field


@dataclasses.dataclass
class TensorArg:
    is_input: bool
    arg_index: int
    device_dtype: str
    device_size: list[int]
    device_coordinates: list[Any]
    allocation: dict[str, Any] = dataclasses.field(default_factory=dict)
    name: str | None = None
    device_tile_advance_expr: Any = None
    element_arrangement: str = "STANDARD"
    work_division: TensorWorkDivision | None = None


@dataclasses.dataclass
class OpSpec:
    op: str
    is_reduction: bool
    iteration_space: dict[Any, tuple[Any, int]]
    args: Sequence[TensorArg]
    op_info: dict[str, Any]
    tiled_symbols: list[list[Any]] = dataclasses.field(default_factory=list)
    core_id_to_work_slice: dict[Any, Any] | None = None  # the branch's new field
    tiled_symbol_trip_counts: dict[Any, int] = dataclasses.field(default_factory=dict)
    symbolic_dim_bounds: dict[str, tuple[int, int]] = dataclasses.field(default_factory=dict)
    node_output_ranges: tuple[Any, ...] | None = None
    debug_handle: Any = None


def digest(value: Any) -> str:
    """The branch's ``_canonical_digest``: SHA-256 hex of canonical JSON."""
    text = json.dumps(value, ensure_ascii=True, allow_nan=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def _source(src: Any) -> dict[str, Any] | None:
    if src is None:
        return None
    return {
        "file": src.file,
        "start_line": src.start_line,
        "start_col": src.start_col,
        "end_line": src.end_line,
        "end_col": src.end_col,
    }


def _normalize(handle: Any, into: dict[str, dict[str, Any]]) -> None:
    for child in handle.fused_from:
        _normalize(child, into)
    into[str(handle.id)] = {
        "id": str(handle.id),
        "source": _source(handle.source),
        "aten_op": handle.aten_op,
        "ir_chain": list(handle.ir_chain),
        "fused_from": [str(c.id) for c in handle.fused_from],
        "transform_history": [
            {"kind": t.kind, "pass_name": t.pass_name, "reason": t.reason} for t in handle.transform_history
        ],
    }


def _aten_ops(ids: Iterable[str], handles: Mapping[str, dict[str, Any]]) -> list[str]:
    found: set[str] = set()
    pending = list(ids)
    while pending:
        handle = handles[pending.pop()]
        if handle["aten_op"]:
            found.add(handle["aten_op"])
        pending.extend(handle["fused_from"])
    return sorted(found)


def sidecar(
    kernels: Sequence[tuple[str, Sequence[Any], Sequence[int]]],
    *,
    pre_to_post: Mapping[str, list[str]] | None = None,
    cpp_to_post: Mapping[str, list[str]] | None = None,
    stack_traces: Mapping[str, list[str]] | None = None,
    level: int = 1,
) -> dict[str, Any]:
    """One compile's sidecar: ``kernels`` are (wrapper kernel name, its OpSpecs, the ordinals
    its ``name:N`` aliases got), in wrapper order; the upstream maps are the compile's
    filtered v2.0 mapping (``upstreamJoin`` ``ok`` when every alias is in ``cpp_to_post``)."""
    handles: dict[str, dict[str, Any]] = {}
    identities: dict[str, dict[str, Any]] = {}
    pairs: list[list[str]] = []
    for name, specs, _ in kernels:
        key = kernel_keys.bundle_key(specs)
        bindings = []
        for path, spec in _positions(specs):
            if spec.debug_handle is not None:
                _normalize(spec.debug_handle, handles)
                bindings.append({"specPath": list(path), "handleId": str(spec.debug_handle.id)})
        direct = list(dict.fromkeys(b["handleId"] for b in bindings))
        atens = _aten_ops(direct, handles)
        identities[key] = {
            "directHandleIds": direct,
            "specHandleBindings": bindings,
            "atenOps": atens,
            "eventNameBase": kernel_keys.event_name(atens, key),
        }
        pairs.append([name, key])
    compile_id = digest({"domain": COMPILE_DOMAIN, "kernels": pairs})
    occurrences = {}
    aliases = []
    for (name, key), (_, _, ordinals) in zip(pairs, kernels, strict=True):
        occurrence = {"identityKey": key, "compileId": compile_id, "compilerKernelName": name}
        oid = digest({"domain": OCCURRENCE_DOMAIN, **occurrence})
        occurrence["registrations"] = [{"ordinal": n, "alias": f"{name}:{n}"} for n in ordinals]
        occurrences[oid] = occurrence
        aliases += [f"{name}:{n}" for n in ordinals]
    cpp = dict(cpp_to_post or {})
    pre = dict(pre_to_post or {})
    stacks = {
        alias: {
            "stackTraces": list((stack_traces or {}).get(alias, [])),
            "postGradNodes": list(cpp.get(alias, [])),
            "preGradNodes": sorted({p for p, posts in pre.items() for q in cpp.get(alias, []) if q in posts}),
        }
        for alias in aliases
        if alias in cpp
    }
    join = "ok" if level and aliases and set(cpp) == set(aliases) else "unavailable-provenance-level-0"
    if not level:
        cpp, pre, stacks = {}, {}, {}
    projection = {
        "source": "inductor_provenance_tracking_node_mappings",
        "version": 2.0,
        "producer": {"torchSpyreVersion": "0.1.0", "torchVersion": "2.13.0+cpu"},
        "settings": {"provenanceTrackingLevel": level, "structuredTracing": True},
        "kernels": [{"compilerKernelName": n, "identityKey": k} for n, k in pairs],
        "uncollectedKernels": [],
        "upstreamProjectionFailed": False,
        "upstreamJoin": join,
        "preToPost": pre,
        "postToPre": _invert(pre),
        "cppCodeToPost": cpp,
        "postToCppCode": _invert(cpp),
        "kernelStackTraces": stacks,
    }
    return _sorted(
        {
            "schemaVersion": 1,
            "eventKey": {
                "version": 1,
                "algorithm": "sha256-prefix-80-base32-lower",
                "width": 16,
                "stepAttribution": "bundle",
            },
            "mergeGeneration": 1,
            "status": "complete" if join == "ok" else "partial",
            "diagnostics": {},
            "handles": handles,
            "kernelIdentities": identities,
            "kernelOccurrences": occurrences,
            "upstreamProjections": {compile_id: projection},
        }
    )


def text(document: Mapping[str, Any]) -> str:
    """The sidecar's bytes as the branch writes them (``_serialize_document``)."""
    return json.dumps(document, ensure_ascii=True, allow_nan=False, indent=2, sort_keys=True) + "\n"


def _positions(specs: Sequence[Any], prefix: tuple[int, ...] = ()) -> Iterable[tuple[tuple[int, ...], Any]]:
    for i, spec in enumerate(specs):
        if hasattr(spec, "body") and not hasattr(spec, "op"):
            yield from _positions(spec.body, (*prefix, i))
        else:
            yield (*prefix, i), spec


def _invert(mapping: Mapping[str, list[str]]) -> dict[str, list[str]]:
    inverse: dict[str, list[str]] = {}
    for source in sorted(mapping):
        for target in mapping[source]:
            inverse.setdefault(target, []).append(source)
    return inverse


def _sorted(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _sorted(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted(v) for v in value]
    return value


def log_records(tmp_path: Path, records: dict[str, str]) -> Path:
    """A TORCH_TRACE log of one compile [0/0] holding ``records`` (artifact name -> text),
    written by torch's own structured logging, as a compile logs them."""
    tmp_path.mkdir()
    for name, text in records.items():
        (tmp_path / f"{name}.txt").write_text(text)
    driver = (
        "import sys\n"
        "from pathlib import Path\n"
        "from torch._guards import CompileContext, CompileId, compile_context\n"
        "from torch._logging._internal import trace_structured, trace_structured_artifact\n"
        "with compile_context(CompileContext(CompileId(frame_id=0, frame_compile_id=0))):\n"
        "    for path in map(Path, sys.argv[1:]):\n"
        "        text = path.read_text()\n"
        "        if path.stem == 'inductor_output_code':\n"
        "            trace_structured('inductor_output_code', payload_fn=lambda: text)\n"
        "        else:\n"
        "            trace_structured_artifact(path.stem, 'json', payload_fn=lambda: text)\n"
    )
    logs = tmp_path / "logs"
    paths = [str(tmp_path / f"{name}.txt") for name in records]
    env = environment({"TORCH_TRACE": str(logs)})
    subprocess.run([sys.executable, "-c", driver, *paths], env=env, check=True, timeout=300)
    (log,) = logs.iterdir()
    return log


def of_graph_folder(folder: Path, *, moved: Mapping[str, int] | None = None) -> dict[str, Any]:
    """The sidecar torch-spyre's branch would write for the compile of one graph folder:
    each call site's OpSpecs rebuilt as the branch's (their handles, sources, ATen ops and
    fusion trees the hook recorded), in ``spyre_opspec_debug_handles`` order, with the
    folder's node mapping and stack traces. ``moved``: handle id -> another source line, so
    torch-spyre's sidecar and the hook disagree on it."""
    import sympy

    from spyre_provenance.backends.reference.lookalike import DebugHandle, ProvenanceTransform, SourceLoc

    def read(name: str) -> dict[str, Any]:
        return json.loads((folder / f"{name}.json").read_text())

    artifact = read("spyre_opspec_debug_handles")
    mapping = read("inductor_provenance_tracking_node_mappings")
    traces = read("inductor_provenance_tracking_kernel_stack_traces")
    records = artifact["handles"]

    def handle(hid: str) -> DebugHandle:
        h = records[hid]
        src = h["source"]
        line = (moved or {}).get(hid, src["start_line"]) if src else None
        return DebugHandle(
            int(hid),
            SourceLoc(src["file"], line, src["start_col"], src["end_line"], src["end_col"]) if src else None,
            h["aten_op"],
            tuple(h["ir_chain"]),
            tuple(handle(c) for c in h["fused_from"]),
            tuple(ProvenanceTransform(t["kind"], t["pass_name"], t["reason"]) for t in h["transform_history"]),
        )

    kernels = []
    for site, specs in artifact["kernels"].items():
        name, ordinal = site.rsplit(":", 1)
        built = [
            OpSpec(
                s["op"],
                s["is_reduction"],
                {sympy.Symbol(f"c{i}"): (sympy.Integer(n), 1) for i, n in enumerate(s["iteration_space"])},
                [],
                {},
                debug_handle=handle(s["debug_handle"]) if s["debug_handle"] is not None else None,
            )
            for s in specs
        ]
        kernels.append((name, built, [int(ordinal)]))
    return sidecar(
        kernels,
        pre_to_post=mapping.get("preToPost"),
        cpp_to_post=mapping.get("cppCodeToPost"),
        stack_traces=traces,
    )
