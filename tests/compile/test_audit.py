"""``spyre-provenance audit`` and ``compile --audit`` (issue 15): the seed's provenance audit,
regenerated from the live objects of a real tracked compile.

One compile does most of the work: the golden case ``mlp_fp16_audit`` (``compile mlp
--backend reference --dtype float16 --audit``), shared with the golden tests. Its counts are
checked against what the same compile wrote elsewhere (the node mappings, the OpSpec
artifact, the bundles, the post-grad graph in the TORCH_TRACE log), never against numbers
written into this file. Two ``audit`` runs check the command itself: once against that
compile's audit (nothing moved, byte-identical but for the time), once against a previous
run that had more coverage (exit 1).
"""

from __future__ import annotations

import copy
import json
import re
import shutil
import warnings

import msgspec
import pytest

from helpers.where import GOLDEN, TESTS  # tests/ is on sys.path
from spyre_provenance import golden
from spyre_provenance.audit import report
from spyre_provenance.base.errors import ProvenanceWarning
from spyre_provenance.capture.audit_probe import AuditProbe
from spyre_provenance.logs.graphs import read_log_graphs
from spyre_provenance.logs.post_grad import parse_post_grad_graph
from spyre_provenance.model.audit_records import FIELDS, STAGE_TITLES
from spyre_provenance.model.folders import kernel_of_bundle_folder
from spyre_provenance.model.names import DIAGNOSTICS, NODE_MAPPINGS, OPSPEC_DEBUG_HANDLES
from spyre_provenance.model.records import GraphDiagnostics, GraphResult
from spyre_provenance.validate import schemas
from spyre_provenance.validate.kinds.audit import TOOLCHAIN_TEXT

HOSTILE_AUDIT = TESTS / "hostile" / "invalid" / "audit-present-over-total" / "provenance_audit.json"


@pytest.fixture(scope="module")
def audited(golden_compile):
    compiled = golden_compile("mlp_fp16_audit")
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr[-3000:]
    return compiled


@pytest.fixture(scope="module")
def doc(audited) -> report.AuditV1:
    return report.read(audited.out / report.JSON_FILE)  # validated on the way in


@pytest.fixture(scope="module")
def wrote(audited) -> dict:
    """What the same compile wrote besides the audit: its graph folder's artifacts and the
    post-grad graph tlparse shows."""
    (folder,) = audited.graph_dirs()
    (logged,) = read_log_graphs(audited.log)
    return {
        "mappings": json.loads((folder / f"{NODE_MAPPINGS}.json").read_text()),
        "opspecs": json.loads((folder / f"{OPSPEC_DEBUG_HANDLES}.json").read_text()),
        "diagnostics": json.loads((folder / f"{DIAGNOSTICS}.json").read_text()),
        "post_grad": parse_post_grad_graph(logged.post_grad_graph),
        # <kernel>/sdsc_<i>.json, each read from its folder inductor-spyre/<uuid8>_<kernel>_<suffix>/
        "bundles": sorted(
            f"{kernel_of_bundle_folder(p.parent.name)}/{p.name}" for p in (audited.out / "sdsc").rglob("sdsc_*.json")
        ),
    }


def _stage(graph, name):
    (stage,) = [s for s in graph.stages if s.name == name]
    return stage


@pytest.fixture(scope="module")
def audit_run(compile_server, tmp_path_factory):
    """``spyre-provenance audit ...`` in the session's compile worker: (exit, stdout, stderr)."""

    def run(*args: str) -> tuple[int, str, str]:
        folder = tmp_path_factory.mktemp("audit")
        stdout, stderr = folder / "stdout", folder / "stderr"
        code = compile_server.run(["audit", *args], stdout, stderr)
        return code, stdout.read_text(errors="replace"), stderr.read_text(errors="replace")

    return run


# --- 1-3: the stages, the drops, the kernels, from one real compile ---------------------------


def test_every_stage_of_the_seed_audit_is_counted(doc, audited) -> None:
    assert f"audit: {audited.out / report.JSON_FILE}, {audited.out / report.MARKDOWN_FILE}" in audited.stdout
    (graph,) = doc.graphs
    assert [s.name for s in graph.stages] == [
        "pre_grad",
        "passes_in",
        "passes_out",
        "post_grad",
        "scheduler",
        "opspecs",
        "bundles",
        "node_mappings",
        "stack_traces",
        "opspec_handles",
    ]
    assert (doc.model, doc.dtype, doc.backend, doc.train) == ("mlp", "float16", "reference", False)
    assert doc.measured.provenance_tracking_level >= 1 and graph.lost == []


def test_the_counts_are_what_the_compile_wrote(doc, wrote) -> None:
    (graph,) = doc.graphs
    post_grad = [n for n in wrote["post_grad"].nodes if n.kind == "call"]
    assert _stage(graph, "post_grad").nodes == [n.name for n in post_grad]
    buffers = [s["buffer"] for specs in wrote["opspecs"]["kernels"].values() for s in specs]
    assert _stage(graph, "scheduler").nodes == buffers == _stage(graph, "opspecs").nodes
    assert len(buffers) == wrote["diagnostics"]["opspecs"]
    assert _stage(graph, "bundles").nodes == wrote["bundles"]
    cpp_to_post = wrote["mappings"]["cppCodeToPost"]
    assert [(k.key, k.nodes) for k in graph.kernels] == list(cpp_to_post.items())
    assert sum(k.linked for k in graph.kernels) == wrote["diagnostics"]["coverage"]["linked_call_sites"]
    assert all(k.mapped and k.linked for k in graph.kernels)
    assert [s.buffer for k in graph.kernels for s in k.opspecs] == buffers


def test_the_addmm_split_keeps_every_field_as_torch_spyre_main_does(doc, wrote) -> None:
    """The seed audit (an older torch-spyre) found the synthesized bias add without
    stack_trace. torch-spyre main decomposes ``linear`` while tracing, so every node of it
    (the bias add too) has its stack trace, module stack and source fn: nothing drops at
    the split, and original_aten says ``linear`` throughout."""
    (graph,) = doc.graphs
    bias_adds = [n.name for n in wrote["post_grad"].nodes if n.op == "aten.add"]
    entering, leaving = _stage(graph, "passes_in"), _stage(graph, "passes_out")
    assert any("addmm" in n for n in entering.nodes) and not any("addmm" in n for n in leaving.nodes)
    assert len(bias_adds) == 2 and set(bias_adds) <= set(leaving.nodes)
    for field in ("stack_trace", "nn_module_stack", "source_fn_stack", "original_aten"):
        assert entering.fields[field].missing == [] and leaving.fields[field].missing == [], field
        assert not [d for d in graph.drops if d.field == field], field
    assert _stage(graph, "post_grad").fields["original_aten"].missing == []
    scheduler = _stage(graph, "scheduler")
    assert scheduler.fields["origins"].present == scheduler.fields["origins"].total == len(scheduler.nodes)
    assert "stack_trace" not in scheduler.fields and "origins" not in leaving.fields  # not applicable


def test_per_kernel_metadata_and_handles(doc) -> None:
    (graph,) = doc.graphs
    for kernel in graph.kernels:
        assert re.fullmatch(
            r"Topologically Sorted Source Nodes: \[.+\], Original ATen: \[.*aten\.linear.*\]", kernel.metadata
        )
        assert kernel.opspecs and all(s.handle for s in kernel.opspecs)
    bundles = _stage(graph, "bundles").fields["debug_handle_"]
    assert bundles.present == bundles.total == len(_stage(graph, "opspecs").nodes)


def test_the_markdown_holds_the_seed_tables(doc, audited) -> None:
    text = (audited.out / report.MARKDOWN_FILE).read_text(encoding="utf-8")
    assert re.search(r"^- Generated: \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$", text, re.M)
    assert f"torch {doc.toolchain.torch} (git {doc.toolchain.torch_git[:12]})" in text
    assert "- Model: `mlp`, dtype float16" in text and "- Backend: reference" in text
    assert report.LEGEND_TEXT in text and "origin_node, from_node vary with the pass schedule" in text
    (graph,) = doc.graphs
    for field in FIELDS:
        row = next(line for line in text.splitlines() if line.startswith(f"| `{field}` |"))
        assert row.count("|") == len(graph.stages) + 2
    assert graph.drops and not [d for d in graph.drops if d.field == "stack_trace"]
    for drop in graph.drops:
        assert f"- {report.drop_text(drop, graph.stages)}" in text
    for kernel in graph.kernels:
        assert f"| `{kernel.key}` | {kernel.metadata} |" in text


def test_a_golden_audit_shows_its_placeholders_whole() -> None:
    # Only a commit id is shortened; the golden file's normalized toolchain reads as written.
    doc = report.read(GOLDEN / "mlp_fp16_audit" / report.JSON_FILE)
    assert doc.toolchain.torch_git == TOOLCHAIN_TEXT
    text = report.render_markdown(doc)
    assert f"torch {TOOLCHAIN_TEXT} (git {TOOLCHAIN_TEXT})" in text


# --- the command, 4: changes since the previous run --------------------------------------------


def test_audit_against_its_own_previous_run(audit_run, audited, tmp_path) -> None:
    """Same model, same toolchain: nothing moved (exit 0), and the JSON is byte-identical
    but for the generated time."""
    previous = audited.out / report.JSON_FILE
    code, out, err = audit_run(
        "mlp", "--backend", "reference", "--dtype", "float16", "--out", str(tmp_path), "--against", str(previous)
    )
    assert code == 0, out + err[-3000:]
    assert f"  changes since {previous}: 0\n" in out and "drop: from_node: empty where first counted" in out
    assert f"written: {tmp_path / report.JSON_FILE}, {tmp_path / report.MARKDOWN_FILE}" in out
    generated = re.compile(rb'"generated": "[^"]*"')
    assert generated.sub(b"", (tmp_path / report.JSON_FILE).read_bytes()) == generated.sub(b"", previous.read_bytes())
    assert "previous run: torch " in (tmp_path / report.MARKDOWN_FILE).read_text(encoding="utf-8")


def test_audit_against_a_run_with_more_coverage_exits_1(audit_run, audited, tmp_path) -> None:
    doc = json.loads((audited.out / report.JSON_FILE).read_text())
    (graph,) = doc["graphs"]
    leaving = next(s for s in graph["stages"] if s["name"] == "passes_out")
    leaving["nodes"] += ["restickify", "restickify_1"]  # an earlier compiler had two more ops
    leaving["fields"]["stack_trace"] = {"present": len(leaving["nodes"]), "total": len(leaving["nodes"]), "missing": []}
    # and set Inductor's traceback on every scheduler node, which this one leaves empty
    scheduler = next(s for s in graph["stages"] if s["name"] == "scheduler")
    missing = scheduler["fields"]["traceback"]["missing"]
    assert missing == scheduler["nodes"]
    scheduler["fields"]["traceback"] = {"present": len(missing), "total": len(missing), "missing": []}
    first = graph["kernels"][0]
    old_key = first["key"].replace("sdsc_", "sdsc_old_", 1)
    first["key"] = old_key
    previous = tmp_path / "previous" / report.JSON_FILE
    previous.parent.mkdir()
    previous.write_text(json.dumps(doc))
    out_dir = tmp_path / "out"
    code, out, err = audit_run(
        "mlp", "--backend", "reference", "--dtype", "float16", "--out", str(out_dir), "--against", str(previous)
    )
    assert code == 1, out + err[-3000:]
    head = "graph 0/0 inference"
    title = STAGE_TITLES["passes_out"]
    expected = [
        f"{head}: stage {title}: 9 -> 7 nodes (an op count depends on the schedule and the compiler version: reported, not a regression)",
        f"{head}: traceback at {STAGE_TITLES['scheduler']}: coverage fell {len(missing)}/{len(missing)} ->"
        f" 0/{len(missing)}, lacking on {', '.join(missing)}",
        f"{head}: kernel renamed: {old_key} -> {report.read(audited.out / report.JSON_FILE).graphs[0].kernels[0].key}",
    ]
    for line in expected:
        assert f"    {line}\n" in out, out
    assert f"  changes since {previous}: {len(expected)}, 1 of them LOST coverage, a mapping or a link\n" in out
    text = (out_dir / report.MARKDOWN_FILE).read_text(encoding="utf-8")
    assert all(f"- {line}" in text for line in expected) and "Verdict: coverage fell" in text


# --- the command on other kinds of compile: training, stock Inductor --------------------------


def _audit_of(audit_run, tmp_path, *args: str) -> tuple[report.AuditV1, str]:
    code, out, err = audit_run("mlp", *args, "--out", str(tmp_path))
    assert code == 0, out + err[-3000:]
    return report.read(tmp_path / report.JSON_FILE), out


def test_a_training_audit_covers_the_backward_graph(audit_run, tmp_path) -> None:
    """``--train``: the forward and the backward graph, each with its own stages and
    kernels; the backward's kernels are mapped and linked like the forward's."""
    doc, out = _audit_of(audit_run, tmp_path, "--backend", "reference", "--train")
    assert doc.train is True
    assert [g.graph for g in doc.graphs] == ["forward", "backward"]
    forward, backward = doc.graphs
    # both come from the one graph Dynamo captured: the backward counts the same pre-grad nodes
    assert _stage(backward, "pre_grad").nodes == _stage(forward, "pre_grad").nodes
    assert len(_stage(backward, "post_grad").nodes) > len(_stage(forward, "post_grad").nodes)
    for graph in doc.graphs:
        assert graph.kernels and all(k.mapped and k.linked for k in graph.kernels), graph.kernels
        assert all(s.handle for k in graph.kernels for s in k.opspecs or ())
        scheduler = _stage(graph, "scheduler")
        assert scheduler.fields["origins"].present == scheduler.fields["origins"].total > 0
        assert f"  graph {graph.compile_id} {graph.graph}: " in out
    assert graph.lost == []


def test_a_stock_inductor_audit_has_no_opspec_stages(audit_run, tmp_path) -> None:
    """``--backend inductor``: no OpSpecs, no bundles, nothing to emit for them; the stages
    Inductor has are counted and every kernel is mapped and linked."""
    doc, _ = _audit_of(audit_run, tmp_path, "--backend", "inductor")
    (graph,) = doc.graphs
    names = [s.name for s in graph.stages]
    assert not {"opspecs", "bundles", "opspec_handles", "passes_in", "passes_out"} & set(names), names
    assert {"pre_grad", "post_grad", "scheduler", "node_mappings", "stack_traces"} <= set(names)
    assert graph.kernels and all(k.opspecs is None and k.mapped and k.linked for k in graph.kernels)
    text = (tmp_path / report.MARKDOWN_FILE).read_text(encoding="utf-8")
    for k in graph.kernels:
        assert f"| `{k.key}` | {k.metadata} | ➖ | yes | yes |" in text


@pytest.mark.parametrize("against", ["missing.json", str(HOSTILE_AUDIT)], ids=["missing", "invalid"])
def test_unusable_against_is_refused_before_compiling(run_cli, tmp_path, against) -> None:
    code, out, err = run_cli("audit", "mlp", "--out", str(tmp_path / "out"), "--against", against)
    assert (code, out) == (2, "") and err.count("\n") == 1
    assert err.startswith(f"spyre-provenance audit: error: {against}: ")
    assert not (tmp_path / "out").exists()


def _golden_audit() -> report.AuditV1:
    """The golden MLP audit (one kernel, as on torch-spyre main) and a second kernel, made
    from the first by hand, to remove, add and unlink."""
    doc = report.read(GOLDEN / "mlp_fp16_audit" / report.JSON_FILE)
    kernels = doc.graphs[0].kernels
    assert len(kernels) == 1
    kernels.append(msgspec.structs.replace(copy.deepcopy(kernels[0]), key="sdsc_fused_exp_1:2", nodes=["exp"]))
    return doc


def test_compare_lost_mapping_added_and_removed_kernels_and_toolchains() -> None:
    old = _golden_audit()
    new = copy.deepcopy(old)
    kernels = new.graphs[0].kernels
    kernels[0].mapped = kernels[0].linked = False
    kernels[1].key, kernels[1].nodes = "sdsc_brand_new_9:9", ["other"]
    changes = report.changes_between(old, new)
    head = "graph 0/0 inference"
    assert changes.failures == [
        f"{head}: kernel {kernels[0].key} lost its mapping (was [{', '.join(old.graphs[0].kernels[0].nodes)}])"
    ]
    assert (
        f"{head}: kernel removed: {old.graphs[0].kernels[1].key} (was [{', '.join(old.graphs[0].kernels[1].nodes)}])"
        in changes.lines
    )
    assert f"{head}: kernel added: sdsc_brand_new_9:9 -> [other]" in changes.lines
    assert changes.toolchains[0].startswith("previous run: torch ") and changes.fell
    # coverage that rose is a change, never a failure
    rose = report.changes_between(new, old)
    assert rose.failures == [] and f"{head}: kernel {kernels[0].key} is mapped now" in rose.lines
    assert report.changes_between(old, old).lines == []
    # mapped still, but no longer linked on the page: a loss as well
    unlinked = copy.deepcopy(old)
    unlinked.graphs[0].kernels[1].linked = False
    key = unlinked.graphs[0].kernels[1].key
    assert report.changes_between(old, unlinked).failures == [
        f"{head}: kernel {key} is no longer linked on the provenance page"
    ]
    assert report.changes_between(unlinked, old).failures == []


def test_drops_are_the_first_fall_only() -> None:
    count = report.count
    stages = [
        report.Stage("pre_grad", ["a", "b"], {"stack_trace": count(["a", "b"], [True, True])}),
        report.Stage(
            "post_grad",
            ["a", "b", "c"],
            {
                "stack_trace": count(["a", "b", "c"], [True, True, False]),
                "from_node": count(["a", "b", "c"], [False] * 3),
            },
        ),
        report.Stage("scheduler", ["x"], {"origins": count(["x"], [True])}),
        report.Stage("stack_traces", ["k:1", "k:2"], {"stack_trace": count(["k:1", "k:2"], [True, False])}),
    ]
    drops = report.find_drops(stages)
    assert drops == [
        report.Drop("stack_trace", "post_grad", "pre_grad", ["c"]),
        report.Drop("from_node", "post_grad", None, ["a", "b", "c"]),
    ]


def test_a_drop_line_names_twelve_nodes_and_counts_the_rest() -> None:
    """A real model's backward lacks nn_module_stack on hundreds of nodes: the line stays
    readable, the JSON document keeps every name."""
    names = [f"n{i}" for i in range(21)]
    stages = [report.Stage("post_grad", names, {"from_node": report.count(names, [True] + [False] * 20)})]
    (drop,) = report.find_drops(stages)
    assert drop.nodes == names[1:]
    names = names[1:]
    text = report.drop_text(drop, stages)
    assert text.endswith(f": {', '.join(names[:12])} and 8 more lack it"), text
    short = report.drop_text(report.Drop("from_node", "post_grad", None, names[:12]), stages)
    assert short.endswith(f": {', '.join(names[:12])} lack it")


# --- golden: a dropped field is a readable line -------------------------------------------------


@pytest.fixture
def golden_check(audited, run_cli, monkeypatch):
    """``golden check mlp_fp16_audit --golden-dir DIR``, the compile replaced by the session's."""
    from spyre_provenance.cli import golden_command

    monkeypatch.setattr(
        golden_command, "compile_case", lambda case, out: golden_command.CaseCompile(audited.out, 0, "")
    )
    return lambda folder: run_cli("golden", "check", "mlp_fp16_audit", "--golden-dir", str(folder))


def test_golden_check_says_which_field_a_compiler_change_dropped(golden_check, tmp_path) -> None:
    assert golden_check(GOLDEN) == (0, "golden mlp_fp16_audit: ok\n", "")
    shutil.copytree(GOLDEN / "mlp_fp16_audit", tmp_path / "mlp_fp16_audit")
    path = tmp_path / "mlp_fp16_audit" / report.JSON_FILE
    doc = json.loads(path.read_text())
    scheduler = next(s for s in doc["graphs"][0]["stages"] if s["name"] == "scheduler")
    kept = scheduler["fields"]["traceback"]  # the golden had it on every node; this compile has it on none
    kept.update(present=kept["total"], missing=[])
    path.write_text(json.dumps(doc, indent=2))
    code, out, err = golden_check(tmp_path)
    title = STAGE_TITLES["scheduler"]
    n = kept["total"]
    assert (code, err) == (1, "")
    assert f"  audit: graph 0/0 inference: traceback at {title}: coverage fell {n}/{n} -> 0/{n}, lacking on " in out


def test_golden_audit_validates_and_is_normalized() -> None:
    data = (GOLDEN / "mlp_fp16_audit" / report.JSON_FILE).read_bytes()
    for full in (False, True):
        assert schemas.validate_bytes(data, full=full).ok
    doc = json.loads(data)
    assert doc["generated"] == "<generated>" and set(doc["toolchain"].values()) == {"<in manifest.json>"}
    assert golden.read_case(GOLDEN / "mlp_fp16_audit").manifest["audit"] is True


# --- the hook: audit off costs nothing; a failing probe never breaks a compile -------------------


def test_audit_off_installs_nothing_and_on_restores_everything() -> None:
    from torch._inductor import config

    from spyre_provenance.capture import tracking

    before = config.pre_grad_custom_pass
    session = tracking.enable("reference")
    try:
        assert session.probe is None and config.pre_grad_custom_pass is before
        assert session.backend.pass_observer is None
    finally:
        tracking.disable()
    session = tracking.enable("reference", audit=True)
    try:
        assert session.probe is not None and session.backend.pass_observer == session.probe.pass_boundary
        assert [type(p).__name__ for p in config.pre_grad_custom_pass] == ["PreGradObserver"]
    finally:
        tracking.disable()
    assert config.pre_grad_custom_pass is before and session.backend.pass_observer is None


def test_a_failing_probe_warns_once_and_the_graph_says_what_it_lost() -> None:
    probe = AuditProbe()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        probe.pre_grad(object(), "0/0")  # no .nodes: the stage cannot be read
        probe.call_site(1, [object()], False)  # no IR node: nothing to count, no failure
        probe.pass_boundary(None, "in")
    assert [w.category for w in caught] == [ProvenanceWarning]
    result = GraphResult(0, "0/0", "inference", [], None, None, None, None, GraphDiagnostics())
    probe.finish(1, object(), result, None, [])
    assert [line.split(":")[0] for line in result.audit.lost] == ["pre-grad FX graph", "pre-scheduling pass (in)"]
    assert [s.name for s in result.audit.stages] == ["scheduler", "node_mappings"]
    assert msgspec.json.decode(msgspec.json.encode(result.audit), type=report.GraphAudit) == result.audit
