"""The golden cases: each session compile is compared with ``golden/<case>/`` through
pytest-regressions (``provenance_regression.check_provenance`` -> ``file_regression`` with
``fullpath`` into ``golden/``), so ``pytest --force-regen`` rewrites exactly the files, and
the bytes, that ``spyre-provenance golden update`` writes.

The compiles are shared with the other test modules (``golden_compile``): no case compiles
twice in a session.
"""

from __future__ import annotations

import re

import pytest

from helpers.torch_changes import expected_changes, unexplained  # tests/ is on sys.path
from helpers.where import GOLDEN  # tests/ is on sys.path
from spyre_provenance import golden
from spyre_provenance.plugin.pytest_fixture import ProvenanceToolchainHint


@pytest.mark.compile
@pytest.mark.parametrize("name", list(golden.CASES))
def test_golden_case(name, golden_compile, provenance_regression):
    if golden.CASES[name].needs_torch_spyre:
        pytest.skip("a torch-spyre main case: checked on torch-spyre itself (tests/spyre_main/test_spyre_golden.py)")
    compiled = golden_compile(name)
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr[-3000:]
    fresh = golden.fresh_case(golden.CASES[name], compiled.out)
    made_with = golden.read_case(GOLDEN / name).manifest["torch"]
    if made_with == golden.torch_version():
        provenance_regression.check_provenance(fresh, GOLDEN / name)
        return
    # another torch (make test-torch-next): the comparison still runs, and says why it may differ
    hint = f"golden/{name} was made with torch {made_with}, this run with torch {golden.torch_version()}: "
    expected = expected_changes(name, golden.torch_version())
    if expected is None:
        with pytest.warns(ProvenanceToolchainHint, match=re.escape(hint)):
            provenance_regression.check_provenance(fresh, GOLDEN / name)
        return
    with pytest.raises(pytest.fail.Exception) as failed:  # what that torch really writes otherwise
        provenance_regression.check_provenance(fresh, GOLDEN / name)
    message = str(failed.value)
    changes = [line.strip() for line in message.splitlines() if line.startswith("  ")]
    assert changes and not unexplained(changes, expected), message
    assert f"hint: {hint}" in message  # and the failure says why it may differ


def test_the_cases_the_issue_asks_for():
    recipes = {(c.model, c.backend, c.dtype, c.train) for c in golden.CASES.values()}
    assert {
        ("mlp", "reference", "float32", False),
        ("mlp", "reference", "float16", False),
        ("mlp", "inductor", "float32", False),
        ("residual", "reference", "float32", False),
        ("mlp", "reference", "float32", True),
    } <= recipes


@pytest.mark.parametrize("name", list(golden.CASES))
def test_manifest_says_what_made_it_and_how_to_remake_it(name):
    manifest = golden.read_case(GOLDEN / name).manifest
    case = golden.CASES[name]
    assert {k: manifest[k] for k in case.recipe()} == case.recipe()
    assert manifest["case"] == name and manifest["torch"]
    assert manifest["update"] == f"spyre-provenance golden update {name}"
    assert manifest["compile"].startswith("spyre-provenance compile " + " ".join(case.compile_args()))


def test_training_case_has_forward_and_backward():
    graphs = list(golden.read_case(GOLDEN / "mlp_train").graphs)
    assert [g.rsplit("_", 1)[1] for g in graphs] == ["forward", "backward"]


def test_golden_holds_no_machine_specific_text():
    for path in GOLDEN.rglob("*.json"):
        text = path.read_text()
        assert str(golden.source_checkout()) not in text and '"/' not in text and "0x7f" not in text, path
