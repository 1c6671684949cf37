"""``golden.normalize``: what varies between machines goes, nothing else (pure, no compile)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import spyre_provenance
from helpers.where import GOLDEN  # tests/ is on sys.path
from spyre_provenance import golden
from spyre_provenance.backends.reference.handles_from_origins import make_handle
from spyre_provenance.backends.reference.lookalike import OpSpec, ProvenanceTransform, SourceLoc
from spyre_provenance.backends.spyre.opspecs import opspec_record
from spyre_provenance.links import mapping
from spyre_provenance.model.names import KERNEL_STACK_TRACES, NODE_MAPPINGS, OPSPEC_DEBUG_HANDLES
from spyre_provenance.model.records import KernelRecord

ROOTS = golden.Roots(project=("/home/ci/repo/",), tmp=("/tmp/",), stdlib=("/usr/lib/python3.11/",))


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/home/ci/repo/src/spyre_provenance/compile/examples.py", "src/spyre_provenance/compile/examples.py"),
        (
            "/home/ci/repo/.venv/lib/python3.11/site-packages/torch/nn/modules/linear.py",
            "<site-packages>/torch/nn/modules/linear.py",
        ),
        ("/opt/conda/lib/python3.10/dist-packages/mylib/model.py", "<site-packages>/mylib/model.py"),
        ("/tmp/pytest-of-ci/pytest-7/test_x0/model.py", "<tmp>/pytest-of-ci/pytest-7/test_x0/model.py"),
        ("/usr/lib/python3.11/contextlib.py", "<stdlib>/contextlib.py"),
        ("/srv/elsewhere/model.py", "/srv/elsewhere/model.py"),  # no rule: left alone
        ("src/model.py", "src/model.py"),  # already relative
        ("<site-packages>/torch/x.py", "<site-packages>/torch/x.py"),
        ("/tmp/obj_0x7f3a2b1c0d00/model.py", "<tmp>/obj_0xADDR/model.py"),
    ],
)
def test_paths(path, expected):
    assert golden.normalize_path(path, ROOTS) == expected
    assert golden.normalize_path(expected, ROOTS) == expected  # idempotent


def test_a_project_inside_tmp_stays_relative():
    roots = golden.Roots(project=("/tmp/pytest-1/proj/",), tmp=("/tmp/",))
    assert golden.normalize_path("/tmp/pytest-1/proj/tests/test_m.py", roots) == "tests/test_m.py"


def test_default_roots_take_this_checkout_and_the_temp_dir():
    roots = golden.Roots.default()
    checkout = golden.source_checkout()
    assert checkout is not None and str(checkout) + "/" in roots.project
    examples = Path(spyre_provenance.__file__).resolve().parent / "compile" / "examples.py"
    assert golden.normalize_path(str(examples), roots) == "src/spyre_provenance/compile/examples.py"


TRACE = (
    '  File "/home/ci/repo/src/spyre_provenance/examples.py", line 38, in forward\n'
    "    h = self.act(self.fc1(x))  # <Tensor at 0x7f3a2b1c0d00>\n"
    "                 ^^^^^^^^^^^^\n"
)


def test_stack_traces_lose_paths_and_addresses_only():
    doc = {"sdsc_fused_addmm_relu_t_0:1": [TRACE], "k:2": []}
    out = golden.normalize(KERNEL_STACK_TRACES, doc, ROOTS)
    assert list(out) == list(doc)
    (trace,) = out["sdsc_fused_addmm_relu_t_0:1"]
    assert trace == TRACE.replace("/home/ci/repo/", "").replace("0x7f3a2b1c0d00", "0xADDR")
    assert doc["sdsc_fused_addmm_relu_t_0:1"] == [TRACE]  # the input is not modified


def test_node_mappings_come_back_unchanged():
    doc = json.loads((GOLDEN / "mlp_train/graph_01_0-0_backward" / f"{NODE_MAPPINGS}.json").read_text())
    assert golden.dumps(golden.normalize(NODE_MAPPINGS, doc, ROOTS)) == golden.dumps(doc)


def _artifact(source_file: str) -> dict:
    """A two-kernel OpSpec artifact built the way the hook builds it (ids from content)."""
    src = SourceLoc(source_file, 38)
    mm = make_handle(src, "aten.addmm.default", ("mm",))
    perm = make_handle(src, "aten.t.default", ("permute",))
    fused = make_handle(
        src,
        None,
        ("mm", "permute", "buf0"),
        (mm, perm),
        (ProvenanceTransform("fusion", "inductor.lowering", "2 FX nodes"),),
    )
    relu = make_handle(src, "aten.relu.default", ("relu", "buf1"))
    records = [
        KernelRecord(
            "sdsc_fused_0",
            1,
            ["mm", "permute"],
            opspecs=[opspec_record(OpSpec("matmul", True, {}, [], {}, debug_handle=fused))],
        ),
        KernelRecord(
            "sdsc_relu_1",
            2,
            ["relu"],
            opspecs=[
                opspec_record(OpSpec("relufwd", False, {}, [], {}, debug_handle=relu)),
                opspec_record(OpSpec("copy", False, {}, [], {}, debug_handle=None)),
            ],
        ),
    ]
    return json.loads(mapping.to_json_bytes(mapping.build_opspec_artifact(records)))


def _references(doc: dict) -> list[str]:
    refs = [s["debug_handle"] for specs in doc["kernels"].values() for s in specs if s["debug_handle"]]
    return refs + [c for h in doc["handles"].values() for c in h["fused_from"]]


def test_handle_ids_are_recomputed_and_every_reference_remapped():
    raw = _artifact("/home/ci/repo/src/model.py")
    out = golden.normalize(OPSPEC_DEBUG_HANDLES, raw, ROOTS)
    assert set(out["handles"]).isdisjoint(raw["handles"])  # the path was hashed in
    assert all(ref in out["handles"] for ref in _references(out))
    assert all(h["source"]["file"] == "src/model.py" for h in out["handles"].values())
    for hid, entry in out["handles"].items():
        assert golden.handle_id(entry) == hid
    # everything but ids and paths stays, in order
    strip = lambda d: [[(s["op"], s["buffer"], s["debug_handle"] is None) for s in v] for v in d["kernels"].values()]  # noqa: E731
    assert list(out["kernels"]) == list(raw["kernels"]) and strip(out) == strip(raw)
    assert [h["ir_chain"] for h in out["handles"].values()] == [h["ir_chain"] for h in raw["handles"].values()]


def test_ids_do_not_depend_on_the_machine():
    here = golden.normalize(OPSPEC_DEBUG_HANDLES, _artifact("/home/ci/repo/src/model.py"), ROOTS)
    there = golden.normalize(
        OPSPEC_DEBUG_HANDLES, _artifact("/Users/dev/work/src/model.py"), golden.Roots(project=("/Users/dev/work/",))
    )
    assert golden.dumps(here) == golden.dumps(there)


def test_a_normalized_handle_keeps_the_id_the_compiler_gives_it():
    """The id function is the reference backend's: relative paths in, same ids out."""
    raw = _artifact("src/model.py")
    assert golden.dumps(golden.normalize(OPSPEC_DEBUG_HANDLES, raw, ROOTS)) == golden.dumps(raw)


def test_dangling_and_cyclic_references_do_not_crash():
    raw = _artifact("/home/ci/repo/src/model.py")
    first = next(iter(raw["handles"]))
    raw["handles"][first]["fused_from"] = [first]  # a cycle (the validator reports it)
    raw["kernels"]["sdsc_relu_1:2"][1]["debug_handle"] = "12345"  # not in the table
    out = golden.normalize(OPSPEC_DEBUG_HANDLES, raw, ROOTS)
    assert out["kernels"]["sdsc_relu_1:2"][1]["debug_handle"] == "12345"


@pytest.mark.parametrize("case", sorted(golden.CASES))
def test_golden_files_are_a_fixpoint(case):
    """Normalizing and serializing a committed golden gives its bytes back: one
    normalize function, one serializer, idempotent."""
    folder = GOLDEN / case
    files = golden.read_case(folder).normalized(golden.Roots.default()).files()
    on_disk = {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*.json")}
    assert files == on_disk


def test_serializer():
    assert (
        golden.dumps({"b": [1], "a": 2.0, "é": None})
        == b'{\n  "b": [\n    1\n  ],\n  "a": 2.0,\n  "\xc3\xa9": null\n}\n'
    )


frame_paths = st.lists(
    st.sampled_from(["home", "ci", "repo", "tmp", "site-packages", "lib", "x.py", "0x7fabcdef12"]),
    min_size=1,
    max_size=6,
)


@settings(max_examples=60, deadline=None)
@given(frame_paths, st.booleans())
def test_normalizing_twice_changes_nothing(parts, absolute):
    path = ("/" if absolute else "") + "/".join(parts)
    once = golden.normalize_text(f'  File "{path}", line 3, in f\n    y()\n', ROOTS)
    assert golden.normalize_text(once, ROOTS) == once


def test_normalize_does_not_touch_other_artifacts_in_place():
    doc = {"k:1": {"stack_traces": [TRACE], "post_grad_nodes": ["a"], "pre_grad_nodes": []}}
    before = copy.deepcopy(doc)
    out = golden.normalize("kernel_information", doc, ROOTS)
    assert doc == before and out["k:1"]["stack_traces"][0].startswith('  File "src/')


def test_bundle_keys_and_random_folder_parts_are_not_golden():
    """A v2 OpSpec artifact's provenance key hashes handle ids (absolute paths) and torch-
    spyre's folder names carry a uuid and a mkdtemp suffix: a golden holds neither."""
    doc = {
        "version": 2,
        "kernels": {"sdsc_fused_add_0:1": [], "sdsc_fused_mul_1:2": []},
        "handles": {},
        "bundles": {
            "sdsc_fused_add_0:1": {
                "provenance_key": "vsancadvtjfcq6cv",
                "folder": "1a2b3c4d_sdsc_fused_add_0_k3j_9x2q",
            },
            "sdsc_fused_mul_1:2": {"provenance_key": None, "folder": "sdsc_fused_mul_1"},
        },
    }
    out = golden.normalize(OPSPEC_DEBUG_HANDLES, doc, ROOTS)
    assert out["bundles"] == {
        "sdsc_fused_add_0:1": {"provenance_key": None, "folder": "sdsc_fused_add_0"},
        "sdsc_fused_mul_1:2": {"provenance_key": None, "folder": "sdsc_fused_mul_1"},
    }
