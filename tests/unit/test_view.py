"""``spyre-provenance view`` without a browser: the page of a folder of graph folders (the
golden training case's), what unusable input does (one line, exit 2, no file written), the
source-lines snapshot, and a torch-spyre trace read by its events' debug handles.

The page in a browser: tests/browser/test_viewer.py."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from helpers.where import golden_graphs  # tests/ is on sys.path
from spyre_provenance.viewer import data, inputs, sources, timing

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "mlp_train"
_DATA = re.compile(r'<script type="application/json" id="data">(.*?)</script>', re.S)


@pytest.fixture
def out(tmp_path: Path) -> Path:
    return golden_graphs("mlp_train", tmp_path / "out")


def _embedded(html: Path) -> dict:
    (text,) = _DATA.findall(html.read_text(encoding="utf-8"))
    return json.loads(text.replace("<\\/", "</"))


def test_the_page_holds_every_graph_once_and_asks_for_nothing(run_cli, out, tmp_path):
    code, printed, err = run_cli("view", out, "-o", tmp_path / "a.html")
    assert code == 0 and err == "" and printed.startswith(f"viewer page: {tmp_path / 'a.html'}")
    doc = _embedded(tmp_path / "a.html")
    assert [g["label"] for g in doc["graphs"]] == ["out 0/0 forward", "out 0/0 backward"]
    mapping = json.loads(
        (out / "graph_01_0-0_backward" / "inductor_provenance_tracking_node_mappings.json").read_text()
    )
    assert [c["key"] for c in doc["graphs"][1]["calls"]] == list(mapping["cppCodeToPost"])
    html = (tmp_path / "a.html").read_text()
    # no address a browser would fetch: no src/href attribute, no URL outside the CSP's own text
    assert not re.search(r"<[^>]*\s(src|href)\s*=", html) and "default-src 'none'" in html
    # the same folder gives the same bytes
    assert run_cli("view", out, "-o", tmp_path / "b.html")[0] == 0
    assert (tmp_path / "a.html").read_bytes() == (tmp_path / "b.html").read_bytes()


@pytest.mark.parametrize(
    "problem", ["empty", "no_such", "truncated_mapping", "truncated_sources", "bad_sources", "bad_trace"]
)
def test_unusable_input_is_one_line_exit_2_and_writes_nothing(problem, run_cli, out, tmp_path):
    target = tmp_path / "page.html"
    args: list = [out]
    graph = out / "graph_00_0-0_forward"
    if problem == "empty":
        args = [tmp_path / "empty"]
        args[0].mkdir()
    elif problem == "no_such":
        args = [tmp_path / "nothing"]
    elif problem == "truncated_mapping":
        path = graph / "inductor_provenance_tracking_node_mappings.json"
        path.write_bytes(path.read_bytes()[:-40])
    elif problem == "truncated_sources":
        (graph / "spyre_source_lines.json").write_text('{"version": 1, "context": 3, "files": {"x.py": {"made"')
    elif problem == "bad_sources":
        (graph / "spyre_source_lines.json").write_text(
            '{"version": 1, "context": 3, "files": {"x.py": {"made": [0], "lines": {}, "error": null}}}'
        )
    elif problem == "bad_trace":
        (tmp_path / "t.json").write_text('{"traceEvents": [{"ph": "X", "name": "sdsc_x"')
        args += ["--trace", tmp_path / "t.json"]
    code, printed, err = run_cli("view", *args, "-o", target)
    assert code == 2 and printed == "" and err.count("\n") == 1 and "Traceback" not in err, err
    assert not target.exists()
    expected = {
        "empty": "no graph folder",
        "no_such": "no such folder",
        "truncated_mapping": "inductor_provenance_tracking_node_mappings.json",
        "truncated_sources": "spyre_source_lines.json: not valid JSON",
        "bad_sources": "$.files.x.py.made",
        "bad_trace": "t.json",
    }[problem]
    assert expected in err, err


def test_a_valid_snapshot_is_read_without_importing_jsonschema(out, tmp_path):
    """The fast engine judges the source lines (``run`` writes a page per process); the
    schema's words are fetched only for a snapshot it refuses (``bad_sources`` above)."""
    import subprocess
    import sys

    model = tmp_path / "model.py"
    model.write_text("def f(x):\n    return x + 1\n")
    (out / "graph_00_0-0_forward" / "spyre_source_lines.json").write_text(
        json.dumps(sources.snapshot({str(model): {2}}))
    )
    code = "import sys; from spyre_provenance.cli import main; rc = main(sys.argv[1:]); print(rc, 'jsonschema' in sys.modules)"
    page = tmp_path / "p.html"
    done = subprocess.run(
        [sys.executable, "-c", code, "view", str(out), "-o", str(page)], capture_output=True, text=True
    )
    assert done.stdout.splitlines()[-1] == "0 False", done.stdout + done.stderr
    assert "    return x + 1" in json.dumps(_embedded(page))


def test_the_snapshot_keeps_made_lines_with_context_and_says_what_it_could_not_read(tmp_path):
    model = tmp_path / "model.py"
    model.write_text("".join(f"line {n}\n" for n in range(1, 21)))
    traces = {"k_0:1": [f'  File "{model}", line 10, in forward\n    line 10\n']}
    opspecs = {
        "kernels": {"k_0:1": [{"debug_handle": "7"}]},
        "handles": {
            "7": {"source": None, "fused_from": ["8"]},
            "8": {"source": {"file": str(tmp_path / "gone.py"), "start_line": 3, "end_line": None}, "fused_from": []},
        },
    }
    made = sources.made_lines(traces, opspecs)
    assert made == {str(model): {10}, str(tmp_path / "gone.py"): {3}}
    doc = sources.snapshot(made)
    entry = doc["files"][str(model)]
    assert entry["made"] == [10] and sorted(map(int, entry["lines"])) == list(range(7, 14))
    assert entry["lines"]["10"] == "line 10" and entry["error"] is None
    assert doc["files"][str(tmp_path / "gone.py")]["error"] == "No such file or directory"
    folder = tmp_path / "graph_00_0-0_inference"
    folder.mkdir()
    (folder / "spyre_source_lines.json").write_text(json.dumps(doc))
    assert inputs.source_lines(folder) == doc  # valid under its schema


def test_a_torch_spyre_trace_is_read_by_its_events_debug_handles(out, tmp_path):
    """torch-spyre's device events carry the kernel's handle ids (args.debug_handles); their
    CPU launch spans are not counted again."""
    opspecs = json.loads((out / "graph_01_0-0_backward" / "spyre_opspec_debug_handles.json").read_text())
    key, specs = next((k, s) for k, s in opspecs["kernels"].items() if len(s) >= 2)  # several OpSpecs
    ids = [s["debug_handle"] for s in specs]
    events = [
        {
            "ph": "X",
            "name": f"spyre_kernel_v1_fused_x_abcdefghijklmnop#{step}",
            "ts": step,
            "dur": 5.0,
            "pid": 0,
            "tid": 0,
            "args": {"debug_handles": ids},
        }
        for step in range(3)
    ]
    events.append({"ph": "X", "name": f"launch_jobplan:{key.split(':')[0]}", "ts": 9, "dur": 50.0, "pid": 0, "tid": 0})
    events.append(
        {
            "ph": "X",
            "name": "spyre_kernel_v1_fused_y_zzzzzzzzzzzzzzzz#0",
            "ts": 9,
            "dur": 1.0,
            "pid": 0,
            "tid": 0,
            "args": {"debug_handles": ["1"]},
        }
    )
    (tmp_path / "t.json").write_text(json.dumps({"traceEvents": events}))
    doc = data.build(out, timing.read(tmp_path / "t.json"))
    timed = {
        (g["label"], c["key"]): (c["time_us"], c["calls"]) for g in doc["graphs"] for c in g["calls"] if "time_us" in c
    }
    assert timed == {("out 0/0 backward", key): (15.0, 3)}
    assert doc["trace"]["matched_events"] == 3 and doc["trace"]["unmatched_events"] == 1


def test_every_rank_and_graph_of_a_multi_rank_run_is_on_the_page(run_cli, tmp_path):
    """compile --ranks N writes rank<r>/graph_<model>_...: one page holds every rank's graphs."""
    run = tmp_path / "run"
    for rank in (0, 1):
        for sub in GOLDEN.glob("graph_*"):
            shutil.copytree(sub, run / f"rank{rank}" / sub.name.replace("graph_", "graph_tp_", 1))
    assert run_cli("view", run, "-o", tmp_path / "p.html")[0] == 0
    labels = [g["label"] for g in _embedded(tmp_path / "p.html")["graphs"]]
    assert labels == [f"tp rank{r} 0/0 {kind}" for r in (0, 1) for kind in ("forward", "backward")]


def test_every_process_of_a_run_is_its_own_entry_on_the_page(run_cli, tmp_path):
    """``run`` writes <program>_rank<r>_local<l>_pid<p>/graph_...: one page holds every
    process's graphs, each told apart by its rank and pid (two processes of one program
    compile the same graphs under the same compile ids)."""
    run = tmp_path / "run"
    processes = ("ddp-train_rank0_local0_pid11", "ddp-train_rank1_local0_pid12", "worker_pid13")
    for process in processes:
        for sub in GOLDEN.glob("graph_*"):
            shutil.copytree(sub, run / process / sub.name.replace("graph_", "graph_ddp-train_", 1))
    assert run_cli("view", run, "-o", tmp_path / "p.html")[0] == 0
    graphs = _embedded(tmp_path / "p.html")["graphs"]
    kinds = ("forward", "backward")
    assert [g["label"] for g in graphs] == [
        f"ddp-train {who} 0/0 {kind}" for who in ("rank0 pid11", "rank1 pid12", "pid13") for kind in kinds
    ]
    assert [(g["rank"], g["pid"]) for g in graphs] == [(r, p) for r, p in ((0, 11), (1, 12), (None, 13)) for _ in kinds]


def test_a_snapshot_the_schema_refuses_is_never_written(tmp_path, monkeypatch):
    """The compile checks the source-lines snapshot by its schema before it writes it, as it
    does every artifact: one it could not check is left out, the others are written."""
    from types import SimpleNamespace

    from spyre_provenance.capture import emit

    model = tmp_path / "model.py"
    model.write_text("\n".join(f"line {i}" for i in range(1, 21)) + "\n")
    traces = {"k_0:1": [f'  File "{model}", line 10, in forward\n    line 10\n']}
    result = SimpleNamespace(node_mappings=None, stack_traces=traces, opspec_handles=None)  # what emit reads
    assert sources.problem(sources.snapshot(sources.made_lines(traces, None))) is None
    assert "spyre_source_lines.json" in emit.artifact_files(result)
    monkeypatch.setattr(sources, "snapshot", lambda made: {"version": 1, "context": -1, "files": {}})
    assert sources.problem(sources.snapshot({})) is not None
    assert "spyre_source_lines.json" not in emit.artifact_files(result)


def _graph(calls: list[dict], specs: list[dict], post: int, pp: list[list[int]]) -> dict:
    return {"pre": [f"q{i}" for i in range(len(pp))], "post": [f"p{i}" for i in range(post)], "pre_to_post": pp,
            "calls": calls, "opspecs": specs, "bundles": [{"opspecs": [i]} for i in range(len(specs))]}  # fmt: skip


def test_a_click_lights_element_by_element_and_marks_the_kernel_holding_them():
    """relation's rule on plain data: one kernel of two OpSpecs, each naming one post-grad
    node from its own line; a third node the mapping puts in the kernel with no OpSpec
    naming it; a second kernel with no OpSpecs at all."""
    from spyre_provenance.viewer.relation import ENTRY, relation

    specs = [
        {"call": 0, "post_nodes": [0], "lines": [10], "bundle": 0},
        {"call": 0, "post_nodes": [1], "lines": [11], "bundle": 1},
    ]
    calls = [
        {"post_nodes": [0, 1, 2], "lines": [10, 11, 12], "opspecs": [0, 1]},
        {"post_nodes": [3], "lines": [13], "opspecs": []},
    ]
    rel = relation(_graph(calls, specs, 4, [[0], [1, 2], [3]]))

    def lit(kind: str, i: int) -> dict[str, list[int]]:
        entry = rel["line"][str(i)] if kind == "line" else rel[kind][i]
        return {k: v for k, v in zip(ENTRY, entry, strict=False) if v}

    # a post-grad node: its pre-grad node, its OpSpec, that OpSpec's line and bundle; the
    # kernel is their container, not lit, and the sibling OpSpec stays dark
    assert lit("post", 0) == {"pre": [0], "spec": [0], "line": [10], "bundle": [0], "box": [0]}
    # a node no OpSpec names: the mapping's kernel-wide link lights the kernel itself
    assert lit("post", 2) == {"pre": [1], "call": [0]}
    # a pre-grad node: its nodes, their OpSpecs (with bundles) and those OpSpecs' lines: the
    # lines that light it (issue 55 point 9: pre-grad linear_1 left its own line 39 dark)
    assert lit("pre", 1) == {"line": [11], "post": [1, 2], "spec": [1], "bundle": [1], "box": [0]}
    # the relation is the same both ways: a line lights a pre-grad node iff the node lights it
    for q in range(len(rel["pre"])):
        for line in (10, 11, 12):
            assert (line in lit("pre", q).get("line", [])) == (q in lit("line", line).get("pre", [])), (q, line)
    # a line: the OpSpec from it, the node it names and that node's pre-grad node
    assert lit("line", 11) == {"pre": [1], "post": [1], "spec": [1], "bundle": [1], "box": [0]}
    # a line only a stack trace names, and a kernel without OpSpecs: kernel-wide
    assert lit("line", 12) == {"call": [0]} and lit("post", 3) == {"pre": [2], "call": [1]}
    # an OpSpec: its line, its node, its bundle; a kernel: all it holds
    assert lit("spec", 1) == {"line": [11], "post": [1], "bundle": [1], "box": [0]}
    assert lit("call", 0) == {"line": [10, 11, 12], "pre": [0, 1], "post": [0, 1, 2], "spec": [0, 1], "bundle": [0, 1]}


def test_compare_embeds_compares_document_and_both_sides_graphs(run_cli, out, tmp_path):
    """``view A --compare B`` on two copies of the golden training compile: the page holds
    ``compare --format json``'s document for the same sides (one rule), every line the same,
    and A's graphs then B's, each tagged with its side; no graph is per-op."""
    other = tmp_path / "other"
    shutil.copytree(out, other)
    code, printed, err = run_cli("compare", out, other, "--format", "json")
    assert code == 0, err  # the same compile twice
    assert run_cli("view", out, "--compare", other, "-o", tmp_path / "c.html")[0] == 0
    doc = _embedded(tmp_path / "c.html")
    assert doc["compare"] == json.loads(printed) and doc["compare"]["same"] is True
    assert doc["compare"]["lines"] and {p["status"] for p in doc["compare"]["lines"]} == {"same"}
    assert [(g["side"], g["label"]) for g in doc["graphs"]] == [
        ("a", "out 0/0 forward"),
        ("a", "out 0/0 backward"),
        ("b", "other 0/0 forward"),
        ("b", "other 0/0 backward"),
    ]
    assert [g["per_op"] for g in doc["graphs"]] == [None] * 4
    # without -o the page goes into A's folder, beside its own page
    assert run_cli("view", out, "--compare", other)[0] == 0 and (out / "compare.view.html").is_file()
    # a side compare cannot read: one line, exit 2, nothing written
    code, printed, err = run_cli("view", out, "--compare", tmp_path / "nowhere", "-o", tmp_path / "d.html")
    assert (code, printed) == (2, "") and "nowhere" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "d.html").exists()
