"""The structural diff: two sets of artifacts explained the way a person asks about them.

``compare(a, b)`` normalizes both sides, pairs their graphs (by name, then by position),
and lists kernels added, removed or renamed, post-grad nodes gained or lost per kernel,
pre/post links changed, stack-trace and OpSpec handle changes; ``render`` prints it, one
line per change, with the manifests' hints.

Pure: no torch import.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Union

import msgspec

from spyre_provenance import audit
from spyre_provenance.errors import UnusableInput
from spyre_provenance.golden.cases import manifest_hints
from spyre_provenance.golden.normalize import Roots
from spyre_provenance.golden.store import ARTIFACT_FILES, Provenance
from spyre_provenance.model import wire
from spyre_provenance.pairing import pair_graphs, pair_kernels
from spyre_provenance.model.names import (
    KERNEL_INFORMATION,
    KERNEL_STACK_TRACES,
    MAP_FIELDS,
    NODE_MAPPINGS,
    OPSPEC_DEBUG_HANDLES,
)


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
    for name_a, name_b in pair_graphs(list(a.graphs), list(b.graphs), lambda g: g, group=_rank_part):
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
    changes += audit_changes(a.audit, b.audit)
    if (a.audit is None) != (b.audit is None):
        hints.append(f"provenance audit not compared: only {labels[0] if b.audit is None else labels[1]} has one")
    logs = [label for side, label in zip((a, b), labels) if not side.holds_bundles]
    if a.audit is not None and b.audit is not None and not a.graphs and not b.graphs:
        return Comparison(changes, hints)  # two audits: nothing else to compare
    if logs:
        hints.append(f"SuperDSC bundles not compared: {' and '.join(logs)} is a TORCH_TRACE log, which holds none")
        return Comparison(changes, hints)
    try:
        changes += [Change("", line) for line in bundle_lines(a.bundles, b.bundles, labels)]
    except _Malformed as bad:
        raise UnusableInput((a if bad.side == "A" else b).label, str(bad)) from None
    return Comparison(changes, hints)


def audit_changes(a: Any, b: Any) -> list[Change]:
    """The provenance audits' changes (``audit.compare``), one per line, when both sides
    have one. Coverage that fell is said so in the line."""
    if a is None or b is None:
        return []
    found = audit.compare(audit.from_document(a), audit.from_document(b))
    return [Change("audit", line) for line in found.lines]


def _rank_part(graph: str) -> str:
    """``rank1`` of ``rank1/graph_00_0-0_inference`` (a multi-rank run's graphs), else ''."""
    return graph.split("/", 1)[0] if "/" in graph else ""


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
        """Pair kernels that are only on one side (``pairing.pair_kernels``)."""
        paired = pair_kernels(a, b)
        self.kernel_renames.update(paired.renamed)
        self.kernels_removed = set(paired.removed)
        self.kernels_added = set(paired.added)

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
                implied |= self._one_sided(key, tb, "stack traces", lambda: _traces_short(tb[key]))
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
                implied |= self._one_sided(key, kb, "OpSpecs", lambda: str(len(kb[key])))
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

    def _one_sided(self, key: str, b: Mapping[str, Any], what: str, added: Any) -> bool:
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


# -- SuperDSC bundles: one group of the whole compile, by bundle path (not per graph) --------


class _BundleTransform(msgspec.Struct, forbid_unknown_fields=True):
    """A transform step as ``ProvenanceTransform.to_dict()`` writes it (its reason may be null)."""

    kind: str
    pass_name: str
    reason: Union[str, None] = None


class _BundleHandle(msgspec.Struct, forbid_unknown_fields=True):
    """A bundle's ``debug_handle_``: ``DebugHandle.to_dict()``, children nested."""

    id: str
    source: Union[wire.SourceEntry, None]  # type: ignore[valid-type]
    aten_op: Union[str, None]
    ir_chain: list[str]
    fused_from: list[_BundleHandle]
    transform_history: list[_BundleTransform]


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
    for key in _first_seen([ra, rb]):
        if key not in rb:
            out.append(f"bundle {key} only in {labels[0]}")
        elif key not in ra:
            out.append(f"bundle {key} only in {labels[1]}")
        else:
            out += [f"bundle {key}: {c}" for c in _bundle_changes(ra[key], rb[key])]
    if not out and _canon(a) != _canon(b):  # what no rule explains: never silent
        out = _generic(a, b, "bundles")[:_GENERIC_MAX]
    return out


def _resolved_bundles(bundles: Mapping[str, Any], side: str) -> dict[str, dict[str, Any] | None]:
    return {key: None if h is None else _resolved_bundle(key, h, side) for key, h in bundles.items()}


def _resolved_bundle(key: str, handle: Any, side: str) -> dict[str, Any]:
    try:
        typed = msgspec.convert(handle, _BundleHandle)
    except msgspec.ValidationError as exc:
        raise _Malformed(side, f"bundle {key}: debug_handle_ is not well-formed ({exc})") from None

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
