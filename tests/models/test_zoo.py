"""The model zoo (``tests/zoo/models.py``), compiled as a user would: every graph's page
links every kernel, every OpSpec has its handle, coverage is complete by rule.

Each model is compiled on the reference backend in inference and in training, once per
session (``compile_case``), through ``PATH.py:FACTORY``. What must hold for each compile:
exit 0; every artifact valid (``validate`` on the folder, here, not just the summary's
word); on every tlparse page of every graph, each handle comment's call line is
highlighted and links at least one post-grad node; every OpSpec carries a debug handle;
the coverage judge finds nothing on the log, and says what the hook's diagnostics said
(the hook judged the FX graph, the log is judged from the printed graph text).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from helpers import compiled_checks as check
from helpers.where import ZOO as ZOO_DIR  # tests/ is on sys.path
from spyre_provenance.logs import tlparse_render
from spyre_provenance.logs.graphs import read_log_graphs
from zoo.models import INFERENCE_ONLY, ZOO

MODELS = ZOO_DIR / "models.py"
CASES = [
    (name, mode) for name in ZOO for mode in ("inference", "train") if mode == "inference" or name not in INFERENCE_ONLY
]

pytestmark = [
    pytest.mark.compile,
    pytest.mark.skipif(tlparse_render.tlparse_binary() is None, reason="tlparse is not installed"),
]


@pytest.fixture(params=CASES, ids=[f"{n}-{m}" for n, m in CASES])
def zoo_case(request, compile_case):
    name, mode = request.param
    args = (f"{MODELS}:{name}", "--backend", "reference") + (("--train",) if mode == "train" else ())
    compiled = compile_case(*args)
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr[-3000:]
    return compiled


# torch's own deprecation notices (torch 2.14.1 prints one from torch/jit on a training
# compile, once per process): torch's, not this tool's
TORCH_DEPRECATION = re.compile(r"/site-packages/torch/\S+\.py:\d+: (FutureWarning|DeprecationWarning): ")


def test_exit_0_and_no_warning(zoo_case):
    assert "Traceback" not in zoo_case.stderr
    ours = [line for line in zoo_case.stderr.splitlines() if "Warning" in line and not TORCH_DEPRECATION.search(line)]
    assert ours == [], zoo_case.stderr[-2000:]
    assert "output vs eager: match" in zoo_case.stdout
    assert "VIOLATION" not in zoo_case.stdout and "PARTIAL" not in zoo_case.stdout
    # a first compile into an empty folder: every bundle is this compile's (shared or own)
    assert "STALE" not in zoo_case.stdout


def test_every_kernel_has_a_source_line_and_a_true_pre_grad_node_or_says_why(zoo_case):
    """Every kernel of every graph, forward and backward, leads to a line of the model
    (issue 25) and to pre-grad nodes an oracle that is not the hook's inference finds true
    (issue 37: their lines are among the kernel's own nodes' lines, read from the logged
    graphs), or names why it has none; the summary counts the same."""
    check.sources_and_pre_grad(zoo_case, complete=True)
    check.true_links(zoo_case)


def test_dropout_is_compared_on_a_compile_that_draws_as_eager_does(compile_case):
    """Training with dropout: no mismatch the random numbers made; the summary says how it
    compared and names the random ops by source line; the in-place dropout's bernoulli_
    fallback call has its handle comment (the page tests above check it is linked)."""
    compiled = compile_case(f"{MODELS}:dropout", "--backend", "reference", "--train")
    check_lines = [line for line in compiled.stdout.splitlines() if "fallback_random" in line]
    assert len(check_lines) == 1 and "models.py:" in check_lines[0], compiled.stdout
    (forward, _backward) = [g for g in read_log_graphs(compiled.log) if g.output_code is not None]
    assert any(key.startswith("torch.ops.aten.bernoulli_.float:") for key in forward.node_mappings["cppCodeToPost"])
    inference = compile_case(f"{MODELS}:dropout", "--backend", "reference")
    assert "fallback_random" not in inference.stdout  # dropout draws nothing in eval mode


def test_recompiles_give_each_compile_id_its_artifacts_and_page(compile_case):
    """Three calls with new shapes: three compile ids, one graph folder, one set of valid
    artifacts and one fully linked page each (the page checks run in the tests above)."""
    compiled = compile_case(f"{MODELS}:recompiles", "--backend", "reference")
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr[-3000:]
    ids = [g.compile_id for g in read_log_graphs(compiled.log) if g.output_code is not None]
    assert ids == ["[0/0]", "[0/1]", "[0/2]"], ids
    assert [p.name.split("_", 3)[3] for p in compiled.graph_dirs()] == [
        "0-0_inference",
        "0-1_inference",
        "0-2_inference",
    ]
    (header,) = [line for line in compiled.stdout.splitlines() if line.startswith("compiled ")]
    assert "(as built, 3 calls)" in header
    pages = [
        line.split("provenance page: ", 1)[1] for line in compiled.stdout.splitlines() if "provenance page: " in line
    ]
    assert [Path(p).name for p in pages] == [f"provenance_tracking_-_0_{i}_0.html" for i in range(3)]


def test_every_artifact_is_valid(zoo_case):
    check.artifacts_valid(zoo_case)


def test_every_page_links_every_kernel(zoo_case):
    check.pages_link_every_kernel(zoo_case)


def test_every_opspec_has_a_handle(zoo_case):
    folders = zoo_case.graph_dirs()
    assert folders
    for folder in folders:
        doc = json.loads((folder / "spyre_opspec_debug_handles.json").read_text())
        specs = [s for specs in doc["kernels"].values() for s in specs]
        assert specs and all(s["debug_handle"] in doc["handles"] for s in specs), folder.name
        diagnostics = json.loads((folder / "spyre_provenance_diagnostics.json").read_text())
        assert diagnostics["opspecs"] == len(specs) and diagnostics["handleless_opspecs"] == 0


def test_coverage_complete_and_as_the_hook_judged_it(zoo_case):
    check.coverage_as_the_hook_judged(zoo_case)  # every call site linked: no upstream exception


def test_every_kernel_name_says_what_it_computes(zoo_case):
    """``sdsc_fused_<ops>_<n>``: never a bare ``sdsc_fused_<n>`` (issue 11, point 5)."""
    for graph in read_log_graphs(zoo_case.log):
        for key in (graph.node_mappings or {}).get("cppCodeToPost", {}):
            name = key.rsplit(":", 1)[0]
            if name.startswith("sdsc_"):
                assert re.fullmatch(r"sdsc_fused_\w*[a-z]\w*_\d+", name), key


def _subgraph_lines(lines: list[str]) -> set[int]:
    """1-based lines of the post-grad panel inside a higher-order op's subgraph class
    (``print_readable`` writes each after the top-level forward)."""
    start = next((i for i, text in enumerate(lines) if re.match(r"^ {4}class \w+\(torch\.nn\.Module\):", text)), None)
    return set() if start is None else set(range(start + 1, len(lines) + 1))


def test_a_name_repeated_in_a_cond_branch_never_lights_the_branch(compile_case):
    """Issue 37, point 1: the top-level ``add`` (and ``mm``) of ``branches`` share their
    names with nodes of ``cond``'s ``false_graph_0``, which tlparse lights instead. On the
    real page no kernel line lights a line inside a branch, the kernel computing the
    top-level ``add`` lights nothing, and the summary, the diagnostics and the log's judge
    count it the same way: not linked, not a violation, with its reason."""
    case = compile_case(f"{MODELS}:branches", "--backend", "reference")
    assert case.returncode == 0, case.stdout + case.stderr[-3000:]
    (graph,) = check.compiled_graphs(case)
    page_path = Path(case.stdout.split("provenance page: ", 1)[1].splitlines()[0])
    page = check.tlparse_page.parse_page(page_path.read_text())
    inside = _subgraph_lines(page.post_grad)
    assert inside, "the page shows no cond branch"
    lines = check.tlparse_page.kernel_lines(page)
    assert [k for k in lines if set(k.post_grad_lines) & inside] == []
    left_out = [k.key for k in lines if not k.post_grad_lines]
    assert len(left_out) == 1 and left_out[0].startswith("sdsc_fused_add_"), lines
    assert graph.node_mappings["cppCodeToPost"][left_out[0]] == []
    verdict = check.judge_logged(graph)
    assert verdict.violations == [] and graph.diagnostics["complete"] is True
    assert left_out[0] not in verdict.linked
    counts = graph.diagnostics["coverage"]
    assert (counts["call_sites"], counts["linked_call_sites"]) == (4, 3)
    assert f"call sites linked on the page: {counts['linked_call_sites']}/{counts['call_sites']}" in case.stdout
    (gap,) = [g for g in graph.diagnostics["without_pre_grad"] if g["kernel"] == left_out[0]]
    assert "shares its name with a node of a higher-order op's subgraph" in gap["why"]
    assert f"hint: {left_out[0]}: mapped to no node" in case.stdout


def test_cond_in_training_on_stock_inductor_counts_one_way(compile_case):
    """Issue 37: ``torch.cond`` in training on stock Inductor. The backward's mapping
    (torch's own) names graph inputs that a branch prints as nodes too; the hook counted
    them unlinked, the log's judge linked (9 against 11 of 13), and ``compile`` ended
    INCONSISTENT, exit 1. Now both read the name as the branch's: one count, exit 0."""
    case = compile_case(f"{MODELS}:branches", "--backend", "inductor", "--train")
    assert case.returncode == 0, case.stdout + case.stderr[-3000:]
    assert "INCONSISTENT" not in case.stdout
    graphs = check.compiled_graphs(case)
    assert len(graphs) == 2
    summary = re.findall(r"call sites linked on the page: (\d+)/(\d+)", case.stdout)
    for graph, (linked, sites) in zip(graphs, summary, strict=True):
        verdict = check.judge_logged(graph)
        assert graph.diagnostics["coverage"] == check.msgspec.to_builtins(verdict.counts)
        assert (int(linked), int(sites)) == (verdict.counts.linked_call_sites, verdict.counts.call_sites)
        assert len(verdict.linked) == verdict.counts.linked_call_sites


def test_flex_attention_score_function_on_stock_inductor(compile_case):
    """Issue 37: ``flex_attention``'s score function is a subgraph the HOP node holds. On
    stock Inductor (the reference backend cannot compile the template), every call site
    has a mapping key, and the link oracle finds no false link."""
    case = compile_case(f"{MODELS}:flex_attention", "--backend", "inductor")
    assert case.returncode == 0, case.stdout + case.stderr[-3000:]
    for graph in check.compiled_graphs(case):
        verdict = check.judge_logged(graph)
        assert verdict.violations == [], verdict.violations
        sites = {s.key for s in check.wrapper_code.call_sites(graph.output_code)}
        assert None not in sites and sites == set(graph.node_mappings["cppCodeToPost"])
    check.true_links(case)
