"""The structural diff of OpSpec debug handles and SuperDSC bundle handles.

Handle ids are content hashes, so handles are compared by content: each side's handles are
resolved into trees (source, ATen op, IR chain, constituents, transforms) and the trees are
compared field by field, the way a person asks ("the handle's source moved", "a constituent
was lost"). Bundles are one group for the whole compile, keyed by bundle path.

Pure: no torch import.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

import msgspec

from spyre_provenance.golden.diff_words import (
    GENERIC_MAX,
    Malformed,
    canon,
    first_seen,
    generic,
    list_change,
    name_list,
    rename,
)
from spyre_provenance.model import wire


def resolved_opspecs(doc: Any, side: str) -> dict[str, list[dict[str, Any]]]:
    try:
        version = doc.get("version") if isinstance(doc, dict) else None
        if not isinstance(version, (int, type(None))):  # a hostile "version" (an object, a list)
            version = None
        typed = msgspec.convert(doc, wire.OPSPEC_DOCS.get(version, wire.OpSpecDebugHandles))  # type: ignore[arg-type]
    except msgspec.ValidationError as exc:
        raise Malformed(side, f"OpSpec handles are not well-formed ({exc})") from None
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
            "transform_history": [_transform_text(t) for t in entry["transform_history"]],
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


def _transform_text(step: Mapping[str, Any]) -> str:
    return f"{step['kind']} by {step['pass_name']}" + (f" ({step['reason']})" if step["reason"] else "")


def _source_text(source: Mapping[str, Any] | None) -> str | None:
    if source is None:
        return None
    text = f"{source['file']}:{source['start_line']}"
    if source.get("start_col"):
        text += f":{source['start_col']}"
    if source.get("end_line") is not None:
        text += f"-{source['end_line']}" + (f":{source['end_col']}" if source.get("end_col") is not None else "")
    return text


def rename_spec(spec: dict[str, Any], post: Mapping[str, str]) -> dict[str, Any]:
    if not post or spec["handle"] is None:
        return spec

    def tree(h: dict[str, Any]) -> dict[str, Any]:
        if "missing" in h:
            return h
        return {
            **h,
            "ir_chain": [rename(post, n) for n in h["ir_chain"]],
            "fused_from": [tree(c) for c in h["fused_from"]],
        }

    return {**spec, "handle": tree(spec["handle"])}


def spec_label(spec: Mapping[str, Any]) -> str:
    return f"{spec['buffer'] or '?'} ({spec['op']})"


def pair_specs(a: list[dict], b: list[dict]) -> Iterator[tuple[dict | None, dict | None]]:
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


def spec_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
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
        change = list_change(old["ir_chain"], new["ir_chain"], "ir_chain entry", "ir_chain entries")
        changes.append(f"{what} {change}")
    if old["transform_history"] != new["transform_history"]:
        changes.append(
            f"{what} transform_history [{'; '.join(old['transform_history'])}] -> [{'; '.join(new['transform_history'])}]"
        )
    olds = [_handle_label(c) for c in old["fused_from"]]
    news = [_handle_label(c) for c in new["fused_from"]]
    if olds != news:
        changes.append(f"{what} fused_from [{name_list(olds)}] -> [{name_list(news)}]")
    else:
        for child_old, child_new in zip(old["fused_from"], new["fused_from"], strict=True):
            changes += _handle_changes(child_old, child_new, f"{what} constituent {_handle_label(child_new)}")
    return changes


def bundle_lines(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None, labels: tuple[str, str]) -> list[str]:
    """How two sides' bundle handles (normalized, by bundle path) differ, one line each:
    bundles on one side only, a handle gained or lost, a handle's fields as OpSpec handles
    are compared (content, ids being content hashes)."""
    if a is None and b is None:
        return []
    if a is None or b is None:
        side, present = (labels[0], a) if b is None else (labels[1], b)
        return [f"SuperDSC bundles only in {side} ({len(present or {})} bundle(s))"]
    ra, rb = _resolved_bundles(a, "A"), _resolved_bundles(b, "B")
    out: list[str] = []
    for key in first_seen([ra, rb]):
        if key not in rb:
            out.append(f"bundle {key} only in {labels[0]}")
        elif key not in ra:
            out.append(f"bundle {key} only in {labels[1]}")
        else:
            out += [f"bundle {key}: {c}" for c in _bundle_changes(ra[key], rb[key])]
    if not out and canon(a) != canon(b):  # what no rule explains: never silent
        out = generic(a, b, "bundles")[:GENERIC_MAX]
    return out


def _resolved_bundles(bundles: Mapping[str, Any], side: str) -> dict[str, dict[str, Any] | None]:
    return {key: None if h is None else _resolved_bundle(key, h, side) for key, h in bundles.items()}


def _resolved_bundle(key: str, handle: Any, side: str) -> dict[str, Any]:
    try:
        typed = msgspec.convert(handle, wire.BundleHandle)
    except msgspec.ValidationError as exc:
        raise Malformed(side, f"bundle {key}: debug_handle_ is not well-formed ({exc})") from None

    def resolve(h: dict[str, Any]) -> dict[str, Any]:
        return {
            "source": _source_text(h["source"]),
            "aten_op": h["aten_op"],
            "ir_chain": list(h["ir_chain"]),
            "fused_from": [resolve(c) for c in h["fused_from"]],
            "transform_history": [_transform_text(t) for t in h["transform_history"]],
        }

    return resolve(msgspec.to_builtins(typed))


def _bundle_changes(old: dict[str, Any] | None, new: dict[str, Any] | None) -> list[str]:
    if old is None and new is None:
        return []
    if old is None:
        return ["gained a debug_handle_"]
    if new is None:
        return ["lost its debug_handle_"]
    return _handle_changes(old, new, "debug_handle_")
