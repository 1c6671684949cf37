"""The zoo on torch-spyre main, tracking on (``--backend spyre``, fp16), as a user runs it.

For every graph torch-spyre compiles: exit 0 with nothing violated, lost or inconsistent;
every artifact valid; every call site linked on tlparse's page (the real tlparse); the
coverage judged on the log equal to the hook's diagnostics; every OpSpec carrying the id
torch-spyre wrote into its ``sdsc_<i>.json``; the graph the page shows holding every node
the mapping names (torch-spyre inserts nodes after compile_fx logs the graph: the hook logs
it again, docs/torch-spyre-main.md); and the nodes torch-spyre inserted given no pre-grad
node or source line by inference.

The models are the built-in examples torch-spyre accepts, ``models.py:param_free``, and
``spyre_models.py`` (the zoo's kinds of code at widths torch-spyre accepts); the ones it
refuses are ``test_spyre_refusals.py``'s.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import compiled_checks as check
from helpers import tlparse_page
from helpers.where import ZOO
from spyre_provenance.logs import tlparse_render, tracelog
from spyre_provenance.logs.graphs import read_log_graphs
from spyre_provenance.logs.post_grad import parse_post_grad_graph
from spyre_provenance.model.names import POST_GRAD_GRAPHS
from zoo.spyre_models import SPYRE_ZOO

SPYRE_MODELS = ZOO / "spyre_models.py"
#: what torch-spyre main compiles here, tracking on
ACCEPTED = [
    "mlp",
    "residual",
    "reduce2",
    f"{ZOO / 'models.py'}:param_free",
    *(f"{SPYRE_MODELS}:{name}" for name in SPYRE_ZOO),
]

pytestmark = [
    pytest.mark.compile,
    pytest.mark.skipif(tlparse_render.tlparse_binary() is None, reason="tlparse is not installed"),
]


def _id(spec: str) -> str:
    return spec.rsplit("/", 1)[-1]


@pytest.fixture(params=ACCEPTED, ids=[_id(s) for s in ACCEPTED])
def accepted(request, spyre_main_case):
    return spyre_main_case(request.param)


def test_exit_0_nothing_violated_lost_or_inconsistent(accepted):
    check.clean_exit(accepted)
    assert "on the spyre backend" in accepted.stdout


def test_every_artifact_is_valid(accepted):
    check.artifacts_valid(accepted)


def test_every_page_links_every_kernel(accepted):
    check.pages_link_every_kernel(accepted)


def test_the_log_judges_as_the_hook_did(accepted):
    check.coverage_as_the_hook_judged(accepted)
    check.sources_and_pre_grad(accepted, complete=True)


def test_every_kernel_is_torch_spyre_own(accepted):
    """Every call site is an ``sdsc_`` kernel defined by ``async_compile.sdsc(...)`` and
    called as ``name.run(...)`` right after its handle comment (REFERENCE.md §4.1), or an
    op torch-spyre leaves to an ATen fallback (``param_free``'s ``sin``, ``cos``)."""
    for graph in check.compiled_graphs(accepted):
        keys = list(graph.node_mappings["cppCodeToPost"])
        kernels = [k for k in keys if k.startswith("sdsc_")]
        assert kernels and all(k in kernels or k.startswith("torch.ops.aten.") for k in keys), keys
        code = graph.output_code.splitlines()
        for key in kernels:
            name = key.rsplit(":", 1)[0]
            assert f"{name} = async_compile.sdsc('{name}'," in graph.output_code
            at = code.index(next(line for line in code if line.strip() == f"# [Provenance debug handles] {key}"))
            assert code[at + 1].strip().startswith(f"{name}.run("), code[at + 1]


def _bundles(case) -> dict[str, list[dict]]:
    """kernel name -> the ``debug_handle_`` of each ``sdsc_<i>.json`` in its bundle folder."""
    found: dict[str, list[dict]] = {}
    for folder in case.bundle_dirs():
        kernel = folder.name[9:-9]  # <uuid8>_<kernel>_<mkdtemp's 8 characters, "_" among them>
        files = sorted(folder.glob("sdsc_*.json"), key=lambda p: int(p.stem.split("_")[1]))
        handles = []
        for path in files:
            (entry,) = json.loads(path.read_text()).values()
            handles.append(entry["debug_handle_"])
        assert kernel not in found, f"two bundle folders for {kernel}"
        found[kernel] = handles
    return found


def test_every_opspec_carries_the_id_torch_spyre_wrote_into_its_bundle(accepted):
    bundles = _bundles(accepted)
    seen = 0
    for folder in accepted.graph_dirs():
        doc = json.loads((folder / "spyre_opspec_debug_handles.json").read_text())
        for key, specs in doc["kernels"].items():
            written = bundles[key.rsplit(":", 1)[0]]
            assert len(written) == len(specs), key
            for index, (spec, bundle) in enumerate(zip(specs, written, strict=True)):
                assert bundle is not None and spec["debug_handle"] == bundle["id"], (key, index)
                seen += 1
    assert seen == sum(len(v) for v in bundles.values()) > 0  # every bundle is one of this compile's OpSpecs


def _logged_post_grad_graphs(case) -> list[list[str]]:
    """Per compiled graph, its logged post-grad graphs in log order (compile_fx's, then the
    hook's after the backend's passes, when they changed it)."""
    per_graph: list[list[str]] = []
    splitter = tracelog.GraphSplitter()
    for compile_id, name, payload in tracelog.artifact_payloads(case.log, {*POST_GRAD_GRAPHS, "inductor_output_code"}):
        if splitter.place(compile_id, name)[1]:
            per_graph.append([])
        if name in POST_GRAD_GRAPHS:
            per_graph[-1].append(payload)
    return per_graph


def test_the_page_shows_the_graph_torch_spyre_compiled(accepted):
    """Every node the mapping or an OpSpec handle names is a node of the post-grad graph
    the log and the page hold, torch-spyre's inserted nodes included."""
    logged = check.compiled_graphs(accepted)
    pages = [
        line.split("provenance page: ", 1)[1] for line in accepted.stdout.splitlines() if "provenance page: " in line
    ]
    for graph, page_path in zip(logged, pages, strict=True):
        shown = {n.name for n in parse_post_grad_graph(graph.post_grad_graph).nodes}
        named = {n for nodes in graph.node_mappings["cppCodeToPost"].values() for n in nodes}
        named |= set(graph.node_mappings["postToPre"])
        assert named <= shown, sorted(named - shown)
        page = tlparse_page.parse_page(Path(page_path).read_text())
        page_text = "\n".join(page.post_grad)
        assert all(n in page_text for n in named)


def test_inserted_nodes_get_no_pre_grad_node_or_source_they_do_not_have(accepted):
    """torch-spyre's nodes (those the second logged graph adds to compile_fx's) are never
    linked by the hook's inference; its restickifies, built with no origin, reach no
    pre-grad node at all."""
    for graph, texts in zip(check.compiled_graphs(accepted), _logged_post_grad_graphs(accepted), strict=True):
        first = {n.name for n in parse_post_grad_graph(texts[0]).nodes}
        last = {n.name for n in parse_post_grad_graph(texts[-1]).nodes}
        inserted = last - first
        diagnostics = graph.diagnostics
        assert not inserted & {link["node"] for link in diagnostics["inferred_pre_grad"]}
        assert not inserted & {link["node"] for link in diagnostics["inferred"]}
        kernels = graph.node_mappings["cppCodeToPost"]
        for link in diagnostics["inferred_sources"]:
            assert not set(kernels[link["kernel"]]) <= inserted, link
        for name in inserted:
            if name.startswith("restickify_default"):
                assert name not in graph.node_mappings["postToPre"], name


def test_torch_spyre_inserted_nodes_the_hook_logged_again(spyre_main_case):
    """The seed MLP: compile_fx logs 5 computed nodes, torch-spyre adds two restickifies,
    and the graph the page shows is the second one (issue 36's fault: the check used to
    read the first and find the mapping's nodes missing)."""
    case = spyre_main_case("mlp")
    (texts,) = _logged_post_grad_graphs(case)
    assert len(texts) == 2
    first = {n.name for n in parse_post_grad_graph(texts[0]).nodes}
    last = {n.name for n in parse_post_grad_graph(texts[1]).nodes}
    assert sorted(last - first) == ["restickify_default", "restickify_default_1"]
    (graph,) = read_log_graphs(case.log)
    assert graph.post_grad_graph == texts[1]
