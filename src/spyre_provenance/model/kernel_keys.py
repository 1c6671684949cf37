"""torch-spyre's kernel provenance key and profiler event name, by the published rule
(REFERENCE.md sections 4.1 and 6; torch-spyre ``_inductor/kernel_provenance.py`` and
``_inductor/profiler_event.py`` at 9a6b71e).

A kernel bundle's key is the SHA-256 of the canonical JSON (sorted keys, compact
separators, ASCII) of ``{"domain": "spyre-kernel-bundle", "version": 1, "specs": [...]}``,
``specs`` being the kernel's OpSpec/LoopSpec tree in order, each OpSpec with its direct
debug handle's id; base32, ``=`` stripped, lowercase, first 16 characters. Its device
event is ``spyre_kernel_v1_<summary>_<key>``, to which the runtime appends ``#<step>``.

The specs are read by field name (torch-spyre's own OpSpecs, or the reference backend's
look-alikes in ``backends.reference.lookalike``). Two fields of torch-spyre's open work (PR
#3449's branch, ``_inductor/kernel_provenance.py`` at 1e640b3) take part only when an OpSpec
has them, so every key of an OpSpec without them stays as main makes it:
``OpSpec.core_id_to_work_slice`` when set and not the mapping older codegen derives (``_is_canonical_core_mapping``),
and ``TensorWorkDivision.num_cores`` in a tensor's work division when the division has the field. Values are made canonical as torch-spyre does: floats
as ``float.hex()``, sympy expressions as ``srepr``, mappings as entries sorted by their
canonical key, sequences as lists, bytes as hex. Pure: no torch; sympy is used only when
a value already is a sympy object (so it is imported already).
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

DOMAIN = "spyre-kernel-bundle"
VERSION = 1
WIDTH = 16
ALPHABET = "abcdefghijklmnopqrstuvwxyz234567"
#: a bare key as an engineer copies it out of a trace
KEY_RE = re.compile(rf"[{ALPHABET}]{{{WIDTH}}}")
#: the device event name (torch-spyre's own parser, ``profiler_event._EVENT_KEY_RE``)
EVENT_RE = re.compile(r"spyre_kernel_v(?P<version>[0-9]+)_[A-Za-z0-9_]+?_(?P<key>[a-z2-7]+)(?:#(?P<step>[0-9]+))?")
EVENT_PREFIX = f"spyre_kernel_v{VERSION}_"
#: AIUPTI's name buffer (128 bytes with the NUL) less the widest ``#<size_t>`` step suffix
MAX_EVENT_BASE_BYTES = 127 - len(f"#{(1 << 64) - 1}")

_OPSPEC_FIELDS = (
    "op",
    "is_reduction",
    "iteration_space",
    "args",
    "op_info",
    "tiled_symbols",
    "tiled_symbol_trip_counts",
    "symbolic_dim_bounds",
    "node_output_ranges",
)
_NOT_ALNUM = re.compile(r"[^A-Za-z0-9]+")
#: torch-spyre's ``MATMUL_REDUCTION_OPS``: their canonical core mapping varies the iteration
#: space's last dimension fastest (its ``contiguous_dim``)
MATMUL_OPS = frozenset({"batchmatmul", "batchmatmulfp8"})
#: the free symbol torch-spyre's core mappings are written in
CORE_ID = "core_id"


def bundle_key(specs: Sequence[Any]) -> str:
    """The kernel provenance key of a finalized OpSpec/LoopSpec tree."""
    payload = {"domain": DOMAIN, "version": VERSION, "specs": [_spec(s) for s in specs]}
    digest = hashlib.sha256(_json(payload).encode("ascii")).digest()
    return base64.b32encode(digest).decode("ascii").rstrip("=").lower()[:WIDTH]


def handle_ids(specs: Sequence[Any]) -> list[str]:
    """The ids of the OpSpecs' direct handles, depth first, each once (the descriptor's
    ``debug_handle_ids``: what torch-spyre's profiler puts in ``args.debug_handles``)."""
    return list(dict.fromkeys(str(h.id) for h in _handles(specs)))


class MalformedHandles(ValueError):
    """An event's ``args.debug_handles`` that is no list of handle ids (the message says why)."""


def event_handle_ids(value: Any) -> list[str] | None:
    """The handle ids of a profiler event's ``args.debug_handles`` (None: the event has none).

    torch-spyre's C++ (``AiuptiActivityHandlers.cpp``) writes a JSON array of strings; some
    writers quote that array, a string holding it (``"[\"123\", \"456\"]"``), which reads as the
    same array. Ids may be numbers. Raises ``MalformedHandles`` for anything else: a string that
    is no JSON array, an element that is no id, a value of another type."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise MalformedHandles(f"debug_handles {_shown(value)} is a string holding no JSON array") from None
        if not isinstance(value, list):
            raise MalformedHandles(f"debug_handles {_shown(value)} is a string holding no JSON array")
    if not isinstance(value, list):
        raise MalformedHandles(f"debug_handles {_shown(value)} is no array of handle ids")
    ids = []
    for item in value:
        if isinstance(item, bool) or not isinstance(item, (str, int)) or (isinstance(item, str) and not item):
            raise MalformedHandles(f"debug_handles holds {_shown(item)}, no handle id")
        ids.append(str(item))
    return ids


def _shown(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 80 else text[:77] + "..."


def event_name(aten_ops: Iterable[str], key: str) -> str:
    """The device event name torch-spyre's runtime gives the kernel (without ``#<step>``):
    ``fused_`` and the sorted ATen packet names (``aten.linear.default`` -> ``linear``)."""
    packets = sorted({_packet(a) for a in aten_ops})
    summary = "_".join(["fused", *(packets or ["unknown"])])
    tail = f"_{key}"
    budget = max(1, MAX_EVENT_BASE_BYTES - len(EVENT_PREFIX) - len(tail))
    summary = summary[:budget].rstrip("_") or "u"
    return f"{EVENT_PREFIX}{summary}{tail}"


def key_of_event(name: str) -> str | None:
    """The key in a device event name, or None when ``name`` is not one (version 1 only)."""
    match = EVENT_RE.fullmatch(name)
    if match is None or int(match["version"]) != VERSION or len(match["key"]) != WIDTH:
        return None
    return match["key"]


def _packet(aten_op: str) -> str:
    parts = aten_op.split(".")
    packet = parts[1] if len(parts) >= 3 else aten_op
    return _NOT_ALNUM.sub("_", packet).strip("_") or "unknown"


def _is_loop(spec: Any) -> bool:
    return hasattr(spec, "body") and hasattr(spec, "count") and not hasattr(spec, "iteration_space")


def _handles(specs: Sequence[Any]) -> Iterator[Any]:
    for spec in specs:
        if _is_loop(spec):
            yield from _handles(spec.body)
        elif getattr(spec, "debug_handle", None) is not None:
            yield spec.debug_handle


def _spec(spec: Any) -> Any:
    if _is_loop(spec):
        return {"kind": "loop", "count": _value(spec.count), "body": [_spec(s) for s in spec.body]}
    fields = {f: getattr(spec, f, None) for f in _OPSPEC_FIELDS}
    handle = getattr(spec, "debug_handle", None)
    result: dict[str, Any] = {
        "kind": "op",
        "op": fields["op"],
        "is_reduction": fields["is_reduction"],
        # iteration-space order is the generated loops' order: kept, not sorted
        "iteration_space": [
            [_value(symbol), _value(extent), _value(split)]
            for symbol, (extent, split) in (fields["iteration_space"] or {}).items()
        ],
        "args": [_tensor_arg(a) for a in fields["args"] or ()],
        "op_info": _value(fields["op_info"] or {}),
        "tiled_symbols": [[_value(s) for s in level] for level in fields["tiled_symbols"] or ()],
        "tiled_symbol_trip_counts": _value(fields["tiled_symbol_trip_counts"] or {}),
        "symbolic_dim_bounds": _value(fields["symbolic_dim_bounds"] or {}),
        "node_output_ranges": _value(fields["node_output_ranges"]),
        "debug_handle_id": None if handle is None else str(handle.id),
    }
    mapping = getattr(spec, "core_id_to_work_slice", None)  # PR #3449's field; main has none
    if mapping is not None and not _is_canonical_core_mapping(fields["op"], fields["iteration_space"] or {}, mapping):
        result["core_id_to_work_slice"] = _value(mapping)
    return result


def _is_canonical_core_mapping(op: Any, space: Mapping[Any, Any], mapping: Mapping[Any, Any]) -> bool:
    """Whether ``mapping`` gives every core the work slice torch-spyre's older codegen derived
    (``core_mapping.derive_core_mapping`` with no grouped owners): over the iteration space's
    dimensions in order (a matmul's last one first when split), a dimension split ``s`` at
    stride ``t`` (the product of the splits before it) gives core ``c`` the slice
    ``(c // t) % s``. Compared core by core over the product of the splits, as torch-spyre's
    ``core_mappings_equal`` does; a mapping that does not evaluate to integers is not canonical."""
    dims = list(space)
    if set(mapping) != set(dims):
        return False
    splits = [int(space[d][1]) for d in dims]
    order = list(range(len(dims)))
    if dims and op in MATMUL_OPS and splits[-1] > 1:
        order.insert(0, order.pop())
    cores = 1
    for split in splits:
        cores *= split
    for core in range(cores):
        stride = 1
        for i in order:
            expected = 0 if splits[i] == 1 else (core // stride) % splits[i]
            stride *= splits[i]
            if _slice_of(mapping[dims[i]], core) != expected:
                return False
    return True


def _slice_of(expression: Any, core: int) -> int | None:
    """A core mapping's entry at one core: an int, or a sympy expression in ``core_id``."""
    if isinstance(expression, int) and not isinstance(expression, bool):
        return expression
    free = getattr(expression, "free_symbols", None)
    if free is None:
        return None
    try:
        value = expression.subs({s: core for s in free if str(s) == CORE_ID})
        return int(value) if not value.free_symbols and value.is_integer else None
    except (TypeError, ValueError, AttributeError):
        return None


def _tensor_arg(arg: Any) -> dict[str, Any]:
    arrangement = getattr(arg, "element_arrangement", None)
    result = {
        "is_input": arg.is_input,
        "arg_index": arg.arg_index,
        "device_dtype": str(arg.device_dtype),
        "device_size": _value(arg.device_size),
        "device_coordinates": _value(arg.device_coordinates),
        "allocation": _value(getattr(arg, "allocation", {})),
        "name": getattr(arg, "name", None),
        "device_tile_advance_expr": _value(getattr(arg, "device_tile_advance_expr", None)),
        "element_arrangement": getattr(arrangement, "name", arrangement),
    }
    division = getattr(arg, "work_division", None)
    if division is not None:  # only an explicit override takes part: older keys stay as they were
        result["work_division"] = {
            "work_slices": _value(division.work_slices),
            "core_id_to_work_slice": _value(division.core_id_to_work_slice),
        }
        if hasattr(division, "num_cores"):  # PR #3449's division: its core domain, None included
            result["work_division"]["num_cores"] = _value(division.num_cores)
    return result


def _value(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return {"float": value.hex()}  # exact, signed zero kept, no float formatting
    sympy = sys.modules.get("sympy")
    if sympy is not None and isinstance(value, sympy.Basic):
        return {"sympy": sympy.srepr(value)}
    if isinstance(value, Mapping):
        items = [[_value(k), _value(v)] for k, v in value.items()]
        items.sort(key=lambda pair: _json(pair[0]))
        return {"mapping": items}
    if isinstance(value, (bytes, bytearray)):
        return {"bytes": bytes(value).hex()}
    if isinstance(value, Sequence) and not isinstance(value, str):
        return [_value(v) for v in value]
    raise TypeError(f"no canonical form for a {type(value).__module__}.{type(value).__qualname__} in an OpSpec")


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=True, allow_nan=False, sort_keys=True, separators=(",", ":"))
