"""The fast path (msgspec + invariants) and the full path (jsonschema + invariants) agree.

Same verdict on every document: both OK, both INVALID (each with at least one problem), or
both refuse it as unusable. Checked on the hand-made corpus, then on documents hypothesis
generates: valid ones built from a random relation, and the same after one random damage
(a value replaced by any JSON value, a key removed or added, a key written twice).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spyre_provenance import schemas
from spyre_provenance.errors import UnusableInput
from spyre_provenance.records import (
    DIAGNOSTICS,
    FAULT_STAGES,
    KERNEL_INFORMATION,
    KERNEL_STACK_TRACES,
    NODE_MAPPINGS,
    OPSPEC_DEBUG_HANDLES,
)

# pytest puts tests/ on sys.path (rootdir-relative "prepend" import mode)
from test_schemas import BROKEN, VALID_EDGES

ARTIFACTS_DIR = Path(__file__).parent / "data" / "artifacts"


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
        ("stack-traces-object-entry", '{"k:1": {}}', KERNEL_STACK_TRACES),
    ]
)

# spyre_provenance_diagnostics (issue 8)
_DIAG = {
    "version": 1, "compile_id": "0/0", "graph": "inference", "partial": True, "mapping": "upstream",
    "faults": [{"stage": "build", "error": "RuntimeError: x: y"}], "kernels": 2, "opspecs": 5,
    "handleless_opspecs": 1, "disagreements": ["sdsc_a_0:1"], "matches_upstream": None,
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


@pytest.mark.parametrize("name, data, artifact", CORPUS, ids=[c[0] for c in CORPUS])
def test_corpus_agreement(name: str, data: str | bytes, artifact: str | None) -> None:
    assert_agree(data, artifact)


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
    for handle, (name, nodes) in enumerate(draw(st.lists(st.tuples(KERNEL_NAMES, st.sets(NAMES, max_size=3)), max_size=4)), 1):
        key = f"{name}:{handle}"
        kernels[key] = sorted(nodes)
        for node in kernels[key]:
            posts.setdefault(node, []).append(key)
    doc = {"preToPost": pre, "postToPre": post, "cppCodeToPost": kernels, "postToCppCode": posts, "version": 2.0}
    return {k: v for k, v in doc.items() if k == "version" or draw(st.booleans()) or v}


@st.composite
def stack_traces(draw: st.DrawFn) -> dict[str, Any]:
    names = draw(st.lists(KERNEL_NAMES, max_size=4))
    return {f"{n}:{i}": draw(st.lists(st.text(max_size=6), unique=True, max_size=2)) for i, n in enumerate(names, 1)}


@st.composite
def kernel_information(draw: st.DrawFn) -> dict[str, Any]:
    unique_names = st.lists(NAMES, unique=True, max_size=3)
    return {
        key: {"stack_traces": draw(unique_names), "post_grad_nodes": draw(unique_names), "pre_grad_nodes": draw(unique_names)}
        for key in draw(stack_traces())
    }


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
    faults = draw(st.lists(st.fixed_dictionaries({"stage": st.sampled_from(FAULT_STAGES), "error": st.text(max_size=8)}), max_size=3))
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


GENERATED = {
    DIAGNOSTICS: diagnostics(),
    NODE_MAPPINGS: node_mappings(),
    KERNEL_STACK_TRACES: stack_traces(),
    KERNEL_INFORMATION: kernel_information(),
    OPSPEC_DEBUG_HANDLES: opspec_handles(),
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
