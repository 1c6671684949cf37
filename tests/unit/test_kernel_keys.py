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
