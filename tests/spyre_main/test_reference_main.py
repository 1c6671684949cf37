"""The reference backend beside torch-spyre main: the same handle ids for the same content,
and, for each zoo model torch-spyre compiles here, as many kernels with the same compute ops;
where the reference does not model main's lowering (layer norm, SiLU, clones, attention),
the gap is named per model (``KERNEL_COUNT_GAPS``, ``OP_GAPS``: strict expected failures).

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
from spyre_provenance.model.folders import kernel_of_bundle_folder, label_and_compile_id
from spyre_provenance.model.layout import Layout, kernel_bundle_folder
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
        if not path.relative_to(GOLDEN).parts[0].startswith("spyre_main_"):  # the reference's cases
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


#: What the reference does not model of main's lowering, by model: the kernel counts agree
#: for every model but softmax_attention; the compute ops only for mlp and shared_block.
#: Found by this test on main 9a6b71e; strict, so a gap that closes fails until it is removed.
KERNEL_COUNT_GAPS = {
    "softmax_attention": "the reference leaves scaled_dot_product_attention to an extern fallback, which ends"
    " a run (3 kernels); main lowers it into its one bundle",
}
OP_GAPS = {
    "residual": "layer norm: main lowers it to its own exx2, layernormscale, layernormnorm; the reference to"
    " var_mean and pointwise ops, and makes no clones where main does",
    "reduce2": "op order inside the kernel, and main's clone (identity) of the input",
    "param_free": "main folds sin and cos of the input away before its kernel; the reference computes them",
    "gated_mlp": "SiLU: main's silu op, the reference's neg, exp, add, realdiv; main's clones",
    "softmax_attention": "see its kernel count",
    "layernorm_block": "layer norm and GELU: main's exx2, layernormscale, layernormnorm and gelufwd",
    "residual_stack": "SiLU as in gated_mlp, and main's clones",
    "tied_embedding": "embedding: main's two clones (identity), the reference's embedding op",
}


def _model(spec: str) -> str:
    return spec.rsplit(":", 1)[-1] if ":" in spec else spec


def _cases(gaps: dict[str, str]) -> list[Any]:
    if not ACCEPTED:
        return [pytest.param("mlp", marks=pytest.mark.skip(reason=HARNESS_MISSING))]
    return [
        pytest.param(
            spec,
            id=_model(spec),
            marks=[pytest.mark.xfail(strict=True, reason=gaps[_model(spec)])] if _model(spec) in gaps else [],
        )
        for spec in ACCEPTED
    ]


def _both(request: pytest.FixtureRequest, compile_case: Any, spec: str) -> tuple[list, list]:
    spyre = _fixture(request, "spyre_main_case")(spec)
    assert spyre.returncode == 0, spyre.stdout + spyre.stderr[-3000:]
    reference = compile_case(spec, "--backend", "reference", "--dtype", "float16")
    assert reference.returncode == 0, reference.stdout + reference.stderr[-3000:]
    return _compute_ops(spyre.log), _compute_ops(reference.log)


@pytest.mark.parametrize("spec", _cases(KERNEL_COUNT_GAPS))
def test_both_backends_make_as_many_kernels(request: pytest.FixtureRequest, compile_case: Any, spec: str) -> None:
    on_main, on_reference = _both(request, compile_case, spec)
    assert [len(g) for g in on_reference] == [len(g) for g in on_main]  # kernels per graph


@pytest.mark.parametrize("spec", _cases(OP_GAPS))
def test_each_kernel_computes_main_s_ops(request: pytest.FixtureRequest, compile_case: Any, spec: str) -> None:
    on_main, on_reference = _both(request, compile_case, spec)
    assert on_reference == on_main


def _bundle_layout(case: Any, root_of: Any) -> list[tuple[str, list[tuple[str, ...]]]]:
    """Each call site's bundles, found as every reader finds them: the folder its OpSpec
    artifact records, under its root (``kernel_bundle_folder``); per call site, its kernel
    and the paths of its bundle files relative to that root."""
    found = []
    for graph in case.graph_dirs():
        doc = json.loads((graph / "spyre_opspec_debug_handles.json").read_text())
        root = root_of(graph)
        for key, specs in doc["kernels"].items():
            kernel = key.rsplit(":", 1)[0]
            name = doc["bundles"][key]["folder"]
            assert kernel_of_bundle_folder(name) == kernel, (key, name)
            files = sorted(kernel_bundle_folder(root, name).glob("sdsc_*.json"))
            assert len(files) == len(specs), (key, name, files)
            found.append((kernel, [f.relative_to(root).parts for f in files]))
    return found


def test_both_backends_lay_bundles_out_alike(request: pytest.FixtureRequest, compile_case: Any) -> None:
    """torch-spyre main writes ``cache_dir()/inductor-spyre/<uuid8>_<kernel>_<suffix>/
    sdsc_<i>.json``; the reference backend the same shape under the model's bundle root, and
    one rule finds both from the folder name the OpSpec artifact records."""
    spyre = _fixture(request, "spyre_main_case")("mlp")
    assert spyre.returncode == 0, spyre.stdout + spyre.stderr[-3000:]
    reference = compile_case("mlp", "--backend", "reference", "--dtype", "float16")
    assert reference.returncode == 0, reference.stdout + reference.stderr[-3000:]

    def model_root(graph: Any) -> Any:
        label, _ = label_and_compile_id(graph.name) or (None, "")
        return Layout(graph.parent, label).bundle_root

    on_main = _bundle_layout(spyre, lambda graph: spyre.inductor_cache)
    on_reference = _bundle_layout(reference, model_root)
    assert on_main and on_reference
    for layout in (on_main, on_reference):
        for _, paths in layout:
            assert [p[0] for p in paths] == ["inductor-spyre"] * len(paths)
            assert [p[2] for p in paths] == [f"sdsc_{i}.json" for i in range(len(paths))]
    assert [k for k, _ in on_reference] == [k for k, _ in on_main]  # the same kernels, named alike
