"""Write the hand-made hostile corpus: ``python tests/hostile/make_corpus.py``.

Each case is a folder ``<verdict>/<case>/`` holding one file named the way the artifact
is named on disk (validate tells the artifact by file name). ``<verdict>`` is what
``spyre-provenance validate`` must say: ``invalid`` (exit 1: a provenance artifact, broken),
``unusable`` (exit 2: not even that) or ``warn`` (exit 0, 1 with ``--strict``: valid, but
tlparse will not file or render it as expected). The files are committed; this script documents
how each was made and rewrites them byte for byte. The huge ones (100 MB string,
100k-deep nesting, a 30 MB log line) are made at test time (tests/hardening/test_hostile_inputs.py).
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

HERE = Path(__file__).parent
SEED = HERE.parent / "data" / "logs" / "seed_mlp.log"

NM = "inductor_provenance_tracking_node_mappings.json"
ST = "inductor_provenance_tracking_kernel_stack_traces.json"
KI = "kernel_information.json"
OP = "spyre_opspec_debug_handles.json"
DG = "spyre_provenance_diagnostics.json"
AU = "provenance_audit.json"
LOG = "dedicated_log_torch_trace_hostile.log"

MAPPING = {
    "preToPost": {"linear": ["mm", "add"], "relu": ["relu"]},
    "postToPre": {"mm": ["linear"], "add": ["linear"], "relu": ["relu"]},
    "cppCodeToPost": {"sdsc_fused_mm_add_0:1": ["mm", "add"], "sdsc_relu_1:2": ["relu"]},
    "postToCppCode": {"mm": ["sdsc_fused_mm_add_0:1"], "add": ["sdsc_fused_mm_add_0:1"], "relu": ["sdsc_relu_1:2"]},
    "version": 2.0,
}
GOOD_MAPPING = json.dumps(MAPPING)
HANDLE = {"source": None, "aten_op": "aten.mm.default", "ir_chain": ["mm"], "fused_from": [], "transform_history": []}
SPEC = {"op": "matmul", "is_reduction": True, "iteration_space": [8, 4, 16], "buffer": "buf0", "debug_handle": "11"}
OPSPECS = {"version": 1, "kernels": {"sdsc_mm_0:1": [SPEC]}, "handles": {"11": HANDLE}}
DIAG = {
    "version": 1,
    "compile_id": "0/0",
    "graph": "inference",
    "partial": False,
    "mapping": "hook",
    "faults": [],
    "kernels": 2,
    "opspecs": 2,
    "handleless_opspecs": 0,
    "disagreements": [],
    "matches_upstream": True,
}


def with_(doc: dict, **changes) -> str:
    return json.dumps({**doc, **changes})


def record(envelope: dict, payload: bytes | None, *, md5: str | None = None) -> bytes:
    """One TORCH_TRACE record: glog prefix, envelope, TAB-prefixed payload lines."""
    envelope = dict(envelope)
    if payload is not None:
        envelope["has_payload"] = md5 or hashlib.md5(payload).hexdigest()
    head = b"V1202 10:56:15.069000 10152 torch/_inductor/compile_fx.py:1624] " + json.dumps(envelope).encode()
    lines = [head] + ([b"\t" + line for line in payload.split(b"\n")] if payload is not None else [])
    return b"\n".join(lines) + b"\n"


IDS = {"frame_id": 0, "frame_compile_id": 0, "attempt": 0}


def artifact(name: str, **extra) -> dict:
    return {"artifact": {"name": name, "encoding": "json"}, **IDS, **extra}


MAPPING_RECORD = artifact("inductor_provenance_tracking_node_mappings")

INVALID: dict[str, tuple[str, bytes | str]] = {
    # node mappings
    "mapping-duplicate-top-level-key": (NM, GOOD_MAPPING.replace('"preToPost"', '"preToPost": {}, "preToPost"', 1)),
    "mapping-duplicate-nested-key": (
        NM,
        GOOD_MAPPING.replace('"relu": ["relu"]', '"relu": ["relu"], "relu": ["relu"]', 1),
    ),
    "mapping-duplicate-key-escaped-colon": (
        NM,
        GOOD_MAPPING.replace(
            '"sdsc_relu_1:2": ["relu"]}', '"sdsc_relu_1:2": ["relu"], "sdsc_relu_1\\u003a2": ["relu"]}', 1
        ),
    ),
    "mapping-version-as-string": (NM, with_(MAPPING, version="2.0")),
    "mapping-version-true": (NM, with_(MAPPING, version=True)),
    "mapping-version-3": (NM, with_(MAPPING, version=3.0)),
    "mapping-map-is-a-list": (NM, with_(MAPPING, preToPost=[["linear", "mm"]])),
    "mapping-value-is-a-string": (NM, with_(MAPPING, postToPre={"mm": "linear", "add": ["linear"], "relu": ["relu"]})),
    "mapping-value-list-of-numbers": (NM, with_(MAPPING, preToPost={"linear": [1, 2], "relu": ["relu"]})),
    "mapping-value-null": (NM, with_(MAPPING, cppCodeToPost=None)),
    "mapping-kernel-key-without-handle": (NM, GOOD_MAPPING.replace("sdsc_relu_1:2", "sdsc_relu_1")),
    "mapping-kernel-key-handle-zero": (NM, GOOD_MAPPING.replace("sdsc_relu_1:2", "sdsc_relu_1:0")),
    "mapping-kernel-key-handle-negative": (NM, GOOD_MAPPING.replace("sdsc_relu_1:2", "sdsc_relu_1:-2")),
    "mapping-kernel-key-handle-leading-zero": (NM, GOOD_MAPPING.replace("sdsc_relu_1:2", "sdsc_relu_1:02")),
    "mapping-handle-used-twice": (NM, GOOD_MAPPING.replace("sdsc_relu_1:2", "sdsc_relu_1:1")),
    "mapping-inverse-maps-disagree": (
        NM,
        with_(MAPPING, postToPre={"mm": ["linear"], "add": ["relu"], "relu": ["relu"]}),
    ),
    "mapping-inverse-missing-entirely": (NM, with_(MAPPING, postToCppCode={})),
    "mapping-refers-to-unknown-kernel": (
        NM,
        with_(MAPPING, postToCppCode={**MAPPING["postToCppCode"], "relu": ["sdsc_gone_9:9"]}),
    ),
    "mapping-list-names-twice": (NM, with_(MAPPING, preToPost={"linear": ["mm", "mm", "add"], "relu": ["relu"]})),
    "mapping-version-1-with-handles": (
        NM,
        json.dumps({k: v for k, v in MAPPING.items() if k != "version"}).replace("sdsc_relu_1:2", "sdsc_relu_1"),
    ),
    "mapping-null-key-value-everywhere": (NM, json.dumps({"version": 2.0, "preToPost": {"": [""]}, "postToPre": {}})),
    # stack traces
    "stack-traces-duplicate-key": (ST, '{"k:1": ["a"], "k:1": ["b"]}'),
    "stack-traces-entries-repeat": (ST, '{"k:1": ["a", "a"]}'),
    "stack-traces-numbers": (ST, '{"k:1": [1, 2]}'),
    "stack-traces-handle-used-twice": (ST, '{"k:1": [], "j:1": []}'),
    # kernel_information
    "kernel-information-missing-field": (KI, '{"k:1": {"stack_traces": [], "post_grad_nodes": []}}'),
    "kernel-information-extra-field": (
        KI,
        '{"k:1": {"stack_traces": [], "post_grad_nodes": [], "pre_grad_nodes": [], "x": 1}}',
    ),
    "kernel-information-key-without-handle": (
        KI,
        '{"k": {"stack_traces": [], "post_grad_nodes": [], "pre_grad_nodes": []}}',
    ),
    # OpSpec debug handles
    "opspec-fused-from-cycle": (
        OP,
        with_(OPSPECS, handles={"11": {**HANDLE, "fused_from": ["12"]}, "12": {**HANDLE, "fused_from": ["11"]}}),
    ),
    "opspec-unknown-handle": (OP, with_(OPSPECS, kernels={"sdsc_mm_0:1": [{**SPEC, "debug_handle": "99"}]})),
    "opspec-handle-id-leading-zero": (OP, with_(OPSPECS, handles={"011": HANDLE})),
    "opspec-handle-id-too-big": (
        OP,
        with_(OPSPECS, handles={str(2**63): HANDLE}, kernels={"sdsc_mm_0:1": [{**SPEC, "debug_handle": str(2**63)}]}),
    ),
    "opspec-extra-key": (OP, with_(OPSPECS, comment="hi")),
    "opspec-version-2": (OP, with_(OPSPECS, version=2)),
    "opspec-missing-handles": (OP, json.dumps({"version": 1, "kernels": {}})),
    "opspec-negative-line": (
        OP,
        with_(
            OPSPECS,
            handles={
                "11": {
                    **HANDLE,
                    "source": {"file": "m.py", "start_line": -1, "start_col": 0, "end_line": None, "end_col": None},
                }
            },
        ),
    ),
    "opspec-unknown-transform": (
        OP,
        with_(
            OPSPECS,
            handles={"11": {**HANDLE, "transform_history": [{"kind": "magic", "pass_name": "p", "reason": ""}]}},
        ),
    ),
    "opspec-duplicate-handle-key": (
        OP,
        with_(OPSPECS).replace('"handles": {"11": ', '"handles": {"11": {}, "11": ', 1),
    ),
    # diagnostics
    "diagnostics-partial-without-faults": (DG, with_(DIAG, partial=True)),
    "diagnostics-unknown-stage": (DG, with_(DIAG, partial=True, faults=[{"stage": "lunch", "error": "x"}])),
    "diagnostics-negative-count": (DG, with_(DIAG, kernels=-2)),
    "diagnostics-more-handleless-than-opspecs": (DG, with_(DIAG, handleless_opspecs=3)),
    # TORCH_TRACE logs (validate reports the damage; the artifacts in them are checked too)
    "log-corrupt-payload": (
        LOG,
        record(
            MAPPING_RECORD,
            GOOD_MAPPING.replace("relu", "relU").encode(),
            md5=hashlib.md5(GOOD_MAPPING.encode()).hexdigest(),
        ),
    ),
    "log-corrupt-envelope": (
        LOG,
        record(MAPPING_RECORD, GOOD_MAPPING.encode()) + b'V1202 10:56:15.069000 10152 a.py:1] {"artifact": {"name": \n',
    ),
    "log-payload-without-envelope": (LOG, record(MAPPING_RECORD, GOOD_MAPPING.encode()) + b"\t{}\n\t[]\n"),
    "log-has-payload-not-hex": (LOG, record(MAPPING_RECORD, GOOD_MAPPING.encode(), md5="not-an-md5")),
    "log-payload-not-json": (LOG, record(MAPPING_RECORD, b'{"version": 2.0, "preToPost": ')),
    "log-payload-not-utf8": (LOG, record(MAPPING_RECORD, b'{"version": 2.0, "preToPost": {"caf\xe9": []}}')),
    "log-payload-deeply-nested": (LOG, record(MAPPING_RECORD, b"[" * 50_000)),
    "log-payload-duplicate-key": (
        LOG,
        record(MAPPING_RECORD, GOOD_MAPPING.replace('"preToPost"', '"preToPost": {}, "preToPost"', 1).encode()),
    ),
    "log-payload-inverse-disagrees": (LOG, record(MAPPING_RECORD, with_(MAPPING, postToPre={}).encode())),
    "log-truncated-mid-payload": (LOG, record(MAPPING_RECORD, json.dumps(MAPPING, indent=1).encode())[:-200]),
    "log-binary-garbage-after-a-record": (
        LOG,
        record(MAPPING_RECORD, GOOD_MAPPING.encode()) + bytes(range(256)) * 4 + b"\n",
    ),
    "log-envelope-is-an-array": (
        LOG,
        record(MAPPING_RECORD, GOOD_MAPPING.encode()) + b"V1202 10:56:15.069000 10152 a.py:1] [1, 2]\n",
    ),
}


def _audit(change) -> str:
    """The golden provenance audit (tests/data/artifacts) with one thing broken."""
    doc = json.loads((HERE.parent / "data" / "artifacts" / AU).read_text())
    change(doc)
    return json.dumps(doc, indent=1, ensure_ascii=False)


def _first_count(doc: dict) -> dict:
    return doc["graphs"][0]["stages"][0]["fields"]["stack_trace"]


INVALID.update(
    {
        # an audit that claims more nodes carry a field than its stage has
        "audit-present-over-total": (AU, _audit(lambda d: _first_count(d).update(present=4))),
        # missing names a node the stage does not have
        "audit-missing-not-a-node": (AU, _audit(lambda d: _first_count(d).update(present=2, missing=["no_such_node"]))),
        # a stage name no compile has
        "audit-unknown-stage": (AU, _audit(lambda d: d["graphs"][0]["stages"][0].update(name="lowering"))),
        # a drop at a stage that does not count its field
        "audit-drop-at-uncounted-stage": (AU, _audit(lambda d: d["graphs"][0]["drops"][0].update(stage="scheduler"))),
        # a kernel linked on the page but not mapped
        "audit-linked-without-mapping": (AU, _audit(lambda d: d["graphs"][0]["kernels"][0].update(mapped=False))),
    }
)

MAPPING_ARTIFACT = {"artifact": {"name": "inductor_provenance_tracking_node_mappings", "encoding": "json"}}

# Valid artifacts in records tlparse misfiles (tests/unit/test_validate_cli.py checks the wording
# against tlparse itself)
WARN: dict[str, tuple[str, bytes | str]] = {
    # torch logs AOTInductor compiles so: tlparse files them under -_-_-_-
    "log-no-compile-id": (LOG, record(MAPPING_ARTIFACT, GOOD_MAPPING.encode())),
    "log-compile-id-null": (
        LOG,
        record(
            {**MAPPING_ARTIFACT, "frame_id": None, "frame_compile_id": None, "attempt": None}, GOOD_MAPPING.encode()
        ),
    ),
    # filed under -_0_0_-, page built from -_0_0_0
    "log-compile-id-without-attempt": (
        LOG,
        record({**MAPPING_ARTIFACT, "frame_id": 0, "frame_compile_id": 0}, GOOD_MAPPING.encode()),
    ),
    "log-compile-id-frame-only": (LOG, record({**MAPPING_ARTIFACT, "frame_id": 0}, GOOD_MAPPING.encode())),
    # not a u32: tlparse drops the whole id, files under unknown_<line>
    "log-compile-id-is-a-string": (LOG, record({**MAPPING_ARTIFACT, **IDS, "frame_id": "0"}, GOOD_MAPPING.encode())),
    "log-compile-id-negative": (LOG, record({**MAPPING_ARTIFACT, **IDS, "attempt": -1}, GOOD_MAPPING.encode())),
}

UNUSABLE: dict[str, tuple[str, bytes | str]] = {
    "empty": (NM, b""),
    "whitespace-only": (NM, b" \n\t\r\n"),
    "truncated-object": (NM, GOOD_MAPPING[: len(GOOD_MAPPING) // 2]),
    "truncated-inside-a-string": (NM, GOOD_MAPPING[:17]),
    "not-utf8-latin1": (NM, '{"version": 2.0, "preToPost": {"caf\xe9": []}}'.encode("latin-1")),
    "not-utf8-bad-continuation": (NM, b'{"version": 2.0, "preToPost": {"\xe2\x28\xa1": []}}'),
    "not-utf8-in-an-unknown-key": (
        OP,
        with_(OPSPECS, kernels={"sdsc_mm_0:1": [{**SPEC, "x": 1}]}).encode().replace(b'"x"', b'"\x80x"'),
    ),
    "utf16-with-bom": (NM, GOOD_MAPPING.encode("utf-16")),
    "utf8-bom": (NM, b"\xef\xbb\xbf" + GOOD_MAPPING.encode()),
    "lone-surrogate-escape": (NM, '{"version": 2.0, "preToPost": {"\\ud800": ["x"]}, "postToPre": {"x": ["\\ud800"]}}'),
    "top-level-null": (NM, "null"),
    "top-level-array": (NM, "[" + GOOD_MAPPING + "]"),
    "top-level-string": (NM, '"inductor_provenance_tracking_node_mappings"'),
    "top-level-number": (NM, "2.0"),
    "comments": (NM, "// a mapping\n" + GOOD_MAPPING),
    "trailing-comma": (NM, GOOD_MAPPING[:-1] + ",}"),
    "single-quotes": (NM, GOOD_MAPPING.replace('"', "'")),
    "nan": (NM, with_(MAPPING).replace('"version": 2.0', '"version": NaN')),
    "infinity": (NM, with_(MAPPING).replace('"version": 2.0', '"version": Infinity')),
    "number-out-of-range": (NM, with_(MAPPING).replace('"version": 2.0', '"version": 1e400')),
    "integer-of-5000-digits": (NM, with_(MAPPING).replace('"version": 2.0', '"version": ' + "9" * 5000)),
    "two-documents": (NM, GOOD_MAPPING + GOOD_MAPPING),
    "leading-zero-number": (NM, with_(MAPPING).replace('"version": 2.0', '"version": 02.0')),
    "raw-control-character": (NM, GOOD_MAPPING.replace("relu", "re\x01lu", 1)),
    "nul-bytes": (NM, b"\x00" * 64),
    "png-header": (NM, b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"),
    "unrecognized-shape": ("provenance.json", '{"name": "not an artifact", "items": [1, 2, 3]}'),
    "log-without-glog-prefix": (LOG, "this is not a TORCH_TRACE log\n" + GOOD_MAPPING + "\n"),
    "log-empty": (LOG, b""),
    "log-without-provenance": (LOG, b"".join(SEED.read_bytes().splitlines(keepends=True)[:20])),
}


# an audit cut short: not JSON, so no audit at all
UNUSABLE["audit-truncated"] = (AU, _audit(lambda d: None)[:-40])


def main() -> None:
    for verdict, cases in (("invalid", INVALID), ("unusable", UNUSABLE), ("warn", WARN)):
        shutil.rmtree(HERE / verdict, ignore_errors=True)
        for case, (name, content) in cases.items():
            folder = HERE / verdict / case
            folder.mkdir(parents=True)
            (folder / name).write_bytes(content.encode() if isinstance(content, str) else content)
    print(f"{len(INVALID)} invalid, {len(UNUSABLE)} unusable, {len(WARN)} warn cases under {HERE}")


if __name__ == "__main__":
    main()
