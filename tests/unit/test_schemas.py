"""The schema files, detection, and one document per invariant that breaks exactly it.

Every broken document is checked on both paths (fast: msgspec; full: jsonschema); both must
name exactly the expected JSON paths. The wording of every problem is pinned in
tests/data/regressions/test_schemas/ (pytest-regressions; --force-regen after a deliberate
wording change).
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import msgspec
import pytest

from helpers.where import DATA, GOLDEN, SCHEMAS  # tests/ is on sys.path
from spyre_provenance.base.errors import UnusableInput
from spyre_provenance.links.mapping import COMPARED_MAPS
from spyre_provenance.model import jsonio, wire
from spyre_provenance.model.names import (
    COVERAGE_RULES,
    DIAGNOSTICS,
    FAULT_STAGES,
    GRAPH_KINDS,
    INFERRED_PRE_GRAD_REASONS,
    INFERRED_REASONS,
    INFERRED_SOURCE_REASONS,
    KERNEL_INFORMATION,
    KERNEL_STACK_TRACES,
    NODE_MAPPINGS,
    OPSPEC_DEBUG_HANDLES,
)
from spyre_provenance.model.records import (
    SHOWN_UPSTREAM_DIFFERENCES,
    UPSTREAM_RELATIONS,
    BundleHandlesV4,
    CoverageCounts,
    CoverageCountsV4,
    DiagnosticsV1,
    DiagnosticsV2,
    DiagnosticsV4,
    DiagnosticsV5,
    DiagnosticsV6,
    ExemptNodes,
    Fault,
    Inferred,
    InferredPreGrad,
    InferredSource,
    KernelGap,
    UpstreamComparison,
    UpstreamLink,
)
from spyre_provenance.validate import rules, schemas

ARTIFACTS_DIR = DATA / "artifacts"
FILES = {
    NODE_MAPPINGS: "inductor_provenance_tracking_node_mappings.json",
    KERNEL_STACK_TRACES: "inductor_provenance_tracking_kernel_stack_traces.json",
    KERNEL_INFORMATION: "kernel_information.json",
    OPSPEC_DEBUG_HANDLES: "spyre_opspec_debug_handles.json",
}


def load(name: str) -> Any:
    return json.loads((ARTIFACTS_DIR / name).read_text())


SEED = load(FILES[NODE_MAPPINGS])
STACKS = load(FILES[KERNEL_STACK_TRACES])
INFO = load(FILES[KERNEL_INFORMATION])
INFO_V2 = load("kernel_information_v2.json")
EXTERN = "aoti_torch_cpu_addmm_out:1"  # an extern kernel's entry: it has the shape fields
OPSPEC = load(FILES[OPSPEC_DEBUG_HANDLES])
H_MATMUL, H_ADD, H_RELU, H_ZERO = "4611686018427387904", "17", "9223372036854775807", "0"


@pytest.fixture
def original_datadir(request: pytest.FixtureRequest) -> Path:
    # regression files live under tests/data, not next to the test module
    return DATA / "regressions" / request.path.stem


def both(data: bytes | str, artifact: str | None = None) -> tuple[schemas.Report, schemas.Report]:
    return schemas.validate_bytes(data, artifact), schemas.validate_bytes(data, artifact, full=True)


# --- the schema files ------------------------------------------------------------------------


@pytest.mark.parametrize("artifact", schemas.ARTIFACTS)
def test_schema_files_are_valid_2020_12_with_stable_ids(artifact: str) -> None:
    versions = schemas.available_versions(artifact)
    assert versions, artifact
    for version in versions:
        schema = schemas.load_schema(artifact, version)
        jsonschema.Draft202012Validator.check_schema(schema)
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        assert schema["$id"] == f"https://spyre-provenance.dev/schemas/{artifact}/v{version}.schema.json"


def test_versions_on_disk() -> None:
    assert schemas.available_versions(NODE_MAPPINGS) == [1, 2]
    assert schemas.available_versions(KERNEL_STACK_TRACES) == [1, 2]
    assert schemas.available_versions(KERNEL_INFORMATION) == [1, 2]
    assert schemas.available_versions(OPSPEC_DEBUG_HANDLES) == [1, 2]
    assert schemas.available_versions(DIAGNOSTICS) == [1, 2, 3, 4, 5, 6]


def test_load_schema_returns_a_copy() -> None:
    schemas.load_schema(NODE_MAPPINGS, 2)["required"].append("x")
    assert schemas.load_schema(NODE_MAPPINGS, 2)["required"] == ["version"]


def test_schema_dir_is_the_repository_folder_in_an_editable_install() -> None:
    assert Path(str(schemas.schema_dir())) == SCHEMAS


def test_schema_dir_prefers_the_copy_inside_the_package(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "schemas").mkdir()  # what hatch's force-include puts into a wheel
    monkeypatch.setattr(schemas.importlib.resources, "files", lambda package: tmp_path)
    assert schemas.schema_dir() == tmp_path / "schemas"


# --- valid documents ------------------------------------------------------------------------

VALID = [
    (FILES[NODE_MAPPINGS], NODE_MAPPINGS, "2.0"),
    ("inductor_provenance_tracking_node_mappings_v1.json", NODE_MAPPINGS, "1"),
    (FILES[KERNEL_STACK_TRACES], KERNEL_STACK_TRACES, "2"),
    ("inductor_provenance_tracking_kernel_stack_traces_v1.json", KERNEL_STACK_TRACES, "1"),
    (FILES[KERNEL_INFORMATION], KERNEL_INFORMATION, "1"),
    ("kernel_information_v2.json", KERNEL_INFORMATION, "2"),  # torch 2.14.1's, from a real AOTI package
    (FILES[OPSPEC_DEBUG_HANDLES], OPSPEC_DEBUG_HANDLES, "1"),
]


@pytest.mark.parametrize("name, artifact, version", VALID)
@pytest.mark.parametrize("given", [True, False], ids=["named", "by-shape"])
def test_valid_artifacts(name: str, artifact: str, version: str, given: bool) -> None:
    data = (ARTIFACTS_DIR / name).read_bytes()
    for report in both(data, artifact if given else None):
        assert (report.artifact, report.version, report.problems) == (artifact, version, ())
        assert report.ok


def _edit(doc: Any, change: Callable[[Any], None]) -> str:
    doc = copy.deepcopy(doc)
    change(doc)
    return json.dumps(doc)


def _both(*changes: Callable[[Any], None]) -> Callable[[Any], None]:
    def change(doc: Any) -> None:
        for one in changes:
            one(doc)

    return change


def _set(path: list[Any], value: Any) -> Callable[[Any], None]:
    def change(doc: Any) -> None:
        for part in path[:-1]:
            doc = doc[part]
        doc[path[-1]] = value

    return change


NO_MAPS = '{"preToPost": {}, "postToPre": {}, "cppCodeToPost": {}, "postToCppCode": {}}'
VALID_EDGES = {
    # kernel names may hold colons: the handle follows the last one
    "colon-in-kernel-name": (
        NODE_MAPPINGS,
        '{"version": 2.0, "preToPost": {}, "postToPre": {}, "cppCodeToPost": {"torch.ops.my::op:4": ["x"]},'
        ' "postToCppCode": {"x": ["torch.ops.my::op:4"]}}',
    ),
    "upstream-empty-mapping": (NODE_MAPPINGS, '{"version": 2.0}'),
    "version-written-as-integer": (NODE_MAPPINGS, '{"version": 2}'),
    "unknown-top-level-key": (NODE_MAPPINGS, '{"version": 2.0, "future": {"a": [1, {"b:c": null}]}}'),
    "empty-list-means-no-pairs": (
        NODE_MAPPINGS,
        '{"version": 2.0, "preToPost": {"x": []}, "postToPre": {}, "cppCodeToPost": {}, "postToCppCode": {}}',
    ),
    "escaped-colon-is-no-duplicate": (
        NODE_MAPPINGS,
        '{"version": 2.0, "preToPost": {"a\\u003ab": ["x"]}, "postToPre": {"x": ["a:b"]}, "cppCodeToPost": {}, "postToCppCode": {}}',
    ),
    # torch 2.7/2.8 wrote all four maps, also when they were empty
    "v1-four-empty-maps": (NODE_MAPPINGS, NO_MAPS),
    "empty-stack-traces": (KERNEL_STACK_TRACES, "{}"),
    "integral-float-line": (
        OPSPEC_DEBUG_HANDLES,
        _edit(OPSPEC, _set(["handles", H_MATMUL, "source", "start_line"], 14.0)),
    ),
    "opspec-version-1.0": (OPSPEC_DEBUG_HANDLES, _edit(OPSPEC, _set(["version"], 1.0))),
}


@pytest.mark.parametrize("case", VALID_EDGES)
def test_valid_edge_cases(case: str) -> None:
    artifact, text = VALID_EDGES[case]
    for report in both(text, artifact):
        assert report.problems == (), report


# --- one broken document per invariant ---------------------------------------------------------


def _inverse_missing(doc: Any) -> None:
    doc["postToPre"]["addmm"].remove("linear")


def _rename_kernel(old: str, new: str) -> Callable[[Any], None]:
    def change(doc: Any) -> None:
        doc["cppCodeToPost"] = {new if k == old else k: v for k, v in doc["cppCodeToPost"].items()}
        for names in doc["postToCppCode"].values():
            names[:] = [new if n == old else n for n in names]

    return change


def _opspec_rename_id(old: str, new: str) -> Callable[[Any], None]:
    def change(doc: Any) -> None:
        doc["handles"] = {new if k == old else k: v for k, v in doc["handles"].items()}
        for specs in doc["kernels"].values():
            for spec in specs:
                spec["debug_handle"] = new if spec["debug_handle"] == old else spec["debug_handle"]
        for handle in doc["handles"].values():
            handle["fused_from"] = [new if h == old else h for h in handle["fused_from"]]

    return change


# name -> (artifact, document text, the JSON paths that must be reported, version reported)
BROKEN: dict[str, tuple[str, str, set[str], str | None]] = {
    # node mappings
    "postToPre-lacks-a-pair": (NODE_MAPPINGS, _edit(SEED, _inverse_missing), {'$.postToPre["addmm"]'}, "2.0"),
    "postToPre-has-an-extra-pair": (
        NODE_MAPPINGS,
        _edit(SEED, lambda d: d["postToPre"]["relu"].append("linear")),
        {'$.postToPre["relu"][1]'},
        "2.0",
    ),
    "postToCppCode-not-the-inverse": (
        NODE_MAPPINGS,
        _edit(SEED, _set(["postToCppCode", "relu"], ["extern_kernels.addmm:1"])),
        {'$.postToCppCode["relu"]', '$.postToCppCode["relu"][0]'},
        "2.0",
    ),
    "kernel-key-without-handle": (
        NODE_MAPPINGS,
        _edit(SEED, _rename_kernel("cpp_fused_relu_0:2", "cpp_fused_relu_0")),
        {'$.cppCodeToPost["cpp_fused_relu_0"]', '$.postToCppCode["relu"][0]'},
        "2.0",
    ),
    "kernel-handle-zero": (
        NODE_MAPPINGS,
        _edit(SEED, _rename_kernel("cpp_fused_relu_0:2", "cpp_fused_relu_0:0")),
        {'$.cppCodeToPost["cpp_fused_relu_0:0"]', '$.postToCppCode["relu"][0]'},
        "2.0",
    ),
    "kernel-handle-leading-zero": (
        NODE_MAPPINGS,
        _edit(SEED, _rename_kernel("cpp_fused_relu_0:2", "cpp_fused_relu_0:02")),
        {'$.cppCodeToPost["cpp_fused_relu_0:02"]', '$.postToCppCode["relu"][0]'},
        "2.0",
    ),
    "debug-handle-used-twice": (
        NODE_MAPPINGS,
        _edit(SEED, _rename_kernel("cpp_fused_relu_0:2", "cpp_fused_relu_0:1")),
        {'$.cppCodeToPost["cpp_fused_relu_0:1"]'},
        "2.0",
    ),
    "duplicate-list-entry": (
        NODE_MAPPINGS,
        _edit(SEED, lambda d: d["preToPost"]["linear"].append("permute")),
        {'$.preToPost["linear"]'},
        "2.0",
    ),
    "duplicate-top-level-key": (
        NODE_MAPPINGS,
        '{"version": 2.0, ' + json.dumps(SEED)[1:],
        {"$.version"},
        "2.0",
    ),
    "duplicate-nested-key": (
        NODE_MAPPINGS,
        json.dumps(SEED).replace('"relu": ["relu"], "permute_1"', '"relu": ["relu"], "relu": ["relu"], "permute_1"'),
        {'$.postToPre["relu"]'},
        "2.0",
    ),
    "duplicate-key-in-unknown-field": (
        NODE_MAPPINGS,
        '{"version": 2.0, "extra": {"a": 1, "a": 1}}',
        {'$["extra"]["a"]'},
        "2.0",
    ),
    "version-missing-on-v2-keys": (
        NODE_MAPPINGS,
        _edit(SEED, lambda d: d.pop("version")),
        {"$"},
        "2.0",
    ),
    # torch's writers: version 1 all four maps, version 2.0 all four or none
    "v1-no-maps": (NODE_MAPPINGS, "{}", {"$"}, "1"),
    "v1-one-map": (NODE_MAPPINGS, '{"preToPost": {"a": []}}', {"$"}, "1"),
    "v1-without-postToCppCode": (
        NODE_MAPPINGS,
        _edit(load("inductor_provenance_tracking_node_mappings_v1.json"), lambda d: d.pop("postToCppCode")),
        {"$"},
        "1",
    ),
    "v2-kernel-maps-only": (
        NODE_MAPPINGS,
        _edit(SEED, lambda d: [d.pop("preToPost"), d.pop("postToPre")]),
        {"$"},
        "2.0",
    ),
    "v2-one-map": (NODE_MAPPINGS, '{"version": 2.0, "preToPost": {"a": []}}', {"$"}, "2.0"),
    "v2-one-map-of-the-wrong-type": (NODE_MAPPINGS, '{"version": 2.0, "postToPre": []}', {"$", "$.postToPre"}, "2.0"),
    "version-3.0": (NODE_MAPPINGS, _edit(SEED, _set(["version"], 3.0)), {"$.version"}, None),
    "version-as-string": (NODE_MAPPINGS, _edit(SEED, _set(["version"], "2.0")), {"$.version"}, None),
    "map-is-a-list": (NODE_MAPPINGS, _edit(SEED, _set(["preToPost"], [])), {"$.preToPost"}, "2.0"),
    "list-is-a-string": (
        NODE_MAPPINGS,
        _edit(SEED, _set(["preToPost", "relu"], "relu")),
        {'$.preToPost["relu"]'},
        "2.0",
    ),
    "name-is-a-number": (
        NODE_MAPPINGS,
        _edit(SEED, _set(["postToPre", "relu", 0], 7)),
        {'$.postToPre["relu"][0]'},
        "2.0",
    ),
    "v1-not-inverse": (
        NODE_MAPPINGS,
        _edit(load("inductor_provenance_tracking_node_mappings_v1.json"), _set(["postToCppCode", "relu"], [])),
        {'$.postToCppCode["relu"]'},
        "1",
    ),
    # kernel stack traces
    "stack-traces-bare-key-among-handles": (
        KERNEL_STACK_TRACES,
        '{"k:1": [], "bare": []}',
        {'$["bare"]'},
        "2",
    ),
    "stack-traces-handle-twice": (KERNEL_STACK_TRACES, '{"a:1": [], "b:1": []}', {'$["b:1"]'}, "2"),
    "stack-traces-duplicate-entry": (KERNEL_STACK_TRACES, '{"a:1": ["t", "t"]}', {'$["a:1"]'}, "2"),
    "stack-traces-not-strings": (KERNEL_STACK_TRACES, '{"a:1": [null]}', {'$["a:1"][0]'}, "2"),
    # kernel_information
    "kernel-info-missing-field": (
        KERNEL_INFORMATION,
        _edit(INFO, lambda d: d["cpp_fused_relu_0:2"].pop("pre_grad_nodes")),
        {'$["cpp_fused_relu_0:2"]'},
        "1",
    ),
    "kernel-info-extra-field": (
        KERNEL_INFORMATION,
        _edit(INFO, _set(["cpp_fused_relu_0:2", "extra"], [])),
        {'$["cpp_fused_relu_0:2"]'},
        "1",
    ),
    "kernel-info-duplicate-entry": (
        KERNEL_INFORMATION,
        _edit(INFO, _set(["cpp_fused_relu_0:2", "post_grad_nodes"], ["relu", "relu"])),
        {'$["cpp_fused_relu_0:2"].post_grad_nodes'},
        "1",
    ),
    "kernel-info-handle-twice": (
        KERNEL_INFORMATION,
        '{"a:1": {"stack_traces": [], "post_grad_nodes": [], "pre_grad_nodes": []},'
        ' "b:1": {"stack_traces": [], "post_grad_nodes": [], "pre_grad_nodes": []}}',
        {'$["b:1"]'},
        "1",
    ),
    # kernel_information v2 (torch 2.14): the version is in the shape, so each is still "2"
    "kernel-info-v2-entry-lacks-the-key": (
        KERNEL_INFORMATION,
        _edit(INFO_V2, lambda d: d["cpp_fused_relu_0:2"].pop("extern_semantic_key")),
        {'$["cpp_fused_relu_0:2"]'},
        "2",
    ),
    "kernel-info-v2-key-not-a-string": (
        KERNEL_INFORMATION,
        _edit(INFO_V2, _set([EXTERN, "extern_semantic_key"], 3)),
        {f'$["{EXTERN}"].extern_semantic_key'},
        "2",
    ),
    "kernel-info-v2-shapes-without-dtypes": (
        KERNEL_INFORMATION,
        _edit(INFO_V2, lambda d: d[EXTERN].pop("input_dtypes")),
        {f'$["{EXTERN}"]'},
        "2",
    ),
    "kernel-info-v2-dtype-without-shape": (
        KERNEL_INFORMATION,
        _edit(INFO_V2, lambda d: d[EXTERN].pop("output_shape")),
        {f'$["{EXTERN}"]'},
        "2",
    ),
    "kernel-info-v2-a-dtype-short": (
        KERNEL_INFORMATION,
        _edit(INFO_V2, lambda d: d[EXTERN]["input_dtypes"].pop()),
        {f'$["{EXTERN}"].input_dtypes'},
        "2",
    ),
    "kernel-info-v2-negative-size": (
        KERNEL_INFORMATION,
        _edit(INFO_V2, _set([EXTERN, "output_shape", 1], -1)),
        {f'$["{EXTERN}"].output_shape[1]'},
        "2",
    ),
    "kernel-info-v2-fractional-size": (
        KERNEL_INFORMATION,
        _edit(INFO_V2, _set([EXTERN, "input_shapes", 1, 0], 0.5)),
        {f'$["{EXTERN}"].input_shapes[1][0]'},
        "2",
    ),
    "kernel-info-v2-empty-symbol": (
        KERNEL_INFORMATION,
        _edit(INFO_V2, _set([EXTERN, "output_shape", 0], "")),
        {f'$["{EXTERN}"].output_shape[0]'},
        "2",
    ),
    "kernel-info-v2-not-a-dtype": (
        KERNEL_INFORMATION,
        _edit(INFO_V2, _set([EXTERN, "output_dtype"], "float32")),
        {f'$["{EXTERN}"].output_dtype'},
        "2",
    ),
    "kernel-info-v2-unknown-field": (
        KERNEL_INFORMATION,
        _edit(INFO_V2, _set([EXTERN, "device"], "cpu")),
        {f'$["{EXTERN}"]'},
        "2",
    ),
    # spyre_opspec_debug_handles
    "opspec-unknown-handle": (
        OPSPEC_DEBUG_HANDLES,
        _edit(OPSPEC, _set(["kernels", "sdsc_fused_addmm_1:2", 0, "debug_handle"], "5")),
        {'$.kernels["sdsc_fused_addmm_1:2"][0].debug_handle'},
        "1",
    ),
    "opspec-unknown-fused-from": (
        OPSPEC_DEBUG_HANDLES,
        _edit(OPSPEC, lambda d: d["handles"][H_RELU]["fused_from"].append("5")),
        {f'$.handles["{H_RELU}"].fused_from[2]'},
        "1",
    ),
    "opspec-fused-from-cycle": (
        OPSPEC_DEBUG_HANDLES,
        _edit(OPSPEC, _set(["handles", H_ADD, "fused_from"], [H_RELU])),
        {f'$.handles["{H_RELU}"].fused_from'},  # where the search closes the cycle
        "1",
    ),
    "opspec-fused-from-itself": (
        OPSPEC_DEBUG_HANDLES,
        _edit(OPSPEC, _set(["handles", H_ZERO, "fused_from"], [H_ZERO])),
        {f'$.handles["{H_ZERO}"].fused_from'},
        "1",
    ),
    "opspec-fused-from-twice": (
        OPSPEC_DEBUG_HANDLES,
        _edit(OPSPEC, _set(["handles", H_RELU, "fused_from"], [H_ADD, H_ADD])),
        {f'$.handles["{H_RELU}"].fused_from'},
        "1",
    ),
    "opspec-id-not-below-2**63": (
        OPSPEC_DEBUG_HANDLES,
        _edit(OPSPEC, _opspec_rename_id(H_RELU, str(2**63))),
        {f'$.handles["{2**63}"]', '$.kernels["sdsc_fused_addmm_linear_relu_0:1"][2].debug_handle'},
        "1",
    ),
    "opspec-id-leading-zero": (
        OPSPEC_DEBUG_HANDLES,
        _edit(OPSPEC, _opspec_rename_id(H_ADD, "017")),
        {
            '$.handles["017"]',
            '$.kernels["sdsc_fused_addmm_linear_relu_0:1"][1].debug_handle',
            f'$.handles["{H_RELU}"].fused_from[1]',
        },
        "1",
    ),
    "opspec-kernel-handle-twice": (
        OPSPEC_DEBUG_HANDLES,
        _edit(OPSPEC, lambda d: d["kernels"].update({"sdsc_other:1": []})),
        {'$.kernels["sdsc_other:1"]'},
        "1",
    ),
    "opspec-line-not-integral": (
        OPSPEC_DEBUG_HANDLES,
        _edit(OPSPEC, _set(["handles", H_MATMUL, "source", "start_line"], 14.5)),
        {f'$.handles["{H_MATMUL}"].source.start_line'},
        "1",
    ),
    "opspec-negative-column": (
        OPSPEC_DEBUG_HANDLES,
        _edit(OPSPEC, _set(["handles", H_MATMUL, "source", "start_col"], -1)),
        {f'$.handles["{H_MATMUL}"].source.start_col'},
        "1",
    ),
    "opspec-unknown-transform-kind": (
        OPSPEC_DEBUG_HANDLES,
        _edit(OPSPEC, _set(["handles", H_RELU, "transform_history", 0, "kind"], "inline")),
        {f'$.handles["{H_RELU}"].transform_history[0].kind'},
        "1",
    ),
    "opspec-extra-key": (
        OPSPEC_DEBUG_HANDLES,
        _edit(OPSPEC, _set(["kernels", "sdsc_fused_addmm_1:2", 0, "extra"], 1)),
        {'$.kernels["sdsc_fused_addmm_1:2"][0]'},
        "1",
    ),
    "opspec-extra-top-level-key": (OPSPEC_DEBUG_HANDLES, _edit(OPSPEC, _set(["extra"], {})), {"$"}, "1"),
    "opspec-version-2-without-bundles": (OPSPEC_DEBUG_HANDLES, _edit(OPSPEC, _set(["version"], 2)), {"$"}, "2"),
    "opspec-version-3": (OPSPEC_DEBUG_HANDLES, _edit(OPSPEC, _set(["version"], 3)), {"$.version"}, None),
    "opspec-bundle-of-no-call-site": (
        OPSPEC_DEBUG_HANDLES,
        _edit(
            OPSPEC,
            _both(
                _set(["version"], 2),
                _set(["bundles"], {"sdsc_nowhere_9:9": {"provenance_key": "vsancadvtjfcq6cv", "folder": None}}),
            ),
        ),
        {'$.bundles["sdsc_nowhere_9:9"]'},
        "2",
    ),
    "opspec-bundle-key-not-base32": (
        OPSPEC_DEBUG_HANDLES,
        _edit(
            OPSPEC,
            _both(
                _set(["version"], 2),
                _set(["bundles"], {"sdsc_fused_addmm_1:2": {"provenance_key": "VSANCADVTJFCQ6C1", "folder": "f"}}),
            ),
        ),
        {'$.bundles["sdsc_fused_addmm_1:2"].provenance_key'},
        "2",
    ),
}


@pytest.mark.parametrize("case", BROKEN)
def test_each_broken_document_reports_exactly_its_paths(case: str) -> None:
    artifact, text, paths, version = BROKEN[case]
    fast, full = both(text, artifact)
    assert {p.path for p in fast.problems} == paths
    assert {p.path for p in full.problems} == paths
    assert fast.version == full.version == version
    assert fast.artifact == full.artifact == artifact


def test_problem_wording(data_regression: Any) -> None:
    """The fast path's problems for every broken document; the full path's where they differ."""
    wording: dict[str, Any] = {}
    for case, (artifact, text, _, _) in BROKEN.items():
        fast, full = both(text, artifact)
        entry: dict[str, Any] = {"fast": [str(p) for p in fast.problems]}
        if set(full.problems) != set(fast.problems):
            entry["full"] = [str(p) for p in full.problems]
        wording[case] = entry
    data_regression.check(wording)


def test_problems_beyond_the_limit_are_counted() -> None:
    doc = {**json.loads(NO_MAPS), "version": 2.0, "cppCodeToPost": {f"k{i}": [] for i in range(150)}}
    for report in both(json.dumps(doc), NODE_MAPPINGS):
        assert len(report.problems) == schemas.MAX_PROBLEMS and report.omitted == 50


# --- spyre_provenance_diagnostics: version 2, and version 1 still ------------------------------
# Built from the records the hook writes, so the samples have its key order. Boundaries are
# met exactly: reached + dead + constant == compute_nodes.

DIAG_V1 = msgspec.to_builtins(
    DiagnosticsV1(
        compile_id="0/0",
        graph="inference",
        partial=True,
        mapping="upstream",
        faults=[Fault("build", "RuntimeError: x: y")],
        kernels=2,
        opspecs=5,
        handleless_opspecs=1,
        disagreements=["sdsc_a_0:1"],
    )
)
DIAG_V2 = msgspec.to_builtins(
    DiagnosticsV2(
        compile_id="0/0",
        graph="forward",
        backend="reference",
        partial=False,
        complete=True,
        mapping="hook",
        kernels=2,
        opspecs=5,
        handleless_opspecs=5,
        disagreements=["sdsc_a_0:1"],
        matches_upstream=True,
        coverage=CoverageCounts(
            call_sites=3,
            linked_call_sites=3,
            compute_nodes=5,
            reached_nodes=3,
            exempt_nodes=ExemptNodes(view=4, dead=1, constant=1),
        ),
        inferred=[Inferred("relu", "cpp_fused_relu_0:2", "inlined"), Inferred("relu", "cpp_add:3", "consumer")],
        hints=[
            "graph: wrapper line 12: call of k has no handle comment (a gap of stock Inductor's own mapping) [call-sites]"
        ],
    )
)
DIAG_V3 = {**DIAG_V2, "version": 3, "bundle_handles": {"checked": 5, "stale": 2, "missing": 1}}
DIAG_V4 = msgspec.to_builtins(
    DiagnosticsV4(
        compile_id="0/0",
        graph="backward",
        backend="reference",
        partial=False,
        complete=True,
        mapping="hook",
        kernels=2,
        opspecs=5,
        handleless_opspecs=5,
        disagreements=["sdsc_a_0:1"],
        matches_upstream=True,
        coverage=CoverageCountsV4(
            call_sites=3,
            linked_call_sites=3,
            compute_nodes=5,
            reached_nodes=3,
            exempt_nodes=ExemptNodes(view=4, dead=1, constant=1),
            kernels=3,
            kernels_with_source=3,
            kernels_with_pre_grad=2,
        ),
        inferred=[Inferred("relu", "cpp_fused_relu_0:2", "inlined")],
        bundle_handles=BundleHandlesV4(checked=5, stale=1, missing=1, shared=3),
        inferred_sources=[InferredSource("sdsc_copy_0:3", "add_2", "write-back")],
        inferred_pre_grad=[
            InferredPreGrad("mm", ["linear"], "seq_nr"),
            InferredPreGrad("copy_", ["batch_norm"], "write-back"),
        ],
        without_pre_grad=[
            KernelGap("sdsc_add_1:2", "a gradient accumulation: it differentiates no forward op of its own")
        ],
    )
)
DIAG_V5 = {
    **DIAG_V4,
    "version": 5,
    "matches_upstream": {
        "relation": "differs",
        "added": 3,
        "missing": 2,
        "differences": [
            {"map": "cppCodeToPost", "key": "sdsc_a_0:1", "value": "mm"},
            {"map": "preToPost", "key": "linear", "value": "mm"},
        ],
    },
}
DIAG_V6 = {
    **DIAG_V5,
    "version": 6,
    "cache": "cached",
    "misnamed_handles": [],
    "module_stacks": {
        "sdsc_a_0:1": [[["", "torch.nn.modules.container.Sequential"], ["0", "torch.nn.modules.linear.Linear"]]]
    },
}
VIOLATION = {
    "rule": "node-reach",
    "where": "0/0: add",
    "message": "post-grad compute node (aten.add) reaches no kernel",
}
FAULT = {"stage": "emit", "error": "OSError: disk full"}


def _diag(doc: dict[str, Any], **changes: Any) -> str:
    """``doc`` with top-level keys replaced (``...`` removes one), as JSON text."""
    changed = {**doc, **changes}
    return json.dumps({k: v for k, v in changed.items() if v is not ...})


def test_diagnostics_v2_schema_states_the_records() -> None:
    schema = schemas.load_schema(DIAGNOSTICS, 2)
    assert schema["required"] == list(DIAG_V2) == list(wire.diagnostics_fields(2))
    assert schema["properties"]["graph"]["enum"] == list(GRAPH_KINDS)
    assert schema["$defs"]["fault"]["properties"]["stage"]["enum"] == list(FAULT_STAGES)
    assert schema["$defs"]["inferred"]["properties"]["why"]["enum"] == list(INFERRED_REASONS)
    assert schema["$defs"]["violation"]["properties"]["rule"]["enum"] == list(COVERAGE_RULES)
    coverage = schema["properties"]["coverage"]
    assert coverage["required"] == [f.name for f in msgspec.structs.fields(CoverageCounts)]
    assert coverage["properties"]["exempt_nodes"]["required"] == [f.name for f in msgspec.structs.fields(ExemptNodes)]
    # the migration note names what version 2 adds
    added = [k for k in schema["required"] if k not in schemas.load_schema(DIAGNOSTICS, 1)["required"]]
    assert added == ["backend", "complete", "coverage", "inferred", "violations", "hints"]
    assert all(name in schema["$comment"].partition("Migration")[2] for name in added)


def test_diagnostics_v4_schema_states_the_records() -> None:
    schema = schemas.load_schema(DIAGNOSTICS, 4)
    assert schema["required"] == list(DIAG_V4) == list(wire.diagnostics_fields(4))
    assert schema["properties"]["coverage"]["required"] == list(CoverageCountsV4.__struct_fields__)
    assert schema["properties"]["bundle_handles"]["required"] == list(BundleHandlesV4.__struct_fields__)
    assert schema["$defs"]["inferredSource"]["properties"]["why"]["enum"] == list(INFERRED_SOURCE_REASONS)
    # 'subgraph' (a higher-order op holding the node's subgraph) came with version 5
    v4_reasons = [why for why in INFERRED_PRE_GRAD_REASONS if why != "subgraph"]
    assert schema["$defs"]["inferredPreGrad"]["properties"]["why"]["enum"] == v4_reasons
    v5 = schemas.load_schema(DIAGNOSTICS, 5)
    assert v5["$defs"]["inferredPreGrad"]["properties"]["why"]["enum"] == list(INFERRED_PRE_GRAD_REASONS)
    assert schema["$defs"]["inferredSource"]["required"] == list(InferredSource.__struct_fields__)
    assert schema["$defs"]["inferredPreGrad"]["required"] == list(InferredPreGrad.__struct_fields__)
    assert schema["$defs"]["kernelGap"]["required"] == list(KernelGap.__struct_fields__)
    # the migration note names what version 4 adds, at the top level and nested
    added = [k for k in schema["required"] if k not in schemas.load_schema(DIAGNOSTICS, 3)["required"]]
    assert added == ["inferred_sources", "inferred_pre_grad", "without_source", "without_pre_grad"]
    note = schema["$comment"].partition("Migration from version 3")[2].partition("Migration from version 2")[0]
    assert all(name in note for name in [*added, "kernels_with_source", "kernels_with_pre_grad", "shared"])


def test_diagnostics_v5_schema_states_the_records() -> None:
    schema = schemas.load_schema(DIAGNOSTICS, 5)
    assert schema["required"] == list(DIAG_V5) == list(wire.diagnostics_fields(5))
    comparison = schema["properties"]["matches_upstream"]
    assert comparison["required"] == list(UpstreamComparison.__struct_fields__)
    assert comparison["properties"]["relation"]["enum"] == list(UPSTREAM_RELATIONS)
    assert comparison["properties"]["differences"]["maxItems"] == SHOWN_UPSTREAM_DIFFERENCES
    assert comparison["properties"]["differences"]["items"]["required"] == list(UpstreamLink.__struct_fields__)
    assert comparison["properties"]["differences"]["items"]["properties"]["map"]["enum"] == list(COMPARED_MAPS)
    note = schema["$comment"].partition("Migration from version 4")[2].partition("Migration from version 3")[0]
    assert all(name in note for name in ["matches_upstream", *UPSTREAM_RELATIONS, "added", "missing", "differences"])


@pytest.mark.parametrize(
    "doc, version",
    [(DIAG_V1, "1"), (DIAG_V2, "2"), (DIAG_V3, "3"), (DIAG_V4, "4"), (DIAG_V5, "5")],
    ids=["v1", "v2", "v3", "v4", "v5"],
)
@pytest.mark.parametrize("given", [True, False], ids=["named", "by-shape"])
def test_diagnostics_versions_validate(doc: dict[str, Any], version: str, given: bool) -> None:
    for report in both(json.dumps(doc), DIAGNOSTICS if given else None):
        assert (report.artifact, report.version, report.problems) == (DIAGNOSTICS, version, ())


DIAG_VALID_EDGES = {
    "v2-incomplete-with-violations": _diag(DIAG_V2, complete=False, violations=[VIOLATION]),
    "v2-incomplete-unjudged": _diag(DIAG_V2, complete=False, coverage=None, backend=None),
    "v2-partial-incomplete": _diag(DIAG_V2, partial=True, complete=False, faults=[FAULT], mapping="upstream"),
    "v2-nothing-to-count": _diag(
        DIAG_V2,
        kernels=0,
        opspecs=0,
        handleless_opspecs=0,
        disagreements=[],
        inferred=[],
        hints=[],
        coverage={
            "call_sites": 0,
            "linked_call_sites": 0,
            "compute_nodes": 0,
            "reached_nodes": 0,
            "exempt_nodes": {"view": 0, "dead": 0, "constant": 0},
        },
    ),
    "v2-version-2.0": _diag(DIAG_V2, version=2.0),
    "v2-integral-float-count": _diag(DIAG_V2, coverage={**DIAG_V2["coverage"], "call_sites": 3.0}),
    "v2-same-node-two-kernels": _diag(
        DIAG_V2,
        inferred=[
            {"node": "relu", "kernel": "k:1", "why": "inlined"},
            {"node": "relu", "kernel": "k:2", "why": "inlined"},
        ],
    ),
    # stale bundle handles change neither partial nor complete
    "v3-no-bundles-to-check": _diag(DIAG_V3, bundle_handles=None),
    "v3-every-bundle-stale-yet-complete": _diag(DIAG_V3, bundle_handles={"checked": 5, "stale": 5, "missing": 0}),
    "v3-partial": _diag(DIAG_V3, partial=True, complete=False, faults=[FAULT], mapping="upstream"),
    # every bundle another call site's: a kernel called from several call sites
    "v4-every-bundle-shared": _diag(DIAG_V4, bundle_handles={"checked": 4, "stale": 0, "missing": 0, "shared": 4}),
    "v4-no-kernel-reaches": _diag(DIAG_V4, coverage={**DIAG_V4["coverage"], "kernels_with_pre_grad": 0}),
    "v4-one-kernel-two-sources": _diag(
        DIAG_V4,
        inferred_sources=[
            {"kernel": "k:1", "node": "a", "why": "consumer"},
            {"kernel": "k:1", "node": "b", "why": "consumer"},
        ],
    ),
    "v4-nothing-inferred": _diag(DIAG_V4, inferred_sources=[], inferred_pre_grad=[], without_pre_grad=[]),
    "v5-nothing-to-compare": _diag(DIAG_V5, matches_upstream=None),
    "v5-equal": _diag(DIAG_V5, matches_upstream={"relation": "equal", "added": 0, "missing": 0, "differences": []}),
    "v5-extends": _diag(DIAG_V5, matches_upstream={"relation": "extends", "added": 4, "missing": 0, "differences": []}),
    "v5-differs-more-than-shown": _diag(
        DIAG_V5, matches_upstream={**DIAG_V5["matches_upstream"], "missing": 40, "added": 0}
    ),
}


@pytest.mark.parametrize("case", DIAG_VALID_EDGES)
def test_diagnostics_valid_edge_cases(case: str) -> None:
    for report in both(DIAG_VALID_EDGES[case], DIAGNOSTICS):
        assert (report.version, report.problems) == (case[1], ()), report


def _coverage(**changes: Any) -> dict[str, Any]:
    return {**DIAG_V2["coverage"], **changes}


def _exempt(**changes: Any) -> dict[str, Any]:
    return _coverage(exempt_nodes={**DIAG_V2["coverage"]["exempt_nodes"], **changes})


# name -> (document text, {path: a part of its message}, version reported); every path is
# reported on both engines, and nothing else
BROKEN_DIAGNOSTICS: dict[str, tuple[str, dict[str, str], str | None]] = {
    # the invariants no schema can state, each broken alone
    "v2-partial-without-faults": (
        _diag(DIAG_V2, partial=True, complete=False),
        {"$.partial": "is true, but faults is empty"},
        "2",
    ),
    "v2-faults-not-partial": (
        _diag(DIAG_V2, faults=[FAULT]),
        {"$.partial": "is false, but faults lists what failed"},
        "2",
    ),
    "v2-complete-but-partial": (
        _diag(DIAG_V2, partial=True, faults=[FAULT]),
        {"$.complete": "is true, but partial is true"},
        "2",
    ),
    "v2-complete-but-unjudged": (_diag(DIAG_V2, coverage=None), {"$.complete": "is true, but coverage is null"}, "2"),
    "v2-complete-but-violated": (
        _diag(DIAG_V2, violations=[VIOLATION]),
        {"$.complete": "is true, but violations is not empty"},
        "2",
    ),
    "v2-complete-but-everything-wrong": (
        _diag(DIAG_V2, partial=True, faults=[FAULT], coverage=None, violations=[VIOLATION]),
        {"$.complete": "partial is true, coverage is null, violations is not empty"},
        "2",
    ),
    "v2-incomplete-but-nothing-wrong": (
        _diag(DIAG_V2, complete=False),
        {"$.complete": "is false, but partial is false, coverage is not null and violations is empty"},
        "2",
    ),
    "v2-more-handleless": (
        _diag(DIAG_V2, handleless_opspecs=6),
        {"$.handleless_opspecs": "6 is more than the 5 OpSpecs"},
        "2",
    ),
    "v2-bare-disagreement": (
        _diag(DIAG_V2, disagreements=["sdsc_a_0"]),
        {"$.disagreements[0]": rules.MSG_KERNEL_KEY},
        "2",
    ),
    "v2-repeated-disagreement": (
        _diag(DIAG_V2, disagreements=["k:1", "k:1"]),
        {"$.disagreements": 'duplicate entry "k:1"'},
        "2",
    ),
    "v2-more-linked-than-call-sites": (
        _diag(DIAG_V2, coverage=_coverage(linked_call_sites=4)),
        {"$.coverage.linked_call_sites": "4 is more than the 3 call sites"},
        "2",
    ),
    "v2-more-reached-than-compute": (
        _diag(DIAG_V2, coverage=_coverage(reached_nodes=4)),
        {"$.coverage.reached_nodes": "4 reached plus 1 dead plus 1 constant is more than the 5 compute nodes"},
        "2",
    ),
    "v2-more-exempt-than-compute": (
        _diag(DIAG_V2, coverage=_exempt(constant=2)),
        {"$.coverage.reached_nodes": "2 constant is more than"},
        "2",
    ),
    "v2-inferred-bare-kernel": (
        _diag(DIAG_V2, inferred=[{"node": "relu", "kernel": "cpp_fused_relu_0", "why": "inlined"}]),
        {"$.inferred[0].kernel": rules.MSG_KERNEL_KEY},
        "2",
    ),
    "v2-inferred-handle-zero": (
        _diag(DIAG_V2, inferred=[{"node": "relu", "kernel": "k:0", "why": "inlined"}]),
        {"$.inferred[0].kernel": rules.MSG_KERNEL_KEY},
        "2",
    ),
    "v2-inferred-twice": (
        _diag(
            DIAG_V2,
            inferred=[
                {"node": "relu", "kernel": "k:1", "why": "inlined"},
                {"node": "relu", "kernel": "k:1", "why": "consumer"},
            ],
        ),
        {"$.inferred": 'duplicate link of "relu" to "k:1"'},
        "2",
    ),
    # what the schema states, in the new (nested) fields
    "v2-empty-backend": (_diag(DIAG_V2, backend=""), {"$.backend": "must not be empty"}, "2"),
    "v2-backend-number": (_diag(DIAG_V2, backend=1), {"$.backend": "got integer"}, "2"),
    "v2-complete-null": (_diag(DIAG_V2, complete=None), {"$.complete": "expected boolean"}, "2"),
    "v2-coverage-list": (_diag(DIAG_V2, coverage=[]), {"$.coverage": "expected object or null, got array"}, "2"),
    "v2-coverage-missing-key": (
        _diag(DIAG_V2, coverage={k: v for k, v in DIAG_V2["coverage"].items() if k != "call_sites"}),
        {"$.coverage": 'missing required key "call_sites"'},
        "2",
    ),
    "v2-coverage-extra-key": (
        _diag(DIAG_V2, coverage=_coverage(views=1)),
        {"$.coverage": 'unexpected key "views"'},
        "2",
    ),
    "v2-coverage-negative": (
        _diag(DIAG_V2, coverage=_coverage(call_sites=-1)),
        {"$.coverage.call_sites": "must be >= 0, got -1"},
        "2",
    ),
    "v2-coverage-fractional": (
        _diag(DIAG_V2, coverage=_coverage(compute_nodes=5.5)),
        {"$.coverage.compute_nodes": "expected integer, got number"},
        "2",
    ),
    "v2-coverage-string-count": (
        _diag(DIAG_V2, coverage=_coverage(reached_nodes="3")),
        {"$.coverage.reached_nodes": "got string"},
        "2",
    ),
    "v2-exempt-negative": (
        _diag(DIAG_V2, coverage=_exempt(dead=-1)),
        {"$.coverage.exempt_nodes.dead": "must be >= 0, got -1"},
        "2",
    ),
    "v2-exempt-bool": (
        _diag(DIAG_V2, coverage=_exempt(view=True)),
        {"$.coverage.exempt_nodes.view": "got boolean"},
        "2",
    ),
    "v2-exempt-missing-key": (
        _diag(DIAG_V2, coverage=_coverage(exempt_nodes={"view": 0, "dead": 0})),
        {"$.coverage.exempt_nodes": 'missing required key "constant"'},
        "2",
    ),
    "v2-exempt-extra-key": (
        _diag(DIAG_V2, coverage=_exempt(alias=0)),
        {"$.coverage.exempt_nodes": 'unexpected key "alias"'},
        "2",
    ),
    "v2-inferred-bad-reason": (
        _diag(DIAG_V2, inferred=[{"node": "relu", "kernel": "k:1", "why": "guess"}]),
        {"$.inferred[0].why": 'got "guess"'},
        "2",
    ),
    "v2-inferred-missing-key": (
        _diag(DIAG_V2, inferred=[{"node": "relu", "kernel": "k:1"}]),
        {"$.inferred[0]": 'missing required key "why"'},
        "2",
    ),
    "v2-inferred-node-null": (
        _diag(DIAG_V2, inferred=[{"node": None, "kernel": "k:1", "why": "inlined"}]),
        {"$.inferred[0].node": "expected string, got null"},
        "2",
    ),
    "v2-violation-bad-rule": (
        _diag(DIAG_V2, complete=False, violations=[{**VIOLATION, "rule": "vibes"}]),
        {"$.violations[0].rule": 'got "vibes"'},
        "2",
    ),
    "v2-violation-extra-key": (
        _diag(DIAG_V2, complete=False, violations=[{**VIOLATION, "severity": 1}]),
        {"$.violations[0]": 'unexpected key "severity"'},
        "2",
    ),
    "v2-hint-not-a-string": (_diag(DIAG_V2, hints=[None]), {"$.hints[0]": "expected string, got null"}, "2"),
    "v2-missing-key": (_diag(DIAG_V2, hints=...), {"$": 'missing required key "hints"'}, "2"),
    "v2-extra-key": (_diag(DIAG_V2, extra=1), {"$": 'unexpected key "extra"'}, "2"),
    # versions: a version 2 document is not a version 1 one, nor the other way round
    "v2-without-version": (_diag(DIAG_V2, version=...), {"$": 'unexpected key "backend"'}, "1"),  # taken for version 1
    "v1-with-version-2": (_diag(DIAG_V1, version=2), {"$": 'missing required key "backend"'}, "2"),
    "v1-with-v2-key": (_diag(DIAG_V1, backend="reference"), {"$": 'unexpected key "backend"'}, "1"),
    "v1-handleless-still-checked": (
        _diag(DIAG_V1, handleless_opspecs=6),
        {"$.handleless_opspecs": "6 is more than the 5 OpSpecs"},
        "1",
    ),
    "v2-with-version-3": (_diag(DIAG_V2, version=3), {"$": 'missing required key "bundle_handles"'}, "3"),
    "v3-with-version-2": (_diag(DIAG_V3, version=2), {"$": 'unexpected key "bundle_handles"'}, "2"),
    "v3-more-lost-than-checked": (
        _diag(DIAG_V3, bundle_handles={"checked": 2, "stale": 2, "missing": 1}),
        {"$.bundle_handles": "2 stale plus 1 missing is more than the 2 bundles checked"},
        "3",
    ),
    "v3-negative-count": (
        _diag(DIAG_V3, bundle_handles={"checked": 2, "stale": -1, "missing": 0}),
        {"$.bundle_handles.stale": "must be >= 0, got -1"},
        "3",
    ),
    "v3-fractional-count": (
        _diag(DIAG_V3, bundle_handles={"checked": 2.5, "stale": 0, "missing": 0}),
        {"$.bundle_handles.checked": "expected integer, got number"},
        "3",
    ),
    "v3-extra-count": (
        _diag(DIAG_V3, bundle_handles={"checked": 2, "stale": 0, "missing": 0, "reused": 1}),
        {"$.bundle_handles": 'unexpected key "reused"'},
        "3",
    ),
    "v3-v2-rules-still-hold": (
        _diag(DIAG_V3, complete=False),
        {"$.complete": "is false, but partial is false, coverage is not null and violations is empty"},
        "3",
    ),
    "v3-with-version-4": (
        _diag(DIAG_V3, version=4),
        {
            "$": 'missing required key "inferred_sources"',
            "$.coverage": "missing required key",
            "$.bundle_handles": 'missing required key "shared"',
        },
        "4",
    ),
    "v4-with-version-3": (
        _diag(DIAG_V4, version=3),
        {
            "$": 'unexpected key "inferred_sources"',
            "$.coverage": 'unexpected key "kernels"',
            "$.bundle_handles": 'unexpected key "shared"',
        },
        "3",
    ),
    "v4-more-lost-than-checked": (
        _diag(DIAG_V4, bundle_handles={"checked": 4, "stale": 1, "missing": 1, "shared": 3}),
        {"$.bundle_handles": "1 stale plus 1 missing plus 3 shared is more than the 4 bundles checked"},
        "4",
    ),
    "v4-shared-negative": (
        _diag(DIAG_V4, bundle_handles={"checked": 4, "stale": 0, "missing": 0, "shared": -1}),
        {"$.bundle_handles.shared": "must be >= 0, got -1"},
        "4",
    ),
    "v4-more-sourced-than-kernels": (
        _diag(DIAG_V4, coverage={**DIAG_V4["coverage"], "kernels_with_source": 4}),
        {"$.coverage.kernels_with_source": "4 is more than the 3 kernels"},
        "4",
    ),
    "v4-more-reaching-than-kernels": (
        _diag(DIAG_V4, coverage={**DIAG_V4["coverage"], "kernels_with_pre_grad": 9}),
        {"$.coverage.kernels_with_pre_grad": "9 is more than the 3 kernels"},
        "4",
    ),
    "v4-source-bad-reason": (
        _diag(DIAG_V4, inferred_sources=[{"kernel": "k:1", "node": "a", "why": "seq_nr"}]),
        {"$.inferred_sources[0].why": 'got "seq_nr"'},
        "4",
    ),
    "v4-source-bare-kernel": (
        _diag(DIAG_V4, inferred_sources=[{"kernel": "k", "node": "a", "why": "consumer"}]),
        {"$.inferred_sources[0].kernel": rules.MSG_KERNEL_KEY},
        "4",
    ),
    "v4-source-twice": (
        _diag(DIAG_V4, inferred_sources=[{"kernel": "k:1", "node": "a", "why": "consumer"}] * 2),
        {"$.inferred_sources": 'duplicate source "a" of "k:1"'},
        "4",
    ),
    "v4-pre-grad-bad-reason": (
        _diag(DIAG_V4, inferred_pre_grad=[{"node": "mm", "pre_grad": ["linear"], "why": "inlined"}]),
        {"$.inferred_pre_grad[0].why": 'got "inlined"'},
        "4",
    ),
    "v4-pre-grad-repeated": (
        _diag(DIAG_V4, inferred_pre_grad=[{"node": "mm", "pre_grad": ["linear", "linear"], "why": "seq_nr"}]),
        {"$.inferred_pre_grad[0].pre_grad": 'duplicate entry "linear"'},
        "4",
    ),
    "v4-pre-grad-node-twice": (
        _diag(
            DIAG_V4,
            inferred_pre_grad=[
                {"node": "mm", "pre_grad": ["a"], "why": "seq_nr"},
                {"node": "mm", "pre_grad": ["b"], "why": "consumer"},
            ],
        ),
        {"$.inferred_pre_grad": 'duplicate node "mm"'},
        "4",
    ),
    "v4-gap-empty-why": (
        _diag(DIAG_V4, without_source=[{"kernel": "k:1", "why": ""}]),
        {"$.without_source[0].why": "must not be empty"},
        "4",
    ),
    "v4-gap-bare-kernel": (
        _diag(DIAG_V4, without_pre_grad=[{"kernel": "k", "why": "x"}]),
        {"$.without_pre_grad[0].kernel": rules.MSG_KERNEL_KEY},
        "4",
    ),
    "v4-gap-twice": (
        _diag(DIAG_V4, without_source=[{"kernel": "k:1", "why": "x"}, {"kernel": "k:1", "why": "y"}]),
        {"$.without_source": 'duplicate kernel "k:1"'},
        "4",
    ),
    "v4-gap-extra-key": (
        _diag(DIAG_V4, without_source=[{"kernel": "k:1", "why": "x", "node": "a"}]),
        {"$.without_source[0]": 'unexpected key "node"'},
        "4",
    ),
    "v4-v2-rules-still-hold": (
        _diag(DIAG_V4, complete=False),
        {"$.complete": "is false, but partial is false, coverage is not null and violations is empty"},
        "4",
    ),
    "v4-a-comparison-object": (
        _diag(DIAG_V4, matches_upstream=DIAG_V5["matches_upstream"]),
        {"$.matches_upstream": ""},
        "4",
    ),
    "v5-a-boolean": (_diag(DIAG_V5, matches_upstream=True), {"$.matches_upstream": ""}, "5"),
    "v5-unknown-relation": (
        _diag(DIAG_V5, matches_upstream={**DIAG_V5["matches_upstream"], "relation": "subset"}),
        {"$.matches_upstream.relation": 'got "subset"'},
        "5",
    ),
    "v5-relation-not-the-counts": (
        _diag(DIAG_V5, matches_upstream={"relation": "equal", "added": 2, "missing": 0, "differences": []}),
        {"$.matches_upstream.relation": 'is "equal", but 2 added and 0 missing links make it "extends"'},
        "5",
    ),
    "v5-more-listed-than-missing": (
        _diag(DIAG_V5, matches_upstream={**DIAG_V5["matches_upstream"], "missing": 1}),
        {"$.matches_upstream.differences": "lists 2 links, more than the 1 missing"},
        "5",
    ),
    "v5-link-twice": (
        _diag(
            DIAG_V5,
            matches_upstream={
                **DIAG_V5["matches_upstream"],
                "differences": [DIAG_V5["matches_upstream"]["differences"][0]] * 2,
            },
        ),
        {"$.matches_upstream.differences": "duplicate link"},
        "5",
    ),
    "v5-negative-count": (
        _diag(DIAG_V5, matches_upstream={"relation": "extends", "added": -1, "missing": 0, "differences": []}),
        {"$.matches_upstream.added": "must be >= 0, got -1"},
        "5",
    ),
    "v6-unknown-cache": (
        _diag(DIAG_V6, cache="warm"),
        {"$.cache": '"warm"'},
        "6",
    ),
    "v6-cached-without-provenance-complete": (
        # the entry held no provenance: nothing was recorded, so the graph cannot be whole
        _diag(DIAG_V6, cache="cached without provenance"),
        {"$.partial": "cached without provenance"},
        "6",
    ),
    "v6-without-cache": (
        _diag(DIAG_V5, version=6),
        {"$": "cache"},
        "6",
    ),
    "v6-module-stack-of-no-call-site": (
        _diag(DIAG_V6, module_stacks={"sdsc_a_0": [[["0", "torch.nn.modules.linear.Linear"]]]}),
        {'$.module_stacks["sdsc_a_0"]': '"<kernel>:<N>"'},
        "6",
    ),
    "v6-module-without-class": (
        _diag(DIAG_V6, module_stacks={"sdsc_a_0:1": [[["0"]]]}),
        {'$.module_stacks["sdsc_a_0:1"][0][0]': ""},
        "6",
    ),
    "version-7": (
        _diag(DIAG_V6, version=7),
        {"$.version": "unsupported version 7 (this validator knows 1, 2, 3, 4, 5, 6)"},
        None,
    ),
}


@pytest.mark.parametrize("case", BROKEN_DIAGNOSTICS)
def test_each_broken_diagnostics_document_reports_exactly_its_paths(case: str) -> None:
    text, expected, version = BROKEN_DIAGNOSTICS[case]
    for report in both(text, DIAGNOSTICS):
        assert {p.path for p in report.problems} == set(expected), report
        assert (report.artifact, report.version) == (DIAGNOSTICS, version)
        for path, part in expected.items():
            # the problem line names the path, then says what is wrong there
            assert any(str(p).startswith(f"{path}: ") and part in p.message for p in report.problems), report


def test_diagnostics_gate_wants_version_6() -> None:
    built = msgspec.convert(DIAG_V6, DiagnosticsV6)
    assert schemas.check_built_artifacts(None, diagnostics=built) == []
    assert schemas.check_built_artifacts(None, diagnostics=msgspec.convert(DIAG_V5, DiagnosticsV5)) == [
        f"{DIAGNOSTICS}: built as version 5, expected 6"
    ]
    built.complete = False
    assert schemas.check_built_artifacts(None, diagnostics=built) == [
        f"{DIAGNOSTICS}: $.complete: is false, but partial is false, coverage is not null and violations is empty"
    ]


# --- detection ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, artifact",
    [
        ("inductor_provenance_tracking_node_mappings.json", NODE_MAPPINGS),
        ("out/graph_0/inductor_provenance_tracking_node_mappings_12.json", NODE_MAPPINGS),
        ("inductor_provenance_tracking_kernel_stack_traces_3.json", KERNEL_STACK_TRACES),
        ("kernel_information.json", KERNEL_INFORMATION),
        ("spyre_opspec_debug_handles.json", OPSPEC_DEBUG_HANDLES),
        ("mapping.json", None),
        ("inductor_provenance_tracking_node_mappings.txt", None),
    ],
)
def test_artifact_for_filename(name: str, artifact: str | None) -> None:
    assert schemas.artifact_for_filename(name) == artifact


@pytest.mark.parametrize(
    "doc, strict, artifact",
    [
        ({"version": 2.0}, False, NODE_MAPPINGS),
        ({"postToPre": {}}, True, NODE_MAPPINGS),
        ({"version": 1, "kernels": {}, "handles": {}}, True, OPSPEC_DEBUG_HANDLES),
        ({"k:1": []}, True, KERNEL_STACK_TRACES),
        ({"k": []}, False, KERNEL_STACK_TRACES),
        ({"k": []}, True, None),  # a folder scan does not take {"a": [...]} for an artifact
        ({"k:1": {}}, True, KERNEL_INFORMATION),
        ({}, False, None),
        ({"k:1": 3}, False, None),
    ],
)
def test_guess_artifact(doc: dict, strict: bool, artifact: str | None) -> None:
    assert schemas.guess_artifact(doc, strict=strict) == artifact


@pytest.mark.parametrize(
    "artifact, doc, version, schema",
    [
        (NODE_MAPPINGS, {"version": 2.0}, "2.0", 2),
        (NODE_MAPPINGS, {"version": 2}, "2.0", 2),
        (NODE_MAPPINGS, {"cppCodeToPost": {"k:1": []}}, "2.0", 2),  # handles, version missing
        (NODE_MAPPINGS, {"cppCodeToPost": {"k": []}}, "1", 1),
        (NODE_MAPPINGS, {}, "1", 1),
        (NODE_MAPPINGS, {"version": 3.0}, None, None),
        (NODE_MAPPINGS, {"version": True}, None, None),
        (KERNEL_STACK_TRACES, {"k": [], "j:2": []}, "2", 2),
        (KERNEL_STACK_TRACES, {"k": []}, "1", 1),
        (OPSPEC_DEBUG_HANDLES, {"version": 1}, "1", 1),
        (OPSPEC_DEBUG_HANDLES, {"version": "1"}, None, None),
        (DIAGNOSTICS, {"version": 1}, "1", 1),
        (DIAGNOSTICS, {"version": 2}, "2", 2),
        (DIAGNOSTICS, {"version": 2.0}, "2", 2),
        (DIAGNOSTICS, {}, "1", 1),  # the key is missing; validation reports it
        (DIAGNOSTICS, {"version": 3}, "3", 3),
        (DIAGNOSTICS, {"version": 4}, "4", 4),
        (DIAGNOSTICS, {"version": 5}, "5", 5),
        (DIAGNOSTICS, {"version": 7}, None, None),
        (DIAGNOSTICS, {"version": "2"}, None, None),
    ],
)
def test_detect_version(artifact: str, doc: dict, version: str | None, schema: int | None) -> None:
    detected = schemas.detect(artifact, doc)
    assert (detected.artifact, detected.version, detected.schema) == (artifact, version, schema)
    assert (detected.problem is None) == (schema is not None)


def test_unknown_version_is_a_problem_not_unusable() -> None:
    for report in both('{"version": 3.0, "preToPost": 5}'):
        assert report.version is None
        assert [str(p) for p in report.problems] == ["$.version: unsupported version 3.0 (this validator knows 2.0)"]


# --- unusable input ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data, what",
    [
        (b"", "empty"),
        (b" \n\t", "empty"),
        (b'{"version": 2.0, "preToPost": {', "not valid JSON"),
        (b'{"version": 2.0, "preToPost": {"a\xff": []}}', "not UTF-8 text (byte 0xff at offset 33)"),
        (b"[1, 2]", "top level is a JSON array, expected an object"),
        (b'"text"', "top level is a JSON string, expected an object"),
        (b'{"version": NaN}', "not valid JSON"),
        (b'{"version": 1e999}', "not valid JSON"),
        (b'{"something": "else"}', "not a recognized provenance artifact"),
    ],
)
@pytest.mark.parametrize("full", [False, True], ids=["fast", "full"])
def test_unusable_input_raises_one_line(data: bytes, what: str, full: bool) -> None:
    with pytest.raises(UnusableInput) as info:
        schemas.validate_bytes(data, full=full, location="in.json")
    assert str(info.value).startswith("in.json: ")
    assert what in info.value.what and "\n" not in str(info.value)


def test_validate_takes_a_parsed_document() -> None:
    assert schemas.validate(SEED).ok
    with pytest.raises(UnusableInput, match="top level is a JSON array"):
        schemas.validate([SEED])


def test_parse_json_finds_every_duplicated_key() -> None:
    doc, paths = jsonio.parse_json('{"a": {"b": 1, "b": 2}, "c": [{"d": 1, "d": 1}], "a": {}}')
    assert doc == {"a": {}, "c": [{"d": 1}]}
    # the first "a" object (and its own repeated "b") was replaced: only its key is reported
    assert paths == [("a",), ("c", 0, "d")]


def test_built_artifacts_gate() -> None:
    from spyre_provenance.model.records import NodeMappingsV2

    good = NodeMappingsV2(version=2.0, preToPost={"a": ["x"]}, postToPre={"x": ["a"]})
    assert schemas.check_built_artifacts(good, {"k:1": []}, None) == []
    broken = NodeMappingsV2(version=2.0, preToPost={"a": ["x"]})
    assert schemas.check_built_artifacts(broken, {"k": []}) == [
        'inductor_provenance_tracking_node_mappings: $.postToPre["x"]: missing "a": preToPost["a"] lists "x"',
        "inductor_provenance_tracking_kernel_stack_traces: built as version 1, expected 2",
    ]


def test_the_validation_library_imports_no_command() -> None:
    """The command line sits on the library, never under it (no import circle)."""
    golden = GOLDEN / "mlp"
    code = (
        "import sys; from spyre_provenance.validate import paths;"
        f"reports = paths.validate_paths([{str(golden)!r}]);"
        "assert reports and all(r.ok for r in reports), reports;"
        "loaded = [m for m in sys.modules if m.startswith('spyre_provenance.cli')];"
        "assert not loaded, loaded"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
