"""``compile --backend spyre`` tells the truth (issue 36 point 5).

It puts the model and its inputs on ``spyre`` (``SpyreBackend.place``) so
torch-spyre's scheduler runs: on a card that is all it takes (torch-spyre's compile_fx
wrapper engages for tensors on ``spyre``: verified by reading
``torch_spyre/_inductor/__init__.py``, and by the route's compiles in the other tests,
which hand it exactly such a graph). Here the stand-in can hold the model on ``spyre``
only as tensors backed by CPU values, which Dynamo compiles with Inductor's stock CPU
kernels: the very case the command must never report as torch-spyre's. It says so in its
summary, and exits 1 with the reason; ``auto`` (torch-spyre imports here) says the same.
"""

from __future__ import annotations

import json

import pytest

from spyre_provenance.compile.outcome import NO_TORCH_SPYRE_KERNEL

pytestmark = pytest.mark.compile


@pytest.mark.parametrize("backend", ["spyre", "auto"])
def test_a_compile_without_a_torch_spyre_kernel_is_never_reported_as_spyre(backend, spyre_main_unrouted_case):
    case = spyre_main_unrouted_case("mlp", "--backend", backend, "--dtype", "float16")
    assert case.returncode == 1, case.stdout + case.stderr[-2000:]
    (header,) = [line for line in case.stdout.splitlines() if line.startswith("compiled ")]
    assert "NOT by torch-spyre" in header and "on the spyre backend" not in case.stdout, header
    assert NO_TORCH_SPYRE_KERNEL in case.stdout + case.stderr
    if backend == "auto":
        assert "backend spyre (auto: torch_spyre imports" in case.stdout + case.stderr
    # what it did compile: Inductor's own kernels, no sdsc_ one, and no bundle of torch-spyre
    keys = [
        key
        for folder in case.graph_dirs()
        for key in json.loads((folder / "inductor_provenance_tracking_node_mappings.json").read_text())["cppCodeToPost"]
    ]
    assert keys and not any(key.startswith("sdsc_") for key in keys), keys
    assert case.bundle_dirs() == []


def test_the_model_and_its_inputs_go_to_spyre(torch_spyre_python):
    """``place`` moves the parameters and every tensor input to ``spyre`` (where torch-spyre's
    own ``Module.to`` lays the weights out) and keeps other inputs as they are."""
    got = torch_spyre_python(
        """
        import json, torch
        from spyre_provenance.backends.spyre import SpyreBackend
        model = torch.nn.Linear(64, 64).half()
        placed, calls = SpyreBackend().place(model, [(torch.randn(2, 64).half(), 3)])
        print(json.dumps({
            "params": sorted({p.device.type for p in placed.parameters()}),
            "inputs": [x.device.type if isinstance(x, torch.Tensor) else x for x in calls[0]],
        }))
        """
    )
    assert got == {"params": ["spyre"], "inputs": ["spyre", 3]}


def test_the_route_compiles_are_torch_spyre_s(spyre_main_case):
    case = spyre_main_case("mlp")
    assert case.returncode == 0 and "on the spyre backend" in case.stdout.splitlines()[0]
    assert "NOT TORCH-SPYRE" not in case.stdout
