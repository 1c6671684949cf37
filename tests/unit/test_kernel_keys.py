"""torch-spyre's kernel provenance key and event name, by the project's own implementation of
the published rule (``model.kernel_keys``), against what torch-spyre's own tests pin."""

from __future__ import annotations

import re
import tarfile

import pytest

from helpers.where import REPO
from spyre_provenance.backends.reference.lookalike import DebugHandle, OpSpec, SourceLoc, TensorArg
from spyre_provenance.model import kernel_keys

SNAPSHOT = REPO.parent / "shared" / "torch-spyre" / "torch-spyre-9a6b71e.tar.gz"
PINNED_TEST = "tests/inductor/test_kernel_provenance.py"


def _pinned_key() -> str:
    """The key torch-spyre's ``test_is_deterministic_and_order_sensitive`` pins, read from
    the snapshot (not typed here): ``assert forward.key == "..."``."""
    if not SNAPSHOT.is_file():
        pytest.skip(f"torch-spyre snapshot not found at {SNAPSHOT}")
    with tarfile.open(SNAPSHOT) as tar:
        member = next(m for m in tar.getmembers() if m.name.endswith(PINNED_TEST))
        text = tar.extractfile(member).read().decode()  # type: ignore[union-attr]
    found = re.findall(r'forward\.key == "([a-z2-7]{16})"', text)
    assert len(found) == 1, "the pinned key moved in torch-spyre's test: read it again"
    return found[0]


def _handle(handle_id: int) -> DebugHandle:
    # torch-spyre's test helper: mm at /workspace/model.py:117, ir_chain ("op<id>",)
    return DebugHandle(handle_id, SourceLoc("/workspace/model.py", 117), "aten.mm.default", (f"op{handle_id}",))


def _op(handle: DebugHandle | None, **fields) -> OpSpec:
    return OpSpec(fields.pop("op", "identity"), False, {}, [], {}, debug_handle=handle, **fields)


def test_the_key_torch_spyre_pins():
    forward = [_op(_handle(9)), _op(_handle(12))]
    assert kernel_keys.bundle_key(forward) == _pinned_key()
    assert kernel_keys.bundle_key([_op(_handle(12)), _op(_handle(9))]) != _pinned_key()  # order counts
    assert kernel_keys.handle_ids(forward) == ["9", "12"]


def test_structure_and_handles_change_the_key():
    handle = _handle(9)
    keys = {
        kernel_keys.bundle_key([_op(handle)]),
        kernel_keys.bundle_key([_op(handle, op="add")]),
        kernel_keys.bundle_key([_op(handle), _op(handle)]),
        kernel_keys.bundle_key([_op(None)]),
        kernel_keys.bundle_key([_op(_handle(10))]),
    }
    assert len(keys) == 5
    assert all(kernel_keys.KEY_RE.fullmatch(k) for k in keys)


def test_mapping_order_does_not_change_the_key_but_values_do():
    arg = TensorArg(True, 0, "float16", [2, 64], ["c0"], {"hbm": 0}, "arg0")
    one = _op(_handle(9), op="add")
    one.op_info = {"constants": {"alpha": 1.0, "beta": 2}}
    one.args = [arg]
    two = _op(_handle(9), op="add")
    two.op_info = {"constants": {"beta": 2, "alpha": 1.0}}
    two.args = [arg]
    three = _op(_handle(9), op="add")
    three.op_info = {"constants": {"beta": 2, "alpha": 1.5}}
    three.args = [arg]
    assert kernel_keys.bundle_key([one]) == kernel_keys.bundle_key([two]) != kernel_keys.bundle_key([three])


def test_event_names_round_trip():
    key = kernel_keys.bundle_key([_op(_handle(9))])
    name = kernel_keys.event_name(["aten.relu.default", "aten.linear.default", "aten.relu.default"], key)
    assert name == f"spyre_kernel_v1_fused_linear_relu_{key}"
    assert kernel_keys.key_of_event(name) == key
    assert kernel_keys.key_of_event(name + "#3") == key
    assert kernel_keys.event_name([], key) == f"spyre_kernel_v1_fused_unknown_{key}"
    assert kernel_keys.key_of_event("spyre_kernel_v2_fused_add_" + key) is None  # a version not known
    assert kernel_keys.key_of_event("sdsc_fused_add_0") is None
    long = kernel_keys.event_name([f"aten.op{i}.default" for i in range(60)], key)
    assert len((long + f"#{(1 << 64) - 1}").encode()) <= 127 and long.endswith(key)


# --- PR #3449's OpSpecs: core_id_to_work_slice and TensorWorkDivision.num_cores --------------

sympy = pytest.importorskip("sympy")
from helpers import pr3449  # noqa: E402

C0, C1, CORE = sympy.Symbol("c0"), sympy.Symbol("c1"), sympy.Symbol("core_id")


def _pr_arg(**fields) -> pr3449.TensorArg:
    base = {"is_input": True, "arg_index": 0, "device_dtype": "SEN169_FP16", "device_size": [2, 64]}
    return pr3449.TensorArg(
        **base, device_coordinates=[sympy.Integer(0), C0], allocation={"hbm": 0}, name="arg0", **fields
    )


def _pr_op(space, mapping=None, op="identity", args=()) -> pr3449.OpSpec:
    return pr3449.OpSpec(op, False, space, list(args), {}, core_id_to_work_slice=mapping, debug_handle=_handle(9))


def _payload_key(spec_payload: dict) -> str:
    """The key of one op, hashed here from its payload as the branch's rule states it."""
    import base64
    import hashlib
    import json

    payload = {"domain": "spyre-kernel-bundle", "version": 1, "specs": [spec_payload]}
    text = json.dumps(payload, ensure_ascii=True, allow_nan=False, sort_keys=True, separators=(",", ":"))
    return base64.b32encode(hashlib.sha256(text.encode()).digest()).decode().rstrip("=").lower()[:16]


def _srepr(value) -> dict:
    return {"sympy": sympy.srepr(value)}


def _op_payload(space: dict, op: str = "identity") -> dict:
    return {
        "kind": "op",
        "op": op,
        "is_reduction": False,
        "iteration_space": [[_srepr(d), _srepr(e), s] for d, (e, s) in space.items()],
        "args": [],
        "op_info": {"mapping": []},
        "tiled_symbols": [],
        "tiled_symbol_trip_counts": {"mapping": []},
        "symbolic_dim_bounds": {"mapping": []},
        "node_output_ranges": None,
        "debug_handle_id": "9",
    }


def test_pr3449_opspecs_without_the_new_fields_keep_their_keys():
    """An OpSpec of the branch that leaves the mapping unset, or sets the one older codegen
    derived, keys as main's OpSpec with the same content (so goldens and main's pins hold)."""
    space = {C0: (sympy.Integer(128), 1)}
    plain = kernel_keys.bundle_key([_pr_op(space)])
    assert plain == _payload_key(_op_payload(space))  # the payload main hashes, nothing added
    assert plain == kernel_keys.bundle_key(
        [OpSpec("identity", False, space, [], {}, debug_handle=_handle(9))]
    )  # main's
    assert kernel_keys.bundle_key([_pr_op(space, {C0: sympy.Integer(0)})]) == plain
    # split 2 x 2: core c -> (c % 2, c // 2 % 2), as derive_core_mapping writes it
    split = {C0: (sympy.Integer(128), 2), C1: (sympy.Integer(64), 2)}
    canonical = {C0: sympy.Mod(CORE, 2), C1: sympy.Mod(sympy.floor(CORE / 2), 2)}
    assert kernel_keys.bundle_key([_pr_op(split, canonical)]) == kernel_keys.bundle_key([_pr_op(split)])
    # a matmul varies its last dimension fastest
    swapped = {C1: sympy.Mod(CORE, 2), C0: sympy.Mod(sympy.floor(CORE / 2), 2)}
    assert kernel_keys.bundle_key([_pr_op(split, swapped, op="batchmatmul")]) == kernel_keys.bundle_key(
        [_pr_op(split, op="batchmatmul")]
    )
    assert kernel_keys.bundle_key([_pr_op(split, swapped)]) != kernel_keys.bundle_key([_pr_op(split)])


def test_pr3449_a_non_canonical_core_mapping_is_part_of_the_key():
    space = {C0: (sympy.Integer(128), 1)}
    moved = {C0: sympy.Integer(1)}
    expected = _op_payload(space) | {"core_id_to_work_slice": {"mapping": [[_srepr(C0), _srepr(sympy.Integer(1))]]}}
    assert kernel_keys.bundle_key([_pr_op(space, moved)]) == _payload_key(expected)
    assert kernel_keys.bundle_key([_pr_op(space, moved)]) != kernel_keys.bundle_key([_pr_op(space)])
    # a mapping that does not evaluate to a slice per core is not the derived one either
    symbolic = {C0: sympy.Symbol("s0")}
    assert kernel_keys.bundle_key([_pr_op(space, symbolic)]) != kernel_keys.bundle_key([_pr_op(space)])
    # a mapping over other dimensions than the iteration space is never the derived one
    assert kernel_keys.bundle_key([_pr_op(space, {C1: sympy.Integer(0)})]) != kernel_keys.bundle_key([_pr_op(space)])


def test_pr3449_num_cores_is_part_of_a_tensors_work_division():
    """The branch's test: ownership changes the key, and so does its core domain (4 vs None)."""
    space = {C0: (sympy.Integer(128), 1)}
    plain = _pr_arg()
    owned = _pr_arg(work_division=pr3449.TensorWorkDivision({C0: 2}, {C0: CORE}))
    four = _pr_arg(work_division=pr3449.TensorWorkDivision({C0: 2}, {C0: CORE}, num_cores=4))
    keys = [kernel_keys.bundle_key([_pr_op(space, args=[a])]) for a in (plain, owned, four)]
    assert len(set(keys)) == 3
    payload = _op_payload(space)
    arg = kernel_keys._tensor_arg(four)
    assert arg["work_division"]["num_cores"] == 4
    assert kernel_keys.bundle_key([_pr_op(space, args=[four])]) == _payload_key(payload | {"args": [arg]})
    # main's division has no num_cores field: its key is as main makes it, without the entry
    main_division = TensorArg(True, 0, "SEN169_FP16", [2, 64], [sympy.Integer(0), C0], {"hbm": 0}, "arg0")
    main_division.work_division = type(
        "MainDivision", (), {"work_slices": {C0: 2}, "core_id_to_work_slice": {C0: CORE}}
    )()  # type: ignore[attr-defined]
    assert "num_cores" not in kernel_keys._tensor_arg(main_division)["work_division"]
