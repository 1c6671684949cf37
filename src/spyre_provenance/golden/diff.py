"""The structural diff: two sets of artifacts explained the way a person asks about them.

``differences(a, b)`` normalizes both sides, pairs their graphs (by name, then by position),
and lists kernels added, removed or renamed, post-grad nodes gained or lost per kernel,
pre/post links changed, stack-trace and OpSpec handle changes; ``render`` prints it, one
line per change, with the manifests' hints. Handles and bundles are compared in
``golden.diff_handles``; the wording both share is ``golden.diff_words``.

Pure: no torch import.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from spyre_provenance.audit import report
from spyre_provenance.base.errors import UnusableInput
from spyre_provenance.golden.cases import manifest_hints
from spyre_provenance.golden.diff_handles import (
    bundle_lines,
    pair_specs,
    rename_spec,
    resolved_opspecs,
    spec_changes,
    spec_label,
)
from spyre_provenance.golden.diff_words import (
    GENERIC_MAX,
    Malformed,
    canon,
    clip,
    first_seen,
    generic,
    list_change,
    name_list,
    rename,
    trace_short,
    traces_short,
)
from spyre_provenance.golden.normalize import Roots
from spyre_provenance.golden.store import ARTIFACT_FILES, Provenance
from spyre_provenance.links.pairing import pair_graphs, pair_kernels
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
class Differences:
    changes: list[Change]
    hints: list[str]

    @property
    def equal(self) -> bool:
        return not self.changes


def differences(
    a: Provenance, b: Provenance, roots: Roots | None = None, *, labels: tuple[str, str] = ("A", "B")
) -> Differences:
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
        except Malformed as bad:
            which = a if bad.side == "A" else b
            raise UnusableInput(which.label, f"{label}: {bad}") from None
        changes += [Change(label, line) for line in lines]
    changes += audit_changes(a.audit, b.audit)
    if (a.audit is None) != (b.audit is None):
        hints.append(f"provenance audit not compared: only {labels[0] if b.audit is None else labels[1]} has one")
    logs = [label for side, label in zip((a, b), labels, strict=True) if not side.holds_bundles]
    if a.audit is not None and b.audit is not None and not a.graphs and not b.graphs:
        return Differences(changes, hints)  # two audits: nothing else to compare
    if logs:
        hints.append(f"SuperDSC bundles not compared: {' and '.join(logs)} is a TORCH_TRACE log, which holds none")
        return Differences(changes, hints)
    try:
        changes += [Change("", line) for line in bundle_lines(a.bundles, b.bundles, labels)]
    except Malformed as bad:
        raise UnusableInput((a if bad.side == "A" else b).label, str(bad)) from None
    return Differences(changes, hints)


def audit_changes(a: Any, b: Any) -> list[Change]:
    """The provenance audits' changes (``audit_report.changes_between``), one per line, when both sides
    have one. Coverage that fell is said so in the line."""
    if a is None or b is None:
        return []
    found = report.changes_between(report.from_document(a), report.from_document(b))
    return [Change("audit", line) for line in found.lines]


def _rank_part(graph: str) -> str:
    """``rank1`` of ``rank1/graph_00_0-0_inference`` (a multi-rank run's graphs), else ''."""
    return graph.split("/", 1)[0] if "/" in graph else ""


def render(comparison: Differences, a_label: str, b_label: str) -> str:
    """The text ``diff`` and ``golden check`` print: a headline, one line per change, hints."""
    n = len(comparison.changes)
    if not n:
        lines = [f"same provenance: {a_label} and {b_label} (after normalization)"]
    else:
        lines = [f"{n} change(s) from {a_label} to {b_label}:"]
        lines += [f"  {clip(str(c))}" for c in comparison.changes]
    lines += [f"hint: {h}" for h in comparison.hints]
    return "\n".join(lines)


def _node_map(value: Any, side: str, field: str) -> dict[str, list[str]]:
    if value is None:
        return {}
    try:
        return msgspec.convert(value, dict[str, list[str]])
    except msgspec.ValidationError as exc:
        raise Malformed(side, f"{field} is not an object of string lists ({exc})") from None


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
            self.out += generic(
                self._renamed_kernel_keys(self.a[KERNEL_INFORMATION]), self.b[KERNEL_INFORMATION], "kernel_information"
            )
            del self.out[before + GENERIC_MAX :]
        return self.out

    def _guarded(self, artifact: str, method: Any) -> None:
        """Run one artifact's explainer; if it explained nothing yet the documents differ,
        fall back to JSON paths, so no difference is ever silent."""
        before = len(self.out)
        implied = method(self.a[artifact], self.b[artifact])
        if len(self.out) == before and not implied:
            mine, theirs = self._comparable(artifact, "A"), self._comparable(artifact, "B")
            self.out += generic(mine, theirs, _LABEL[artifact])[:GENERIC_MAX]

    # -- node mappings ------------------------------------------------------------------------

    def _mappings(self, doc_a: Mapping[str, Any], doc_b: Mapping[str, Any]) -> None:
        if not isinstance(doc_a, Mapping) or not isinstance(doc_b, Mapping):
            raise Malformed("A" if not isinstance(doc_a, Mapping) else "B", "node mappings are not an object")
        ma = {f: _node_map(doc_a.get(f), "A", f) for f in MAP_FIELDS}
        mb = {f: _node_map(doc_b.get(f), "B", f) for f in MAP_FIELDS}
        before = len(self.out)

        self._match_kernels(ma["cppCodeToPost"], mb["cppCodeToPost"])
        for old, new in self.kernel_renames.items():
            same = sorted(ma["cppCodeToPost"][old]) == sorted(mb["cppCodeToPost"][new])
            self.out.append(f"kernel renamed: {old} -> {new}" + (" (same post-grad nodes)" if same else ""))
        ma = self._apply_kernel_renames(ma)

        self.post_renames = _global_renames(
            first_seen(
                [*ma["cppCodeToPost"].values(), ma["postToCppCode"], ma["postToPre"], *ma["preToPost"].values()]
            ),
            first_seen(
                [*mb["cppCodeToPost"].values(), mb["postToCppCode"], mb["postToPre"], *mb["preToPost"].values()]
            ),
        )
        self.pre_renames = _global_renames(
            first_seen([ma["preToPost"], *ma["postToPre"].values()]),
            first_seen([mb["preToPost"], *mb["postToPre"].values()]),
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
        self.out += generic(extra_a, extra_b, "node mappings")[:GENERIC_MAX]
        if len(self.out) == before:
            renamed = {f: ma[f] for f in MAP_FIELDS}
            theirs = {f: mb[f] for f in MAP_FIELDS}
            if canon(renamed) != canon(theirs):  # never silent
                self.out += generic(renamed, theirs, "node mappings")[:GENERIC_MAX]

    def _match_kernels(self, a: dict[str, list[str]], b: dict[str, list[str]]) -> None:
        """Pair kernels that are only on one side (``pairing.pair_kernels``)."""
        paired = pair_kernels(a, b)
        self.kernel_renames.update(paired.renamed)
        self.kernels_removed = set(paired.removed)
        self.kernels_added = set(paired.added)

    def _apply_kernel_renames(self, maps: dict[str, dict[str, list[str]]]) -> dict[str, dict[str, list[str]]]:
        r = self.kernel_renames
        out = dict(maps)
        out["cppCodeToPost"] = {rename(r, k): v for k, v in maps["cppCodeToPost"].items()}
        out["postToCppCode"] = {k: [rename(r, x) for x in v] for k, v in maps["postToCppCode"].items()}
        return out

    def _kernels(self, a: dict[str, list[str]], b: dict[str, list[str]]) -> None:
        for key in a:
            if key not in b:
                self.out.append(f"kernel removed: {key} (was [{name_list(a[key])}])")
        for key in b:
            if key not in a:
                self.out.append(f"kernel added: {key} -> [{name_list(b[key])}]")
        for key in b:
            if key in a:
                change = list_change(a[key], b[key], "post-grad node")
                if change:
                    self.out.append(f"kernel {key}: {change}")
        common_a = [k for k in a if k in b]
        common_b = [k for k in b if k in a]
        if common_a != common_b:
            self.out.append(f"kernel order [{name_list(common_a)}] -> [{name_list(common_b)}]")

    def _inverse(self, ma: dict, mb: dict, field: str, of: str, what: str) -> None:
        """An inverse map is only news when it is not the inverse of its forward map."""
        if canon(ma[field]) == canon(mb[field]):
            return
        if canon(ma[field]) == canon(_invert(ma[of])) and canon(mb[field]) == canon(_invert(mb[of])):
            return  # implied by the forward map's changes, already listed
        for key in first_seen([ma[field], mb[field]]):
            old, new = ma[field].get(key), mb[field].get(key)
            if old is None:
                self.out.append(f"{field}[{key}] added -> [{name_list(new or [])}]")
            elif new is None:
                self.out.append(f"{field}[{key}] removed (was [{name_list(old)}])")
            else:
                change = list_change(old, new, what)
                if change:
                    self.out.append(f"{field}[{key}]: {change}")
        if [k for k in ma[field] if k in mb[field]] != [k for k in mb[field] if k in ma[field]]:
            self.out.append(f"{field}: key order changed")

    def _pre_links(self, a: dict[str, list[str]], b: dict[str, list[str]]) -> None:
        for pre in a:
            if pre not in b:
                self.out.append(f"pre-grad node unlinked: {pre} (was -> [{name_list(a[pre])}])")
        for pre in b:
            if pre not in a:
                self.out.append(f"pre-grad node linked: {pre} -> [{name_list(b[pre])}]")
            else:
                change = list_change(a[pre], b[pre], "linked post-grad node")
                if change:
                    self.out.append(f"pre-grad node {pre}: {change}")
        if [k for k in a if k in b] != [k for k in b if k in a]:
            self.out.append(f"pre-grad node order [{name_list(a)}] -> [{name_list(b)}]")

    # -- stack traces -------------------------------------------------------------------------

    def _stack_traces(self, doc_a: Any, doc_b: Any) -> bool:
        ta = {rename(self.kernel_renames, k): v for k, v in _node_map(doc_a, "A", "stack traces").items()}
        tb = _node_map(doc_b, "B", "stack traces")
        implied = False
        for key in first_seen([ta, tb]):
            if key not in ta or key not in tb:
                implied |= self._one_sided(key, tb, "stack traces", lambda key=key: traces_short(tb[key]))
                continue
            old, new = ta[key], tb[key]
            if old == new:
                continue
            lost = [t for t in old if t not in new]
            gained = [t for t in new if t not in old]
            if not lost and not gained:
                self.out.append(f"stack traces of {key}: order changed")
            elif [trace_short(t) for t in lost] == [trace_short(t) for t in gained]:
                self.out.append(f"stack traces of {key}: same lines, text changed at {traces_short(gained)}")
            else:
                parts = ([f"lost {traces_short(lost)}"] if lost else []) + (
                    [f"gained {traces_short(gained)}"] if gained else []
                )
                self.out.append(f"stack traces of {key}: " + "; ".join(parts))
        return implied

    # -- OpSpec handles -----------------------------------------------------------------------

    def _opspecs(self, doc_a: Any, doc_b: Any) -> bool:
        ka = {rename(self.kernel_renames, k): v for k, v in resolved_opspecs(doc_a, "A").items()}
        kb = resolved_opspecs(doc_b, "B")
        ka = {k: [rename_spec(s, self.post_renames) for s in v] for k, v in ka.items()}
        implied = False
        for key in first_seen([ka, kb]):
            if key not in ka or key not in kb:
                implied |= self._one_sided(key, kb, "OpSpecs", lambda key=key: str(len(kb[key])))
                continue
            for old, new in pair_specs(ka[key], kb[key]):
                if old is not None and new is not None:
                    self.out += [f"OpSpec {key} {spec_label(new)}: {c}" for c in spec_changes(old, new)]
                elif new is not None:
                    self.out.append(f"OpSpec added: {key} {spec_label(new)}")
                elif old is not None:
                    self.out.append(f"OpSpec removed: {key} {spec_label(old)}")
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
        return {rename(self.kernel_renames, k): v for k, v in doc.items()}

    def _comparable(self, artifact: str, side: str) -> Any:
        """One side's artifact as the explainer sees it: A with the renames applied, OpSpec
        handles resolved (their ids are content hashes, so content is what counts)."""
        doc = self.a[artifact] if side == "A" else self.b[artifact]
        if artifact == OPSPEC_DEBUG_HANDLES:
            doc = {"version": doc.get("version"), "kernels": resolved_opspecs(doc, side)}
            if side == "A":
                doc["kernels"] = {
                    k: [rename_spec(s, self.post_renames) for s in v]
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
        return dict(zip(lost, gained, strict=True))
    return {}


def _rename_maps(maps: dict[str, dict[str, list[str]]], post: Mapping[str, str], pre: Mapping[str, str]) -> dict:
    if not post and not pre:
        return maps
    return {
        "preToPost": {rename(pre, k): [rename(post, v) for v in vs] for k, vs in maps["preToPost"].items()},
        "postToPre": {rename(post, k): [rename(pre, v) for v in vs] for k, vs in maps["postToPre"].items()},
        "cppCodeToPost": {k: [rename(post, v) for v in vs] for k, vs in maps["cppCodeToPost"].items()},
        "postToCppCode": {rename(post, k): vs for k, vs in maps["postToCppCode"].items()},
    }


# -- OpSpecs in a comparable form: handles resolved (ids are content hashes: compare content) --


# -- SuperDSC bundles: one group of the whole compile, by bundle path (not per graph) --------
