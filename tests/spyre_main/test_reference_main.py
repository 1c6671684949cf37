"""The reference backend beside torch-spyre main: the same handle ids for the same content,
and, for each zoo model torch-spyre compiles here (``ACCEPTED``), as many kernels with the
same names, the same compute ops in the same order, over the same iteration spaces.

Restickify aside: main inserts restickify nodes (``restickify_default*``, from its
``insert_restickify``) where a card's stick layouts differ, which the CPU has not
(docs/backends.md); their OpSpecs are ``ReStickifyOpHBM``, or an ``identity`` copy when
main restickifies inside the core (tied_embedding's embedding table). These tests run on the spyre-main test
harness (this folder's ``conftest.py``: torch-spyre booted on the stand-in ``_C``); without
it they skip and say so.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest

from helpers.where import GOLDEN  # tests/ is on sys.path
from spyre_provenance.logs.graphs import read_log_graphs
from spyre_provenance.model.folders import kernel_of_bundle_folder, label_and_compile_id
from spyre_provenance.model.layout import Layout, kernel_bundle_folder

try:  # the models torch-spyre main compiles here (spyre-main's zoo test)
    from spyre_main.test_spyre_zoo import ACCEPTED
except ImportError:  # pragma: no cover - the harness is not in this checkout
    ACCEPTED = []

RESTICKIFY = "ReStickifyOpHBM"
#: the post-grad nodes torch-spyre main's insert_restickify adds (REFERENCE.md section 4.1)
RESTICKIFY_NODE = "restickify_default"
HARNESS_MISSING = "needs the spyre_main harness (tests/spyre_main/conftest.py: torch-spyre on the stand-in _C)"


def _fixture(request: pytest.FixtureRequest, name: str) -> Any:
    try:
        return request.getfixturevalue(name)
    except pytest.FixtureLookupError:
        pytest.skip(HARNESS_MISSING)


# torch-spyre's own id function on a handle table's content: its SourceLoc and DebugHandle,
# children passed as handles whose ids are the table's (the rule hashes only their ids)
TORCH_SPYRE_IDS = """
import itertools
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


def _restickify(spec: dict[str, Any], handles: dict[str, Any]) -> bool:
    """Whether an OpSpec is a restickify: by its op, or by the node its handle names."""
    chain = (handles.get(spec.get("debug_handle") or "") or {}).get("ir_chain") or [""]
    return spec["op"] == RESTICKIFY or chain[0].startswith(RESTICKIFY_NODE)


def _compute_specs(log: Any) -> list[list[tuple[str, list[tuple[str, list[Any], str | None, bool, Any]]]]]:
    """Per graph, per Spyre kernel in call order, its name and its OpSpecs' (op, iteration
    space, handle's ATen op, whether the handle fuses a transpose, handle's source),
    restickify aside."""
    graphs = []
    for graph in read_log_graphs(log):
        table = graph.opspec_handles or {}
        kernels, handles = table.get("kernels", {}), table.get("handles", {})
        ordered = sorted(kernels.items(), key=lambda item: int(item[0].rsplit(":", 1)[1]))
        graphs.append(
            [
                (key.rsplit(":", 1)[0], [_spec(s, handles) for s in specs if not _restickify(s, handles)])
                for key, specs in ordered
                if specs
            ]
        )
    return graphs


def _spec(spec: dict[str, Any], handles: dict[str, Any]) -> tuple[str, list[Any], str | None, bool, Any]:
    handle = handles.get(spec.get("debug_handle") or "") or {}
    transposed = any(node.startswith(("permute", "transpose")) for node in handle.get("ir_chain") or ())
    return spec["op"], spec["iteration_space"], handle.get("aten_op"), transposed, handle.get("source")


def _names(graphs: list[list[tuple[str, Any]]]) -> list[list[str]]:
    return [[name for name, _ in graph] for graph in graphs]


def _project(graphs: list[list[tuple[str, list[tuple[str, list[Any]]]]]], part: int) -> list[list[list[Any]]]:
    return [[[spec[part] for spec in specs] for _, specs in graph] for graph in graphs]


def _model(spec: str) -> str:
    return spec.rsplit(":", 1)[-1] if ":" in spec else spec


#: models on which main copies an op's result for its readers (an LX relayout ``identity``,
#: ``scratchpad/lx_relayout.py:218-371``), and how many times: the reference makes it by
#: main's work division (``backends/reference/core_division.py``, docs/backends.md)
LX_RELAYOUT_COPIES = {"gelu_mlp_batched": 1, "gelu_mlp_wide": 2}


def _cases() -> list[Any]:
    """Every model main compiles here."""
    if not ACCEPTED:
        return [pytest.param("mlp", marks=pytest.mark.skip(reason=HARNESS_MISSING))]
    return [pytest.param(spec, id=_model(spec)) for spec in ACCEPTED]


def _both(request: pytest.FixtureRequest, compile_case: Any, spec: str) -> tuple[list, list]:
    spyre = _fixture(request, "spyre_main_case")(spec)
    assert spyre.returncode == 0, spyre.stdout + spyre.stderr[-3000:]
    reference = compile_case(spec, "--backend", "reference", "--dtype", "float16")
    assert reference.returncode == 0, reference.stdout + reference.stderr[-3000:]
    return _compute_specs(spyre.log), _compute_specs(reference.log)


@pytest.mark.parametrize("spec", _cases())
def test_both_backends_make_as_many_kernels(request: pytest.FixtureRequest, compile_case: Any, spec: str) -> None:
    on_main, on_reference = _both(request, compile_case, spec)
    assert [len(g) for g in on_reference] == [len(g) for g in on_main]  # kernels per graph


@pytest.mark.parametrize("spec", _cases())
def test_kernels_are_named_as_on_main(request: pytest.FixtureRequest, compile_case: Any, spec: str) -> None:
    """``sdsc_<fused original-aten names>_<n>``: main names a layer norm's kernel by
    ``layer_norm`` and a linear's by ``linear``, the ops it decomposes whole."""
    on_main, on_reference = _both(request, compile_case, spec)
    assert _names(on_reference) == _names(on_main)


@pytest.mark.parametrize("spec", _cases())
def test_each_kernel_computes_main_s_ops(request: pytest.FixtureRequest, compile_case: Any, spec: str) -> None:
    """The same compute ops in the same order, clones (``identity``) where main makes them."""
    on_main, on_reference = _both(request, compile_case, spec)
    assert _project(on_reference, 0) == _project(on_main, 0)


@pytest.mark.parametrize("spec", _cases())
def test_each_op_iterates_as_on_main(request: pytest.FixtureRequest, compile_case: Any, spec: str) -> None:
    """Each compute op's iteration space is main's: its output's dimensions (main leaves
    Inductor's loops unmerged), a reduction's reduced dimensions after them; a linear on a
    3-D input a batchmatmul ``[B, M, N, K]``, an exx2 one element per row."""
    on_main, on_reference = _both(request, compile_case, spec)
    assert _project(on_reference, 1) == _project(on_main, 1)


def _relayout_copies(graphs: list[list[tuple[str, list[Any]]]]) -> list[list[Any]]:
    """Each ``identity`` of no ATen op right after an op, over that op's output (a
    ``batchmatmul``'s space without K): the copy of its result main's LX relayout makes,
    as (kernel, position)."""

    def output(spec: Any) -> list[Any]:
        return spec[1][:-1] if spec[0] == "batchmatmul" else spec[1]

    return [
        [
            (kernel, i)
            for kernel, specs in graph
            for i, (before, spec) in enumerate(itertools.pairwise(specs), start=1)
            if spec[0] == "identity" and spec[2] is None and spec[1] == output(before)
        ]
        for graph in graphs
    ]


@pytest.mark.parametrize("spec", _cases())
def test_the_reference_copies_a_result_where_main_relayouts_it(
    request: pytest.FixtureRequest, compile_case: Any, spec: str
) -> None:
    """Main copies a result where its readers divide it among the cores in other slices
    (``LX_RELAYOUT_COPIES``, none elsewhere), and the reference makes the same copies in
    the same places: the op-sequence tests above do not pass for want of one."""
    on_main, on_reference = _both(request, compile_case, spec)
    expected = LX_RELAYOUT_COPIES.get(_model(spec), 0)
    assert sum(map(len, _relayout_copies(on_main))) == expected
    assert _relayout_copies(on_reference) == _relayout_copies(on_main)


@pytest.mark.parametrize("spec", _cases())
def test_a_matmul_of_a_transposed_operand_names_main_s_aten_op(
    request: pytest.FixtureRequest, compile_case: Any, spec: str
) -> None:
    """A matmul whose handle fuses an operand's transpose (``q @ k^T``, a linear's weight)
    says main's ATen op: the matmul's (``aten.mm``, ``aten.bmm``) or the linear's, not None
    for the transpose's disagreeing ``aten.transpose``."""
    on_main, on_reference = _both(request, compile_case, spec)

    def matmuls(graphs: list[list[tuple[str, list[Any]]]]) -> list[list[Any]]:
        return [[(s[2], s[3]) for _, specs in graph for s in specs if s[0] == "batchmatmul"] for graph in graphs]

    pairs = [
        (mine, theirs)
        for graph_main, graph_reference in zip(matmuls(on_main), matmuls(on_reference), strict=True)
        for mine, theirs in zip(graph_reference, graph_main, strict=True)
        if mine[1] or theirs[1]
    ]
    assert [mine[0] for mine, _ in pairs] == [theirs[0] for _, theirs in pairs]


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


@pytest.mark.parametrize("spec", _cases())
def test_every_handle_names_main_s_aten_op(request: pytest.FixtureRequest, compile_case: Any, spec: str) -> None:
    """Every compute op's handle says the ATen op main's says (``DebugHandle.aten_op``),
    restickify aside: Inductor's ``origin_node`` where it is set, and a later no-op that
    returns an op's result unchanged re-points it (the op a linear reads says
    ``aten.linear``, the operand of a matmul ``aten.expand``), in both graphs alike."""
    on_main, on_reference = _both(request, compile_case, spec)
    assert _project(on_reference, 2) == _project(on_main, 2)


@pytest.mark.parametrize("spec", _cases())
def test_every_handle_points_at_main_s_line(request: pytest.FixtureRequest, compile_case: Any, spec: str) -> None:
    """Every compute op's handle gives the source line main's gives (``DebugHandle.source``),
    by the same rule: the ``origin_node``'s line where it is set (a relu a linear reads is
    that linear's line), restickify aside."""
    on_main, on_reference = _both(request, compile_case, spec)
    assert _project(on_reference, 4) == _project(on_main, 4)
