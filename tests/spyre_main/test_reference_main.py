"""The reference backend beside torch-spyre main: the same handle ids for the same content,
and, for each zoo model torch-spyre compiles here, the same kernels with the same compute ops.

Restickify aside: main inserts ``ReStickifyOpHBM`` OpSpecs where a card's stick layouts
differ, which the CPU has not (docs/backends.md). These tests run on the spyre-main test
harness (this folder's ``conftest.py``: torch-spyre booted on the stand-in ``_C``); without
it they skip and say so.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from spyre_provenance.logs.graphs import read_log_graphs
from where import GOLDEN  # tests/ is on sys.path

try:  # the models torch-spyre main compiles here (spyre-main's zoo test)
    from spyre_main.test_spyre_zoo import ACCEPTED
except ImportError:  # pragma: no cover - the harness is not in this checkout
    ACCEPTED = []

RESTICKIFY = "ReStickifyOpHBM"
HARNESS_MISSING = "needs the spyre_main harness (tests/spyre_main/conftest.py: torch-spyre on the stand-in _C)"


def _fixture(request: pytest.FixtureRequest, name: str) -> Any:
    try:
        return request.getfixturevalue(name)
    except pytest.FixtureLookupError:
        pytest.skip(HARNESS_MISSING)


# torch-spyre's own id function on a handle table's content: its SourceLoc and DebugHandle,
# children passed as handles whose ids are the table's (the rule hashes only their ids)
TORCH_SPYRE_IDS = """
import json
from torch_spyre._inductor.op_spec import DebugHandle, SourceLoc
from torch_spyre._inductor.provenance import _stable_id

table = json.loads({table!r})
ids = {{}}
for key, entry in table.items():
    source = SourceLoc(**entry["source"]) if entry["source"] else None
    children = tuple(DebugHandle(int(c), None, None, ()) for c in entry["fused_from"])
    ids[key] = str(_stable_id(source, entry["aten_op"], tuple(entry["ir_chain"]), children))
print(json.dumps(ids))
"""


def test_handle_ids_are_the_ones_torch_spyre_computes(request: pytest.FixtureRequest) -> None:
    """Every handle of the golden cases (the reference backend's, paths normalized and ids
    recomputed by the one rule) has the id torch-spyre's ``_stable_id`` gives its content."""
    run = _fixture(request, "torch_spyre_python")
    table: dict[str, Any] = {}
    for path in sorted(GOLDEN.rglob("spyre_opspec_debug_handles.json")):
        table.update(json.loads(path.read_text())["handles"])
    assert len(table) > 50  # every golden case's handles, fused children among them
    assert any(entry["fused_from"] for entry in table.values())
    computed = run(TORCH_SPYRE_IDS.format(table=json.dumps(table)))
    assert computed == {key: key for key in table}


def _compute_ops(log: Any) -> list[list[list[str]]]:
    """Per graph, per Spyre kernel in call order, its OpSpecs' ops, restickify aside."""
    graphs = []
    for graph in read_log_graphs(log):
        kernels = (graph.opspec_handles or {}).get("kernels", {})
        ordered = sorted(kernels.items(), key=lambda item: int(item[0].rsplit(":", 1)[1]))
        graphs.append([[s["op"] for s in specs if s["op"] != RESTICKIFY] for _, specs in ordered if specs])
    return graphs


@pytest.mark.parametrize("spec", ACCEPTED or [pytest.param("mlp", marks=pytest.mark.skip(reason=HARNESS_MISSING))])
def test_both_backends_make_the_same_kernels(request: pytest.FixtureRequest, compile_case: Any, spec: str) -> None:
    spyre = _fixture(request, "spyre_main_case")(spec)
    assert spyre.returncode == 0, spyre.stdout + spyre.stderr[-3000:]
    reference = compile_case(spec, "--backend", "reference", "--dtype", "float16")
    assert reference.returncode == 0, reference.stdout + reference.stderr[-3000:]
    on_main, on_reference = _compute_ops(spyre.log), _compute_ops(reference.log)
    assert [len(g) for g in on_reference] == [len(g) for g in on_main]  # kernels per graph
    assert on_reference == on_main
