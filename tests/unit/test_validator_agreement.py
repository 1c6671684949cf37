"""The fast path (msgspec + invariants) and the full path (jsonschema + invariants) agree.

Same verdict on every document: both OK, both INVALID (each with at least one problem), or
both refuse it as unusable. Checked on the hand-made corpus, then on documents hypothesis
generates: valid ones built from a random relation, and the same after one random damage
(a value replaced by any JSON value, a key removed or added, a key written twice).
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

# pytest puts tests/ on sys.path (rootdir-relative "prepend" import mode)
from test_schemas import BROKEN, BROKEN_DIAGNOSTICS, DIAG_V2, DIAG_VALID_EDGES, VALID_EDGES

from helpers.where import DATA  # tests/ is on sys.path
from spyre_provenance.base.errors import UnusableInput
from spyre_provenance.model.names import (
    AUDIT,
    COVERAGE_RULES,
    DIAGNOSTICS,
    FAULT_STAGES,
    INFERRED_REASONS,
    KERNEL_INFORMATION,
    KERNEL_STACK_TRACES,
    MAP_FIELDS,
    NODE_MAPPINGS,
    OPSPEC_DEBUG_HANDLES,
    SOURCE_LINES,
)
from spyre_provenance.model.records import DiagnosticsV2
from spyre_provenance.validate import schemas

ARTIFACTS_DIR = DATA / "artifacts"


def verdict(data: str | bytes, artifact: str | None, *, full: bool) -> str:
    try:
        report = schemas.validate_bytes(data, artifact, full=full)
    except UnusableInput:
        return "unusable"
    return "ok" if report.ok else "invalid"


def assert_agree(data: str | bytes, artifact: str | None) -> str:
    fast, full = verdict(data, artifact, full=False), verdict(data, artifact, full=True)
    assert fast == full, f"fast says {fast}, full says {full}: {data[:500]!r}"
    return fast


# --- the hand-made corpus ----------------------------------------------------------------------

CORPUS = (
    [(p.name, p.read_bytes(), None) for p in sorted(ARTIFACTS_DIR.glob("*.json"))]
    + [(name, text, artifact) for name, (artifact, text) in VALID_EDGES.items()]
    + [(name, text, artifact) for name, (artifact, text, _, _) in BROKEN.items()]
    + [(name, text, DIAGNOSTICS) for name, text in DIAG_VALID_EDGES.items()]
    + [(name, text, DIAGNOSTICS) for name, (text, _, _) in BROKEN_DIAGNOSTICS.items()]
    + [
        ("array", "[]", NODE_MAPPINGS),
        ("truncated", '{"version": 2.0', NODE_MAPPINGS),
        ("not-utf8", b'{"version": 2.0, "x": "\xc3"}', NODE_MAPPINGS),
        ("nan", '{"version": NaN}', NODE_MAPPINGS),
        ("bool-version", '{"version": true}', NODE_MAPPINGS),
        ("version-object-with-repeat", '{"version": {"a": 1, "a": 2}}', NODE_MAPPINGS),
        ("repeat-inside-replaced-value", '{"version": 2.0, "x": {"a": 1, "a": 1}, "x": 1}', NODE_MAPPINGS),
        ("opspec-missing-everything", "{}", OPSPEC_DEBUG_HANDLES),
        ("opspec-version-bool", '{"version": true, "kernels": {}, "handles": {}}', OPSPEC_DEBUG_HANDLES),
        ("kernel-info-array-entry", '{"k:1": []}', KERNEL_INFORMATION),
        # what torch's writers never wrote (issue 14): a mapping lacking some of its maps
        ("v1-empty", "{}", NODE_MAPPINGS),
        ("v1-one-empty-map", '{"preToPost": {"a": []}}', NODE_MAPPINGS),
        ("v1-one-empty-map-by-shape", '{"preToPost": {"a": []}}', None),
        ("v1-three-maps", '{"preToPost": {}, "postToPre": {}, "cppCodeToPost": {}}', NODE_MAPPINGS),
        ("v2-two-maps", '{"version": 2.0, "cppCodeToPost": {"k:1": []}, "postToCppCode": {}}', NODE_MAPPINGS),
        ("v2-two-maps-no-version", '{"cppCodeToPost": {"k:1": ["a"]}, "postToCppCode": {"a": ["k:1"]}}', NODE_MAPPINGS),
        ("v2-one-null-map", '{"version": 2.0, "preToPost": null}', NODE_MAPPINGS),
        ("stack-traces-object-entry", '{"k:1": {}}', KERNEL_STACK_TRACES),
    ]
)

# spyre_provenance_diagnostics (issue 8)
_DIAG = {
    "version": 1,
    "compile_id": "0/0",
    "graph": "inference",
    "partial": True,
    "mapping": "upstream",
    "faults": [{"stage": "build", "error": "RuntimeError: x: y"}],
    "kernels": 2,
    "opspecs": 5,
    "handleless_opspecs": 1,
    "disagreements": ["sdsc_a_0:1"],
    "matches_upstream": None,
}


def _diag(**changes: Any) -> str:
    doc = {**_DIAG, **changes}
    return json.dumps({k: v for k, v in doc.items() if v is not ...})


CORPUS += [
    ("diag-valid", _diag(), None),
    ("diag-clean", _diag(partial=False, faults=[], mapping="hook", matches_upstream=True), DIAGNOSTICS),
    ("diag-version-1.0", _diag(version=1.0), DIAGNOSTICS),
    ("diag-version-2", _diag(version=2), DIAGNOSTICS),
    ("diag-no-version", _diag(version=...), DIAGNOSTICS),
    ("diag-partial-without-faults", _diag(faults=[]), DIAGNOSTICS),
    ("diag-faults-not-partial", _diag(partial=False), DIAGNOSTICS),
    ("diag-bad-stage", _diag(faults=[{"stage": "lunch", "error": "e"}]), DIAGNOSTICS),
    ("diag-fault-extra-key", _diag(faults=[{"stage": "build", "error": "e", "x": 1}]), DIAGNOSTICS),
    ("diag-bad-graph", _diag(graph="sideways"), DIAGNOSTICS),
    ("diag-bad-mapping", _diag(mapping="mine"), DIAGNOSTICS),
    ("diag-negative-count", _diag(kernels=-1), DIAGNOSTICS),
    ("diag-fractional-count", _diag(opspecs=2.5), DIAGNOSTICS),
    ("diag-integral-float-count", _diag(opspecs=5.0), DIAGNOSTICS),
    ("diag-bool-count", _diag(kernels=True), DIAGNOSTICS),
    ("diag-more-handleless", _diag(handleless_opspecs=6), DIAGNOSTICS),
    ("diag-bare-disagreement", _diag(disagreements=["sdsc_a_0"]), DIAGNOSTICS),
    ("diag-repeated-disagreement", _diag(disagreements=["k:1", "k:1"]), DIAGNOSTICS),
    ("diag-missing-key", _diag(mapping=...), DIAGNOSTICS),
    ("diag-extra-key", _diag(extra=1), DIAGNOSTICS),
    ("diag-matches-string", _diag(matches_upstream="yes"), DIAGNOSTICS),
    ("diag-repeated-key", _diag().replace('"kernels"', '"kernels": 2, "kernels"'), None),
    ("diag-array", "[]", DIAGNOSTICS),
]


# version 2 (test_schemas.py holds one document per invariant); here what else may go wrong
def _diag2(**changes: Any) -> str:
    doc = {**DIAG_V2, **changes}
    return json.dumps({k: v for k, v in doc.items() if v is not ...})


_COVERAGE = DIAG_V2["coverage"]
CORPUS += [
    ("diag2-valid", _diag2(), None),
    ("diag2-valid-named", _diag2(), DIAGNOSTICS),
    ("diag2-partial-and-complete-wrong", _diag2(partial=True), DIAGNOSTICS),
    (
        "diag2-all-invariants-at-once",
        _diag2(
            partial=True,
            handleless_opspecs=9,
            disagreements=["x", "x"],
            violations=[{"rule": "call-sites", "where": "", "message": ""}],
            coverage={**_COVERAGE, "linked_call_sites": 9, "reached_nodes": 9},
            inferred=[{"node": "a", "kernel": "b", "why": "inlined"}] * 2,
        ),
        DIAGNOSTICS,
    ),
    ("diag2-huge-counts", _diag2(coverage={**_COVERAGE, "call_sites": 2**70, "linked_call_sites": 2**70}), DIAGNOSTICS),
    (
        "diag2-float-counts-overflow-sum",
        _diag2(coverage={**_COVERAGE, "compute_nodes": 1e300, "reached_nodes": 1e300}),
        DIAGNOSTICS,
    ),
    ("diag2-coverage-string", _diag2(coverage="none"), DIAGNOSTICS),
    ("diag2-coverage-empty-object", _diag2(coverage={}), DIAGNOSTICS),
    ("diag2-exempt-null", _diag2(coverage={**_COVERAGE, "exempt_nodes": None}), DIAGNOSTICS),
    ("diag2-exempt-list", _diag2(coverage={**_COVERAGE, "exempt_nodes": [0, 0, 0]}), DIAGNOSTICS),
    (
        "diag2-exempt-fractional",
        _diag2(coverage={**_COVERAGE, "exempt_nodes": {"view": 0.5, "dead": 0, "constant": 0}}),
        DIAGNOSTICS,
    ),
    ("diag2-inferred-object", _diag2(inferred={"node": "a", "kernel": "k:1", "why": "inlined"}), DIAGNOSTICS),
    ("diag2-inferred-entry-string", _diag2(inferred=["a"]), DIAGNOSTICS),
    (
        "diag2-inferred-extra-key",
        _diag2(inferred=[{"node": "a", "kernel": "k:1", "why": "inlined", "x": 0}]),
        DIAGNOSTICS,
    ),
    ("diag2-inferred-bad-kernel-and-reason", _diag2(inferred=[{"node": "a", "kernel": "k", "why": "?"}]), DIAGNOSTICS),
    (
        "diag2-violation-missing-key",
        _diag2(complete=False, violations=[{"rule": "call-sites", "where": ""}]),
        DIAGNOSTICS,
    ),
    (
        "diag2-violation-message-number",
        _diag2(complete=False, violations=[{"rule": "call-sites", "where": "", "message": 1}]),
        DIAGNOSTICS,
    ),
    ("diag2-hints-string", _diag2(hints="none"), DIAGNOSTICS),
    ("diag2-backend-bool", _diag2(backend=False), DIAGNOSTICS),
    ("diag2-complete-string", _diag2(complete="yes"), DIAGNOSTICS),
    ("diag2-missing-coverage", _diag2(coverage=...), DIAGNOSTICS),
    (
        "diag2-missing-everything-new",
        _diag2(backend=..., complete=..., coverage=..., inferred=..., violations=..., hints=...),
        DIAGNOSTICS,
    ),
    ("diag2-extra-key", _diag2(coverage_v3={}), DIAGNOSTICS),
    ("diag2-version-string", _diag2(version="2"), DIAGNOSTICS),
    ("diag2-version-2.5", _diag2(version=2.5), DIAGNOSTICS),
    ("diag2-repeated-key-in-coverage", _diag2().replace('"call_sites"', '"call_sites": 3, "call_sites"'), None),
    ("diag2-repeated-key-in-inferred", _diag2().replace('"why"', '"why": "inlined", "why"', 1), DIAGNOSTICS),
]


# version 3: the bundle-handle counts
_BUNDLES = {"checked": 4, "stale": 1, "missing": 1}


def _diag3(**changes: Any) -> str:
    doc = {**DIAG_V2, "version": 3, "bundle_handles": _BUNDLES, **changes}
    return json.dumps({k: v for k, v in doc.items() if v is not ...})


CORPUS += [
    ("diag3-valid", _diag3(), None),
    ("diag3-no-bundles", _diag3(bundle_handles=None), DIAGNOSTICS),
    ("diag3-more-lost-than-checked", _diag3(bundle_handles={"checked": 1, "stale": 1, "missing": 1}), DIAGNOSTICS),
    ("diag3-bundles-list", _diag3(bundle_handles=[4, 1, 1]), DIAGNOSTICS),
    ("diag3-bundles-empty", _diag3(bundle_handles={}), DIAGNOSTICS),
    ("diag3-bundles-fractional", _diag3(bundle_handles={**_BUNDLES, "stale": 0.5}), DIAGNOSTICS),
    ("diag3-bundles-huge", _diag3(bundle_handles={"checked": 2**70, "stale": 2**70, "missing": 2**70}), DIAGNOSTICS),
    ("diag3-missing-bundles", _diag3(bundle_handles=...), DIAGNOSTICS),
    ("diag3-v2-rules", _diag3(partial=True, handleless_opspecs=9), DIAGNOSTICS),
]


# version 4: shared bundles, source and pre-grad reach, what was inferred, the gaps
_COVERAGE_V4 = {**DIAG_V2["coverage"], "kernels": 3, "kernels_with_source": 3, "kernels_with_pre_grad": 2}
_SOURCE = {"kernel": "k_copy:3", "node": "add_2", "why": "write-back"}
_PRE_GRAD = {"node": "mm", "pre_grad": ["linear"], "why": "seq_nr"}
_GAP = {"kernel": "k_acc:2", "why": "a gradient accumulation"}


def _diag4(**changes: Any) -> str:
    doc = {
        **DIAG_V2,
        "version": 4,
        "coverage": _COVERAGE_V4,
        "bundle_handles": {**_BUNDLES, "shared": 1},
        "inferred_sources": [_SOURCE],
        "inferred_pre_grad": [_PRE_GRAD],
        "without_source": [],
        "without_pre_grad": [_GAP],
        **changes,
    }
    return json.dumps({k: v for k, v in doc.items() if v is not ...})


CORPUS += [
    ("diag4-valid", _diag4(), None),
    ("diag4-shared-too-many", _diag4(bundle_handles={**_BUNDLES, "shared": 3}), DIAGNOSTICS),
    ("diag4-shared-missing", _diag4(bundle_handles=_BUNDLES), DIAGNOSTICS),
    ("diag4-coverage-v2-shape", _diag4(coverage=DIAG_V2["coverage"]), DIAGNOSTICS),
    ("diag4-more-sourced-than-kernels", _diag4(coverage={**_COVERAGE_V4, "kernels_with_source": 7}), DIAGNOSTICS),
    ("diag4-source-why", _diag4(inferred_sources=[{**_SOURCE, "why": "guess"}]), DIAGNOSTICS),
    ("diag4-source-twice", _diag4(inferred_sources=[_SOURCE, _SOURCE]), DIAGNOSTICS),
    ("diag4-pre-grad-list-repeats", _diag4(inferred_pre_grad=[{**_PRE_GRAD, "pre_grad": ["a", "a"]}]), DIAGNOSTICS),
    ("diag4-pre-grad-not-a-list", _diag4(inferred_pre_grad=[{**_PRE_GRAD, "pre_grad": "linear"}]), DIAGNOSTICS),
    ("diag4-gap-empty-why", _diag4(without_source=[{**_GAP, "why": ""}]), DIAGNOSTICS),
    ("diag4-gap-bare-key", _diag4(without_pre_grad=[{**_GAP, "kernel": "k_acc"}]), DIAGNOSTICS),
    ("diag4-gap-null", _diag4(without_pre_grad=[None]), DIAGNOSTICS),
    ("diag4-missing-gaps", _diag4(without_source=...), DIAGNOSTICS),
    ("diag4-v3-rules", _diag4(bundle_handles={"checked": 1, "stale": 1, "missing": 1, "shared": 0}), DIAGNOSTICS),
]


# provenance_audit (issue 15): the golden audit, with what else may go wrong in one
_AUDIT = json.loads((ARTIFACTS_DIR / "provenance_audit.json").read_text())


def _audit(change: Any) -> str:
    doc = copy.deepcopy(_AUDIT)
    change(doc)
    return json.dumps(doc)


def _count(doc: dict, **changes: Any) -> None:
    doc["graphs"][0]["stages"][0]["fields"]["stack_trace"].update(changes)


CORPUS += [
    ("audit-valid", _audit(lambda d: None), None),
    ("audit-version-1.0", _audit(lambda d: d.update(version=1.0)), AUDIT),
    ("audit-version-2", _audit(lambda d: d.update(version=2)), AUDIT),
    ("audit-no-graphs", _audit(lambda d: d.update(graphs=[])), AUDIT),
    ("audit-missing-key", _audit(lambda d: d.pop("measured")), AUDIT),
    ("audit-extra-key", _audit(lambda d: d.update(extra=1)), AUDIT),
    ("audit-empty-backend", _audit(lambda d: d.update(backend="")), AUDIT),
    (
        "audit-unknown-field",
        _audit(
            lambda d: d["graphs"][0]["stages"][0]["fields"].update(colour={"present": 0, "total": 0, "missing": []})
        ),
        AUDIT,
    ),
    ("audit-fractional-count", _audit(lambda d: _count(d, present=2.5)), AUDIT),
    ("audit-integral-float-count", _audit(lambda d: _count(d, present=3.0)), AUDIT),
    ("audit-negative-count", _audit(lambda d: _count(d, present=-1)), AUDIT),
    ("audit-missing-short", _audit(lambda d: _count(d, present=2)), AUDIT),
    ("audit-repeated-missing", _audit(lambda d: _count(d, present=1, missing=["linear", "linear"])), AUDIT),
    ("audit-stage-twice", _audit(lambda d: d["graphs"][0]["stages"].append(d["graphs"][0]["stages"][0])), AUDIT),
    ("audit-bad-kernel-key", _audit(lambda d: d["graphs"][0]["kernels"][0].update(key="sdsc_x")), AUDIT),
    ("audit-kernel-twice", _audit(lambda d: d["graphs"][0]["kernels"].append(d["graphs"][0]["kernels"][0])), AUDIT),
    ("audit-bad-since", _audit(lambda d: d["graphs"][0]["drops"][0].update(since="lunch")), AUDIT),
    ("audit-null-since", _audit(lambda d: d["graphs"][0]["drops"][0].update(since=None)), AUDIT),
    ("audit-bad-caches", _audit(lambda d: d["measured"].update(graph_caches="warm")), AUDIT),
    (
        "audit-repeated-run-dependent",
        _audit(lambda d: d["measured"].update(run_dependent=["from_node", "from_node"])),
        AUDIT,
    ),
    ("audit-opspecs-null", _audit(lambda d: d["graphs"][0]["kernels"][0].update(opspecs=None)), AUDIT),
    ("audit-repeated-key", _audit(lambda d: None).replace('"model"', '"model": "x", "model"', 1), None),
    ("audit-array", "[]", AUDIT),
]


# spyre_source_lines: the hook checks it on the fast engine (no jsonschema in the program's
# processes); the viewer reads it with the schema
def _lines(**changes: Any) -> str:
    entry = {"made": [9, 10], "lines": {"8": "def f(x):", "9": "    y = x + 1", "10": "    return y"}, "error": None}
    doc: dict[str, Any] = {
        "version": 1,
        "context": 1,
        "files": {"/m/model.py": entry, "gone.py": {"made": [3], "lines": {}, "error": "No such file"}},
    }
    for key, value in changes.items():
        target = entry if key in entry or key.startswith("entry_") else doc
        key = key.removeprefix("entry_")
        if value is ...:
            del target[key]
        else:
            target[key] = value
    return json.dumps(doc)


CORPUS += [
    ("lines-valid", _lines(), SOURCE_LINES),
    ("lines-not-told-by-shape", _lines(), None),
    ("lines-integral-floats", _lines(context=1.0, made=[9.0, 10]), SOURCE_LINES),
    ("lines-no-files", _lines(files={}), SOURCE_LINES),
    ("lines-version-1.0", _lines(version=1.0), SOURCE_LINES),
    ("lines-version-2", _lines(version=2), SOURCE_LINES),
    ("lines-version-true", _lines(version=True), SOURCE_LINES),
    ("lines-no-version", _lines(version=...), SOURCE_LINES),
    ("lines-negative-context", _lines(context=-1), SOURCE_LINES),
    ("lines-fractional-context", _lines(context=1.5), SOURCE_LINES),
    ("lines-bool-context", _lines(context=True), SOURCE_LINES),
    ("lines-line-zero", _lines(made=[0]), SOURCE_LINES),
    ("lines-fractional-line", _lines(made=[9.5]), SOURCE_LINES),
    ("lines-line-twice", _lines(made=[9, 9]), SOURCE_LINES),
    ("lines-line-twice-as-float", _lines(made=[9, 9.0]), SOURCE_LINES),
    ("lines-made-string", _lines(made=["9"]), SOURCE_LINES),
    ("lines-key-zero", _lines(lines={"0": "x"}), SOURCE_LINES),
    ("lines-key-leading-zero", _lines(lines={"09": "x"}), SOURCE_LINES),
    ("lines-key-word", _lines(lines={"nine": "x"}), SOURCE_LINES),
    ("lines-key-trailing-newline", _lines(lines={"9\n": "x"}), SOURCE_LINES),  # re.search: "$" before "\n"
    ("lines-text-number", _lines(lines={"9": 9}), SOURCE_LINES),
    ("lines-error-number", _lines(error=1), SOURCE_LINES),
    ("lines-no-error", _lines(error=...), SOURCE_LINES),
    ("lines-file-extra-key", _lines(entry_extra=1), SOURCE_LINES),
    ("lines-extra-key", _lines(extra=1), SOURCE_LINES),
    ("lines-no-context", _lines(context=...), SOURCE_LINES),
    ("lines-files-array", _lines(files=[]), SOURCE_LINES),
    ("lines-repeated-key", _lines().replace('"context"', '"context": 1, "context"', 1), SOURCE_LINES),
    ("lines-array", "[]", SOURCE_LINES),
]


@pytest.mark.parametrize("name, data, artifact", CORPUS, ids=[c[0] for c in CORPUS])
def test_corpus_agreement(name: str, data: str | bytes, artifact: str | None) -> None:
    assert_agree(data, artifact)


@pytest.mark.parametrize(
    "text, missing",
    [("{}", MAP_FIELDS), ('{"preToPost": {"a": []}}', MAP_FIELDS[1:])],
    ids=["no maps", "one map"],
)
def test_version_1_without_its_four_maps_is_invalid_on_both_engines(text: str, missing: tuple[str, ...]) -> None:
    """torch 2.7/2.8 wrote all four maps (create_node_mapping); each missing one is named."""
    expected = [f'$: missing required key "{name}" (version 1 has all four maps)' for name in missing]
    for full in (False, True):
        report = schemas.validate_bytes(text, NODE_MAPPINGS, full=full)
        assert (report.version, [str(p) for p in report.problems]) == ("1", expected)


def test_version_2_maps_come_all_or_none_on_both_engines() -> None:
    """torch 2.9+ writes the four maps, or none of them (``{"version": 2.0}``)."""
    text = '{"version": 2.0, "cppCodeToPost": {"k:1": ["a"]}, "postToCppCode": {"a": ["k:1"]}}'
    expected = [
        f'$: missing required key "{name}" (version 2.0 has all four maps or none)'
        for name in ("preToPost", "postToPre")
    ]
    for full in (False, True):
        assert [str(p) for p in schemas.validate_bytes(text, NODE_MAPPINGS, full=full).problems] == expected
        assert schemas.validate_bytes('{"version": 2.0}', NODE_MAPPINGS, full=full).ok


def test_corpus_has_all_three_verdicts() -> None:
    seen = {assert_agree(data, artifact) for _, data, artifact in CORPUS}
    assert seen == {"ok", "invalid", "unusable"}


# --- generated documents ---------------------------------------------------------------------

# Small pools so that relations overlap; names with colons, digits and odd characters.
NAMES = st.sampled_from(["linear", "relu", "addmm", "permute_1", "x:1", "é", "a b", ""])
KERNEL_NAMES = st.text(alphabet="ab_.:x0", min_size=1, max_size=5)
JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-3, max_value=2**70)
    | st.sampled_from([0.5, 1.0, 2.0, -1.0, 1e300])
    | st.text(max_size=4)
    | NAMES,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3) | NAMES, inner, max_size=3),
    max_leaves=6,
)


@st.composite
def node_mappings(draw: st.DrawFn) -> dict[str, Any]:
    """A valid 2.0 mapping: both relations derived from one set of pairs."""
    pairs = draw(st.lists(st.tuples(NAMES, NAMES), unique=True, max_size=8))
    pre: dict[str, list[str]] = {}
    post: dict[str, list[str]] = {}
    for a, b in pairs:
        pre.setdefault(a, []).append(b)
        post.setdefault(b, []).append(a)
    kernels: dict[str, list[str]] = {}
    posts: dict[str, list[str]] = {}
    for handle, (name, nodes) in enumerate(
        draw(st.lists(st.tuples(KERNEL_NAMES, st.sets(NAMES, max_size=3)), max_size=4)), 1
    ):
        key = f"{name}:{handle}"
        kernels[key] = sorted(nodes)
        for node in kernels[key]:
            posts.setdefault(node, []).append(key)
    if draw(st.integers(0, 4)) == 0:  # torch's mapping of a graph without a pre-grad graph id
        return {"version": 2.0}
    return {"preToPost": pre, "postToPre": post, "cppCodeToPost": kernels, "postToCppCode": posts, "version": 2.0}


@st.composite
def stack_traces(draw: st.DrawFn) -> dict[str, Any]:
    names = draw(st.lists(KERNEL_NAMES, max_size=4))
    return {f"{n}:{i}": draw(st.lists(st.text(max_size=6), unique=True, max_size=2)) for i, n in enumerate(names, 1)}


@st.composite
def kernel_information(draw: st.DrawFn) -> dict[str, Any]:
    unique_names = st.lists(NAMES, unique=True, max_size=3)
    return {
        key: {
            "stack_traces": draw(unique_names),
            "post_grad_nodes": draw(unique_names),
            "pre_grad_nodes": draw(unique_names),
        }
        for key in draw(stack_traces())
    }


@st.composite
def kernel_information_v2(draw: st.DrawFn) -> dict[str, Any]:
    """torch 2.14's entries: the semantic key on each, shapes and dtypes on some (in pairs)."""
    doc = draw(kernel_information())
    dims = st.lists(st.integers(0, 4096) | st.sampled_from(["s0", "2*s1"]), max_size=3)
    dtypes = st.sampled_from(["torch.float32", "torch.float16", "torch.int64"])
    for entry in doc.values():
        entry["extern_semantic_key"] = draw(st.none() | NAMES)
        if draw(st.booleans()):
            shapes = draw(st.lists(dims, max_size=3))
            entry.update(input_shapes=shapes, input_dtypes=[draw(dtypes) for _ in shapes])
            if draw(st.booleans()):
                entry.update(output_shape=draw(dims), output_dtype=draw(dtypes))
    return doc


@st.composite
def opspec_handles(draw: st.DrawFn) -> dict[str, Any]:
    """A valid opspec artifact: handles form a DAG (fused_from only names earlier ids)."""
    ids = [str(i) for i in draw(st.lists(st.integers(0, 2**63 - 1), unique=True, max_size=5))]
    handles = {}
    for i, hid in enumerate(ids):
        source = draw(
            st.none()
            | st.fixed_dictionaries(
                {
                    "file": st.text(max_size=4),
                    "start_line": st.integers(0, 500),
                    "start_col": st.integers(0, 80),
                    "end_line": st.none() | st.integers(0, 500),
                    "end_col": st.none() | st.integers(0, 80),
                }
            )
        )
        handles[hid] = {
            "source": source,
            "aten_op": draw(st.none() | st.sampled_from(["aten.addmm.default", "my::op"])),
            "ir_chain": draw(st.lists(NAMES, max_size=3)),
            "fused_from": draw(st.lists(st.sampled_from(ids[:i]), unique=True, max_size=2)) if i else [],
            "transform_history": draw(
                st.lists(
                    st.fixed_dictionaries(
                        {
                            "kind": st.sampled_from(["rewrite", "fusion", "decomposition", "clone", "remap"]),
                            "pass_name": st.text(max_size=3),
                            "reason": st.text(max_size=3),
                        }
                    ),
                    max_size=2,
                )
            ),
        }
    spec = st.fixed_dictionaries(
        {
            "op": st.text(max_size=4),
            "is_reduction": st.booleans(),
            "iteration_space": st.lists(st.integers(0, 4096) | st.sampled_from(["s0", "s1"]), max_size=3),
            "buffer": st.none() | st.text(max_size=4),
            "debug_handle": st.none() | (st.sampled_from(ids) if ids else st.none()),
        }
    )
    names = draw(st.lists(KERNEL_NAMES, max_size=3))
    kernels = {f"{n}:{i}": draw(st.lists(spec, max_size=3)) for i, n in enumerate(names, 1)}
    return {"version": 1, "kernels": kernels, "handles": handles}


def _positions(doc: Any) -> list[tuple[Any, Any]]:
    """Every (container, key or index) in a document, the top level first."""
    found: list[tuple[Any, Any]] = []
    stack = [doc]
    while stack:
        value = stack.pop()
        keys = list(value) if isinstance(value, dict) else range(len(value)) if isinstance(value, list) else []
        for key in keys:
            found.append((value, key))
            stack.append(value[key])
    return found


def _dumps_repeating(value: Any, target: Any) -> str:
    """JSON text of ``value`` in which object ``target`` writes its first key twice."""
    if isinstance(value, dict):
        items = [f"{json.dumps(k)}: {_dumps_repeating(v, target)}" for k, v in value.items()]
        if value is target and items:
            items.insert(0, items[0])
        return "{" + ", ".join(items) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_dumps_repeating(v, target) for v in value) + "]"
    return json.dumps(value)


@st.composite
def damaged(draw: st.DrawFn, documents: st.SearchStrategy[dict]) -> str:
    """A generated document as JSON text, with at most one random damage."""
    doc = copy.deepcopy(draw(documents))
    spots = _positions(doc)
    damage = draw(st.sampled_from(["none", "replace", "remove", "add", "repeat-key"]))
    if damage == "replace" and spots:
        container, key = draw(st.sampled_from(spots))
        container[key] = draw(JSON_VALUES)
    elif damage == "remove" and spots:
        container, key = draw(st.sampled_from(spots))
        del container[key]
    elif damage == "add":
        objects = [doc] + [c[k] for c, k in spots if isinstance(c[k], (dict, list))]
        target = draw(st.sampled_from(objects))
        if isinstance(target, dict):
            target[draw(st.text(max_size=3) | NAMES)] = draw(JSON_VALUES)
        else:
            target.append(draw(JSON_VALUES))
    elif damage == "repeat-key":
        objects = [doc] + [c[k] for c, k in spots if isinstance(c[k], dict) and c[k]]
        return _dumps_repeating(doc, draw(st.sampled_from(objects)))
    return json.dumps(doc)


@st.composite
def diagnostics(draw: st.DrawFn) -> dict[str, Any]:
    """A valid diagnostics document: partial exactly when there are faults."""
    faults = draw(
        st.lists(
            st.fixed_dictionaries({"stage": st.sampled_from(FAULT_STAGES), "error": st.text(max_size=8)}), max_size=3
        )
    )
    opspecs = draw(st.integers(0, 50))
    return {
        "version": 1,
        "compile_id": draw(st.sampled_from(["0/0", "1/0_1", "none"])),
        "graph": draw(st.sampled_from(["inference", "forward", "backward"])),
        "partial": bool(faults),
        "mapping": draw(st.sampled_from(["hook", "upstream"])),
        "faults": faults,
        "kernels": draw(st.integers(0, 50)),
        "opspecs": opspecs,
        "handleless_opspecs": draw(st.integers(0, opspecs)),
        "disagreements": [f"{n}:{i}" for i, n in enumerate(draw(st.lists(KERNEL_NAMES, max_size=3)), 1)],
        "matches_upstream": draw(st.none() | st.booleans()),
    }


@st.composite
def diagnostics_v2(draw: st.DrawFn) -> dict[str, Any]:
    """A valid version 2 document: version 1's fields and rules (``diagnostics``), coverage
    counts that bound each other, inferred links named once, complete exactly when nothing
    is partial, unjudged or violated. Keys in the order the hook writes them."""
    doc = draw(diagnostics())
    coverage = None
    if draw(st.booleans()):
        call_sites, compute = draw(st.integers(0, 50)), draw(st.integers(0, 50))
        reached = draw(st.integers(0, compute))
        dead = draw(st.integers(0, compute - reached))
        exempt = {
            "view": draw(st.integers(0, 50)),
            "dead": dead,
            "constant": draw(st.integers(0, compute - reached - dead)),
        }
        coverage = {
            "call_sites": call_sites,
            "linked_call_sites": draw(st.integers(0, call_sites)),
            "compute_nodes": compute,
            "reached_nodes": reached,
            "exempt_nodes": exempt,
        }
    kernel_keys = st.builds("{}:{}".format, KERNEL_NAMES, st.integers(1, 9))
    links = draw(st.lists(st.tuples(NAMES, kernel_keys), unique=True, max_size=3))
    violation = st.fixed_dictionaries(
        {"rule": st.sampled_from(COVERAGE_RULES), "where": NAMES, "message": st.text(max_size=6)}
    )
    violations = draw(st.lists(violation, max_size=2))
    if draw(st.booleans()):  # a clean graph, so that complete is often true
        doc.update(partial=False, faults=[])
        violations = []
    doc.update(
        version=2,
        backend=draw(st.none() | st.sampled_from(["reference", "inductor", "spyre"]) | st.text(min_size=1, max_size=4)),
        coverage=coverage,
        inferred=[{"node": node, "kernel": key, "why": draw(st.sampled_from(INFERRED_REASONS))} for node, key in links],
        violations=violations,
        hints=draw(st.lists(st.text(max_size=6), max_size=2)),
    )
    doc["complete"] = not doc["partial"] and coverage is not None and not doc["violations"]
    return {key: doc[key] for key in DiagnosticsV2.__struct_fields__}


@st.composite
def source_lines(draw: st.DrawFn) -> dict[str, Any]:
    """A valid source-lines document: each file's made lines, their text or why it is unread."""
    files = {}
    for name in draw(st.lists(st.text(max_size=6), unique=True, max_size=3)):
        made = draw(st.lists(st.integers(1, 500), unique=True, max_size=3))
        read = draw(st.booleans())
        lines = {str(n): draw(st.text(max_size=8)) for n in made} if read else {}
        files[name] = {"made": sorted(made), "lines": lines, "error": None if read else draw(st.text(max_size=8))}
    return {"version": 1, "context": draw(st.integers(0, 5)), "files": files}


GENERATED = {
    DIAGNOSTICS: diagnostics() | diagnostics_v2(),
    NODE_MAPPINGS: node_mappings(),
    KERNEL_STACK_TRACES: stack_traces(),
    KERNEL_INFORMATION: kernel_information() | kernel_information_v2(),
    OPSPEC_DEBUG_HANDLES: opspec_handles(),
    SOURCE_LINES: source_lines(),
}
AGREEMENT_SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("artifact", list(GENERATED))
def test_generated_valid_documents_pass_both_paths(artifact: str) -> None:
    @AGREEMENT_SETTINGS
    @given(GENERATED[artifact])
    def check(doc: dict) -> None:
        for full in (False, True):
            report = schemas.validate_bytes(json.dumps(doc), artifact, full=full)
            assert report.ok, report

    check()


@pytest.mark.parametrize("artifact", list(GENERATED))
@pytest.mark.parametrize("named", [True, False], ids=["named", "by-shape"])
def test_generated_damaged_documents_get_one_verdict(artifact: str, named: bool) -> None:
    @AGREEMENT_SETTINGS
    @given(damaged(GENERATED[artifact]))
    def check(text: str) -> None:
        assert_agree(text, artifact if named else None)

    check()
