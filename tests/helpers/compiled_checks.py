"""What must hold for any compile a user runs, checked on its output as a user sees it:
the summary, the artifacts (``validate``), the tlparse page of every graph, the log's
coverage. Shared by the zoo tests (tests/models/test_zoo.py, tests/models/test_real_models.py); each
function fails with the first thing that does not hold.
"""

from __future__ import annotations

import re
from pathlib import Path

import msgspec

from helpers import link_oracle, tlparse_page
from spyre_provenance.logs import wrapper_code
from spyre_provenance.logs.graphs import LoggedGraph, read_log_graphs
from spyre_provenance.validate import paths as path_validation
from spyre_provenance.validate.coverage import judge_logged

# torch's own deprecation notices (torch 2.14.1 prints one from torch/jit on a training
# compile, once per process): torch's, not this tool's
TORCH_DEPRECATION = re.compile(r"/site-packages/torch/\S+\.py:\d+: (FutureWarning|DeprecationWarning): ")


def true_links(case) -> link_oracle.Verdict:
    """Every pre-grad node any kernel of the compile is linked to has a source line among the
    kernel's own post-grad nodes' (``link_oracle``, which reads only the logged graphs): zero
    false links. Returns the verdict, for counts."""
    verdict = link_oracle.judge(compiled_graphs(case), link_oracle.pre_grad_texts(case.log))
    assert verdict.false == [], verdict.false[:10]
    assert verdict.true > 0
    return verdict


def compiled_graphs(case) -> list[LoggedGraph]:
    """The log's graphs that Inductor finished (a graph without code has nothing to judge)."""
    return [g for g in read_log_graphs(case.log) if g.output_code is not None]


def clean_exit(case) -> None:
    """Exit 0, no warning of ours, output matching eager, nothing violated, lost or stale."""
    assert case.returncode == 0, case.stdout + case.stderr[-3000:]
    assert "Traceback" not in case.stderr
    ours = [line for line in case.stderr.splitlines() if "Warning" in line and not TORCH_DEPRECATION.search(line)]
    assert ours == [], case.stderr[-2000:]
    assert "output vs eager: match" in case.stdout
    for word in ("VIOLATION", "PARTIAL", "INCONSISTENT", "STALE"):
        assert word not in case.stdout, case.stdout


def artifacts_valid(case) -> None:
    reports = path_validation.validate_paths([case.out])
    assert reports and all(r.ok for r in reports), [f"{r.location}: {r.problems[:2]}" for r in reports if not r.ok]


def _graph_input_copy(graph: LoggedGraph, key: str) -> bool:
    """A kernel torch's own mapping lists with graph inputs only (a weight's layout copy):
    the post-grad graph prints inputs in its ``def`` line alone, so no page can light one.
    Stock Inductor's gap: its summary names it in a hint."""
    from spyre_provenance.logs.post_grad import parse_post_grad_graph

    nodes = graph.node_mappings["cppCodeToPost"][key]
    parsed = parse_post_grad_graph(graph.post_grad_graph)
    inputs = all((node := parsed.get(n)) is not None and node.kind == "placeholder" for n in nodes)
    return inputs and any(hint.startswith(f"{key}: maps only to") for hint in graph.diagnostics["hints"])


def _left_out(graph: LoggedGraph, key: str) -> bool:
    """A kernel the hook mapped to no node because every node of its own shares its name
    with a node a higher-order op's subgraph prints (issue 37: the page would light that
    one), and the summary's hint says so."""
    return graph.node_mappings["cppCodeToPost"][key] == [] and any(
        hint.startswith(f"{key}: mapped to no node: its post-grad nodes' names repeat")
        for hint in graph.diagnostics["hints"]
    )


def pages_link_every_kernel(case, *, upstream: bool = False) -> None:
    """On the tlparse page of every graph, each handle comment's call line is highlighted
    and links post-grad nodes of its kernel, and no call goes unannounced. ``upstream``
    (stock Inductor's own mapping): a kernel that mapping lists with graph inputs only is
    the one exception, and only when the summary's hint names it."""
    logged = compiled_graphs(case)
    pages = [
        Path(line.split("provenance page: ", 1)[1]) for line in case.stdout.splitlines() if "provenance page: " in line
    ]
    assert len(pages) == len(logged) >= 1, case.stdout
    for path, graph in zip(pages, logged, strict=True):
        page = tlparse_page.parse_page(path.read_text())
        assert "\n".join(page.code).strip() == graph.output_code.strip(), f"{path}: another graph's code"
        announced = wrapper_code.handle_comments(graph.output_code)
        lines = tlparse_page.kernel_lines(page)
        assert [k.key for k in lines] == announced, path
        # the mapping lists them in handle order; the code writes a cond branch's calls
        # (handles after the predicate's) in a function before ``call``
        by_handle = sorted(announced, key=lambda key: int(key.rsplit(":", 1)[1]))
        assert by_handle == list(graph.node_mappings["cppCodeToPost"]), path
        assert len(wrapper_code.call_sites(graph.output_code)) == len(announced), "a call no comment announces"
        for kernel in lines:
            if not kernel.post_grad_lines and upstream and _graph_input_copy(graph, kernel.key):
                continue
            if not kernel.post_grad_lines and _left_out(graph, kernel.key):
                continue
            assert kernel.post_grad_lines, f"{path}: {kernel.key} (code line {kernel.line}) links nothing"
            assert set(kernel.post_grad_nodes) <= set(graph.node_mappings["cppCodeToPost"][kernel.key])


def coverage_as_the_hook_judged(case, *, upstream: bool = False) -> None:
    """The log's coverage: no violation, complete, and the same counts the hook's
    diagnostics give (the hook judged the FX graph, the log is judged from its text).
    Every call site is linked but, on stock Inductor (``upstream``), the graph-input
    copies its own mapping leaves unlinkable, each named in a hint."""
    for graph in compiled_graphs(case):
        verdict = judge_logged(graph)
        assert verdict.violations == [], verdict.violations
        assert graph.diagnostics is not None and graph.diagnostics["complete"] is True
        assert graph.diagnostics["coverage"] == msgspec.to_builtins(verdict.counts)
        assert verdict.counts.call_sites == verdict.kernels
        unlinked = [key for key in graph.node_mappings["cppCodeToPost"] if key not in verdict.linked]
        assert len(unlinked) == verdict.counts.call_sites - verdict.counts.linked_call_sites
        assert all(upstream and _graph_input_copy(graph, key) or _left_out(graph, key) for key in unlinked), unlinked


#: Why a kernel of a complete compile may reach no pre-grad node (issue 37): where the only
#: evidence was a reader, or the page would light another node of the same name, a missing
#: link with its reason beats a link that might be false.
NO_EVIDENCE = (
    "not evidence of what it computes",
    "shares its name with another node",
    "share their names",
    "with a node of a higher-order op's subgraph: the page would light that node",  # post-grad names
    "a gradient accumulation: it differentiates no forward op of its own",
    # the gradient of a forward op that is itself left unlinked for one of the reasons above
    "the forward op of its autograd sequence number",
)


def sources_and_pre_grad(case, *, complete: bool) -> None:
    """Every kernel has a source line and a pre-grad node the oracle finds true
    (``true_links``), or is named in the diagnostics with a reason: on a complete compile
    (``complete``: the hook's own mapping), one of NO_EVIDENCE; on stock Inductor's own
    mapping, any. The summary's counts are the diagnostics' counts."""
    counted = []
    for graph in compiled_graphs(case):
        diagnostics, coverage = graph.diagnostics, graph.diagnostics["coverage"]
        no_source = [k for k, traces in graph.stack_traces.items() if not any(t.strip() for t in traces)]
        post_to_pre = graph.node_mappings.get("postToPre", {})
        no_pre_grad = [
            k for k, nodes in graph.node_mappings["cppCodeToPost"].items() if not any(post_to_pre.get(n) for n in nodes)
        ]
        assert [gap["kernel"] for gap in diagnostics["without_source"]] == no_source
        assert [gap["kernel"] for gap in diagnostics["without_pre_grad"]] == no_pre_grad
        assert all(gap["why"] for gap in diagnostics["without_source"] + diagnostics["without_pre_grad"])
        assert coverage["kernels_with_source"] == coverage["kernels"] - len(no_source)
        assert coverage["kernels_with_pre_grad"] == coverage["kernels"] - len(no_pre_grad)
        if complete:
            assert no_source == [], (graph.compile_id, no_source)
            unexplained = [g for g in diagnostics["without_pre_grad"] if not any(r in g["why"] for r in NO_EVIDENCE)]
            assert unexplained == [], (graph.compile_id, unexplained)
        counted.append((coverage["kernels_with_source"], coverage["kernels_with_pre_grad"], coverage["kernels"]))
    sourced = [
        line.strip() for line in case.stdout.splitlines() if line.strip().startswith("kernels with a source line:")
    ]
    reaching = [
        line.strip()
        for line in case.stdout.splitlines()
        if line.strip().startswith("kernels reaching a pre-grad node:")
    ]
    assert sourced == [f"kernels with a source line: {s}/{n}" for s, _, n in counted]
    assert reaching == [f"kernels reaching a pre-grad node: {p}/{n}" for _, p, n in counted]
