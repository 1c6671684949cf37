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
import pytest

from spyre_provenance import schemas
from spyre_provenance.errors import UnusableInput
from spyre_provenance.records import (
    KERNEL_INFORMATION,
    KERNEL_STACK_TRACES,
    NODE_MAPPINGS,
    OPSPEC_DEBUG_HANDLES,
)

ARTIFACTS_DIR = Path(__file__).parent / "data" / "artifacts"
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
OPSPEC = load(FILES[OPSPEC_DEBUG_HANDLES])
H_MATMUL, H_ADD, H_RELU, H_ZERO = "4611686018427387904", "17", "9223372036854775807", "0"


@pytest.fixture
def original_datadir(request: pytest.FixtureRequest) -> Path:
    # regression files live under tests/data, not next to the test module
    return Path(__file__).parent / "data" / "regressions" / request.path.stem


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
    assert schemas.available_versions(KERNEL_INFORMATION) == [1]
    assert schemas.available_versions(OPSPEC_DEBUG_HANDLES) == [1]


def test_load_schema_returns_a_copy() -> None:
    schemas.load_schema(NODE_MAPPINGS, 2)["required"].append("x")
    assert schemas.load_schema(NODE_MAPPINGS, 2)["required"] == ["version"]


def test_schema_dir_is_the_repository_folder_in_an_editable_install() -> None:
    assert Path(str(schemas.schema_dir())) == Path(__file__).parents[1] / "schemas"


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


def _set(path: list[Any], value: Any) -> Callable[[Any], None]:
    def change(doc: Any) -> None:
        for part in path[:-1]:
            doc = doc[part]
        doc[path[-1]] = value

    return change


VALID_EDGES = {
    # kernel names may hold colons: the handle follows the last one
    "colon-in-kernel-name": (
        NODE_MAPPINGS,
        '{"version": 2.0, "cppCodeToPost": {"torch.ops.my::op:4": ["x"]}, "postToCppCode": {"x": ["torch.ops.my::op:4"]}}',
    ),
    "upstream-empty-mapping": (NODE_MAPPINGS, '{"version": 2.0}'),
    "version-written-as-integer": (NODE_MAPPINGS, '{"version": 2}'),
    "unknown-top-level-key": (NODE_MAPPINGS, '{"version": 2.0, "future": {"a": [1, {"b:c": null}]}}'),
    "empty-list-means-no-pairs": (NODE_MAPPINGS, '{"version": 2.0, "preToPost": {"x": []}}'),
    "escaped-colon-is-no-duplicate": (NODE_MAPPINGS, '{"version": 2.0, "preToPost": {"a\\u003ab": ["x"]}, "postToPre": {"x": ["a:b"]}}'),
    "empty-stack-traces": (KERNEL_STACK_TRACES, "{}"),
    "integral-float-line": (OPSPEC_DEBUG_HANDLES, _edit(OPSPEC, _set(["handles", H_MATMUL, "source", "start_line"], 14.0))),
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
    "version-3.0": (NODE_MAPPINGS, _edit(SEED, _set(["version"], 3.0)), {"$.version"}, None),
    "version-as-string": (NODE_MAPPINGS, _edit(SEED, _set(["version"], "2.0")), {"$.version"}, None),
    "map-is-a-list": (NODE_MAPPINGS, _edit(SEED, _set(["preToPost"], [])), {"$.preToPost"}, "2.0"),
    "list-is-a-string": (NODE_MAPPINGS, _edit(SEED, _set(["preToPost", "relu"], "relu")), {'$.preToPost["relu"]'}, "2.0"),
    "name-is-a-number": (NODE_MAPPINGS, _edit(SEED, _set(["postToPre", "relu", 0], 7)), {'$.postToPre["relu"][0]'}, "2.0"),
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
        {'$.handles["017"]', '$.kernels["sdsc_fused_addmm_linear_relu_0:1"][1].debug_handle',
         f'$.handles["{H_RELU}"].fused_from[1]'},
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
    "opspec-version-2": (OPSPEC_DEBUG_HANDLES, _edit(OPSPEC, _set(["version"], 2)), {"$.version"}, None),
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
    doc = {"version": 2.0, "cppCodeToPost": {f"k{i}": [] for i in range(150)}}
    for report in both(json.dumps(doc), NODE_MAPPINGS):
        assert len(report.problems) == schemas.MAX_PROBLEMS and report.omitted == 50


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
    doc, paths = schemas.parse_json('{"a": {"b": 1, "b": 2}, "c": [{"d": 1, "d": 1}], "a": {}}')
    assert doc == {"a": {}, "c": [{"d": 1}]}
    # the first "a" object (and its own repeated "b") was replaced: only its key is reported
    assert paths == [("a",), ("c", 0, "d")]


def test_built_artifacts_gate() -> None:
    from spyre_provenance.records import NodeMappingsV2

    good = NodeMappingsV2(version=2.0, preToPost={"a": ["x"]}, postToPre={"x": ["a"]})
    assert schemas.check_built_artifacts(good, {"k:1": []}, None) == []
    broken = NodeMappingsV2(version=2.0, preToPost={"a": ["x"]})
    assert schemas.check_built_artifacts(broken, {"k": []}) == [
        'inductor_provenance_tracking_node_mappings: $.postToPre["x"]: missing "a": preToPost["a"] lists "x"',
        "inductor_provenance_tracking_kernel_stack_traces: built as version 1, expected 2",
    ]


def test_pure_modules_do_not_import_torch() -> None:
    code = (
        "import sys; import spyre_provenance.schemas, spyre_provenance.tracelog, spyre_provenance.commands.validate;"
        "assert 'torch' not in sys.modules, 'torch imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
