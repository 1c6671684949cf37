"""``spyre-provenance open``: tlparse pages per compile folder and graph, every kernel linked.

The matrix (issue 6's "done when"): mlp inference, mlp training, the residual model and the
graph-break model, on the reference backend and on stock Inductor. Each compile runs once
per session (``compile_case``, shared with the other test modules); ``open`` itself costs
well under a second. The unit tests below use a small hand-written log.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from helpers import tlparse_page
from spyre_provenance.logs import tlparse_render, tracelog, wrapper_code
from spyre_provenance.logs.graphs import read_log_graphs
from spyre_provenance.model.names import DIAGNOSTICS, NODE_MAPPINGS

CASES = [
    ("mlp",),
    ("mlp", "--backend", "inductor"),
    ("mlp", "--train"),
    ("mlp", "--train", "--backend", "inductor"),
    ("residual",),
    ("residual", "--backend", "inductor"),
    ("graph_break",),
    ("graph_break", "--backend", "inductor"),
]

needs_tlparse = pytest.mark.skipif(tlparse_render.tlparse_binary() is None, reason="tlparse is not installed")


@pytest.mark.compile
@needs_tlparse
@pytest.mark.parametrize("case", CASES, ids=["-".join(c).replace("--", "") for c in CASES])
def test_every_page_links_every_announced_kernel(case, open_case):
    opened = open_case(*case)
    assert opened.case.returncode == 0, opened.case.stdout + opened.case.stderr[-3000:]
    assert opened.returncode == 0, opened.stderr
    logged = read_log_graphs(opened.case.log)
    # every page tlparse wrote is listed: a compile that compiled no graph (the graph-break
    # model's first attempt, restarted as [0/0_1]) as what it is
    compiled = [(label, path) for label, path in opened.pages if not label.endswith(" no compiled graph")]
    uncompiled = {label.split(" ", 1)[0] for label, _ in opened.pages} - {g.compile_id for g in logged}
    assert len(opened.pages) - len(compiled) == len(uncompiled), opened.stdout
    # one page per graph, in log order, each showing its own graph's code
    assert len(compiled) == len(logged) >= 1, opened.stdout
    for (label, path), graph in zip(compiled, logged, strict=True):
        page = tlparse_page.parse_page(path.read_text())
        assert "\n".join(page.code).strip() == graph.output_code.strip(), f"{label}: another graph's code"
        announced = wrapper_code.handle_comments(graph.output_code)
        lines = tlparse_page.kernel_lines(page)
        assert announced and [k.key for k in lines] == announced, label
        assert announced == list(graph.node_mappings["cppCodeToPost"]), label
        for kernel in lines:
            assert kernel.post_grad_lines, f"{label}: {kernel.key} (code line {kernel.line}) links nothing"
            assert set(kernel.post_grad_nodes) <= set(graph.node_mappings["cppCodeToPost"][kernel.key])
        assert any(line.strip() for line in page.pre_grad), f"{label}: empty pre-grad panel"
        if "backward" not in label:  # the backward graph's limits: tests/compile/test_training.py
            assert page.links.get("preToPost"), f"{label}: the pre-grad panel links nothing"


# --- the command ----------------------------------------------------------------------------


@pytest.mark.compile
@needs_tlparse
def test_open_prints_a_page_per_graph_and_opens_the_first(compile_case, run_cli, monkeypatch, tmp_path):
    case = compile_case("mlp")
    opened: list[str] = []
    monkeypatch.setattr("webbrowser.open", lambda url, *a, **k: opened.append(url) or True)
    code, out, err = run_cli("open", case.out, "--out", tmp_path / "pages")
    assert code == 0, err
    line, viewer = out.splitlines()
    label, path = line.split("  ", 1)
    assert label == "[0/0] inference" and Path(path.strip()).is_file()
    # beside tlparse's page, the viewer's, of the same --out folder
    assert viewer == f"{'viewer'.ljust(len(label))}  {case.out / 'view.html'}"
    assert (case.out / "view.html").is_file()
    assert opened == [Path(path.strip()).resolve().as_uri()]
    # the same log, named directly or as its trace folder; --no-browser opens nothing
    opened.clear()
    for target in (case.log, case.out / "trace"):
        code, again, err = run_cli("open", target, "--out", tmp_path / "pages", "--no-browser")
        assert code == 0 and again == out, err
    assert opened == []


def test_missing_tlparse_is_one_line_naming_the_install_command(run_cli, monkeypatch, data_dir):
    monkeypatch.setattr(tlparse_render, "tlparse_binary", lambda: None)
    code, out, err = run_cli("open", data_dir / "logs" / "seed_mlp.log", "--no-browser")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "pip install 'spyre-provenance[tlparse]'" in err


@needs_tlparse
@pytest.mark.parametrize(
    "problem",
    ["missing", "empty_folder", "out_is_input", "out_is_a_stranger"],
)
def test_unusable_input_is_one_line_and_exit_2(problem, run_cli, tmp_path, data_dir):
    log = tmp_path / "run" / "trace" / "x.log"
    log.parent.mkdir(parents=True)
    log.write_bytes((data_dir / "logs" / "seed_mlp.log").read_bytes())
    args = {
        "missing": [tmp_path / "nothing"],
        "empty_folder": [tmp_path / "run" / "trace" / "sub"],
        "out_is_input": [tmp_path / "run", "--out", tmp_path / "run"],
        "out_is_a_stranger": [tmp_path / "run", "--out", tmp_path / "precious"],
    }[problem]
    (tmp_path / "run" / "trace" / "sub").mkdir()
    (tmp_path / "precious").mkdir()
    (tmp_path / "precious" / "notes.txt").write_text("keep me")
    code, out, err = run_cli("open", *args, "--no-browser")
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert "Traceback" not in err
    assert (tmp_path / "precious" / "notes.txt").read_text() == "keep me"
    assert log.exists()


@needs_tlparse
def test_default_out_is_beside_the_compile(run_cli, tmp_path, training_log):
    log = tmp_path / "run" / "trace" / "x.log"
    log.parent.mkdir(parents=True)
    log.write_bytes(training_log.read_bytes())
    code, out, err = run_cli("open", tmp_path / "run", "--no-browser")
    assert code == 0, err
    paths = [Path(line.split("  ", 1)[1].strip()) for line in out.splitlines()]
    assert len(paths) == 3 and all(p.is_relative_to(tmp_path / "run" / "tlparse") for p in paths)
    # a second run replaces its own earlier output
    assert run_cli("open", log, "--no-browser")[:2] == (0, out)


@needs_tlparse
def test_a_log_without_compiled_code_is_found_wanting(run_cli, data_dir, tmp_path):
    """The seed log holds a mapping but no output code: nothing a page could link. The page
    tlparse wrote of it is listed as what it is."""
    code, out, err = run_cli("open", data_dir / "logs" / "seed_mlp.log", "--out", tmp_path / "o", "--no-browser")
    assert code == 1 and err.count("\n") == 1 and "no compiled graph" in err
    assert out.startswith("[0/0] no compiled graph  ") and out.count("\n") == 1


# --- splitting a log per graph, on a hand-written log ------------------------------------------


def _record(name: str, payload: str | None, cid: tuple[int, int, int] | None = (0, 0, 0)) -> str:
    envelope: dict = {"artifact": {"name": name, "encoding": "string"}} if payload is not None else {name: {}}
    if cid is not None:
        envelope.update(frame_id=cid[0], frame_compile_id=cid[1], attempt=cid[2])
    lines = [] if payload is None else payload.split("\n")
    if payload is not None:
        envelope["has_payload"] = hashlib.md5(payload.encode()).hexdigest()
    head = f"V0101 00:00:00.000000 1 torch/x.py:1] {json.dumps(envelope)}\n"
    return head + "".join(f"\t{line}\n" for line in lines)


def _graph(kind: str, tag: str) -> list[str]:
    mapping = {
        "preToPost": {},
        "postToPre": {},
        "cppCodeToPost": {f"k_{tag}:1": [f"n_{tag}"]},
        "postToCppCode": {f"n_{tag}": [f"k_{tag}:1"]},
        "version": 2.0,
    }
    return [
        _record("inductor_post_grad_graph", f"class G(torch.nn.Module):\n    n_{tag} = torch.ops.aten.relu.default(x)"),
        _record(
            "inductor_output_code",
            f"# AOT ID: ['0_{kind}']\ndef call(args):\n    # [Provenance debug handles] k_{tag}:1\n    k_{tag}(buf)",
        ),
        _record(NODE_MAPPINGS, json.dumps(mapping)),
    ]


@pytest.fixture
def training_log(tmp_path) -> Path:
    log = tmp_path / "train.log"
    log.write_text(
        _record("torch_version", "2.13.0", cid=None)
        + "\n"  # a blank line: kept, as tlparse skips it
        + _record("before_pre_grad_graph", "class P(torch.nn.Module):\n    x = l_x_")
        + "".join(_graph("forward", "fwd"))
        + _record("compilation_metrics", None)
        + "".join(_graph("backward", "bwd"))
        + _record("bwd_compilation_metrics", None)
        + _record("before_pre_grad_graph", "class Q(torch.nn.Module):\n    y = l_y_", cid=(1, 0, 0))
        + "".join(_graph("inference", "other")).replace('"frame_id": 0', '"frame_id": 1')
    )
    return log


def test_records_round_trip_byte_for_byte(training_log):
    records = tlparse_render.read_records(training_log)
    assert b"".join(r.data for r in records) == training_log.read_bytes()
    assert [r.compile_id for r in records][:2] == [None, "[0/0]"]


def test_graphs_of_a_compile_id_follow_each_other(training_log):
    graphs = tlparse_render.graphs_of(tlparse_render.read_records(training_log))
    assert [(g.compile_id, g.position, g.kind, g.has_mapping) for g in graphs] == [
        ("[0/0]", 0, "forward", True),
        ("[0/0]", 1, "backward", True),
        ("[1/0]", 0, "inference", True),
    ]


@pytest.mark.parametrize(
    "index, keeps, drops",
    [
        (0, ["k_fwd", "class P", "2.13.0"], ["k_bwd", "bwd_compilation_metrics", "k_other", "class Q"]),
        (1, ["k_bwd", "class P", "2.13.0", "compilation_metrics"], ["k_fwd", "n_fwd", "k_other"]),
        (2, ["k_other", "class Q", "2.13.0"], ["k_fwd", "k_bwd", "class P"]),
    ],
)
def test_graph_log_keeps_what_its_page_needs(training_log, tmp_path, index, keeps, drops):
    records = tlparse_render.read_records(training_log)
    graphs = tlparse_render.graphs_of(records)
    text = tlparse_render.graph_log(records, graphs, graphs[index]).decode()
    assert all(k in text for k in keeps) and not any(d in text for d in drops)
    split = tmp_path / "split.log"
    split.write_text(text)
    damage = [
        item
        for item in tracelog.read_trace(split, names=None)
        if not isinstance(item, tracelog.TraceEntry) or item.problems
    ]
    assert damage == []  # envelopes and payloads intact: every MD5 still matches


@needs_tlparse
def test_render_pages_gives_forward_and_backward_their_own_page(training_log, tmp_path):
    pages = tlparse_render.render_pages(tlparse_render.tlparse_binary(), training_log, tmp_path / "out")
    assert [p.label for p in pages] == ["[0/0] forward", "[0/0] backward", "[1/0] inference"]
    for page, tag in zip(pages, ["fwd", "bwd", "other"], strict=True):
        parsed = tlparse_page.parse_page(page.page.read_text())
        (kernel,) = tlparse_page.kernel_lines(parsed)
        assert kernel.key == f"k_{tag}:1" and kernel.post_grad_nodes == [f"n_{tag}"]
    # a compile folder with one graph keeps tlparse's own page of the whole log, and so does
    # the last graph of a folder when it logs again every kind the earlier ones did: that
    # page is byte for byte what tlparse makes of the graph's own log
    assert [p.page.parent for p in pages] == [tmp_path / "out" / "graphs" / "-_0_0_0_forward", *[tmp_path / "out"] * 2]
    records = tlparse_render.read_records(training_log)
    graphs = tlparse_render.graphs_of(records)
    own_log = tmp_path / "backward.log"
    own_log.write_bytes(tlparse_render.graph_log(records, graphs, graphs[1]))
    tlparse_render.run_tlparse_raw(tlparse_render.tlparse_binary(), own_log, tmp_path / "own")
    assert pages[1].page.read_bytes() == (tmp_path / "own" / pages[1].page.name).read_bytes()


@needs_tlparse
def test_a_last_graph_missing_a_kind_gets_its_own_log(training_log, tmp_path):
    """A backward that logged no mapping: the whole log's page would read the forward's, so
    the backward gets its own log and a page whose kernel is linked to nothing."""
    text = training_log.read_text()
    backward_mapping = _graph("backward", "bwd")[2]
    training_log.write_text(text.replace(backward_mapping, ""))
    pages = tlparse_render.render_pages(tlparse_render.tlparse_binary(), training_log, tmp_path / "out")
    assert [p.label for p in pages] == ["[0/0] forward", "[0/0] backward", "[1/0] inference"]
    assert pages[1].page.parent == tmp_path / "out" / "graphs" / "-_0_0_0_backward"
    (kernel,) = tlparse_page.kernel_lines(tlparse_page.parse_page(pages[1].page.read_text()))
    assert (kernel.key, kernel.post_grad_nodes) == ("k_bwd:1", [])
    # the whole log's page read the forward's mapping: not the backward's page
    assert pages[1].page.read_bytes() != (tmp_path / "out" / pages[1].page.name).read_bytes()


@needs_tlparse
def test_pages_follow_the_graphs_not_their_compile_ids(tmp_path):
    """A graph break, trained: Dynamo restarts the first frame ([0/0] compiles nothing,
    [0/0_1] does), and the first frame's backward is compiled when the backward runs, after
    the second frame's graphs. The pages go in the log's order of the graphs (the graph
    folders' and the summary's), each page its own graph's, the empty attempt's where its
    compile id begins: not grouped by compile id, which put [0/0_1]'s backward page second."""
    log = tmp_path / "break.log"
    log.write_text(
        _record("torch_version", "2.13.0", cid=None)
        + _record("dynamo_graph_break_reason", "Tensor.item")
        + _record("before_pre_grad_graph", "class P(torch.nn.Module):\n    x = l_x_", cid=(0, 0, 1))
        + "".join(_graph("forward", "fwd")).replace('"attempt": 0', '"attempt": 1')
        + _record("before_pre_grad_graph", "class Q(torch.nn.Module):\n    y = l_y_", cid=(1, 0, 0))
        + "".join(_graph("forward", "fwd1")).replace('"frame_id": 0', '"frame_id": 1')
        + "".join(_graph("backward", "bwd1")).replace('"frame_id": 0', '"frame_id": 1')
        + "".join(_graph("backward", "bwd")).replace('"attempt": 0', '"attempt": 1')
    )
    pages = tlparse_render.render_pages(tlparse_render.tlparse_binary(), log, tmp_path / "out")
    assert [p.label for p in pages] == [
        "[0/0] no compiled graph",
        "[0/0_1] forward",
        "[1/0] forward",
        "[1/0] backward",
        "[0/0_1] backward",
    ]
    logged = [g for g in read_log_graphs(log) if g.output_code is not None]
    assert [g.compile_id for g in logged] == [p.compile_id for p in pages[1:]]
    for page, graph, tag in zip(pages[1:], logged, ["fwd", "fwd1", "bwd1", "bwd"], strict=True):
        parsed = tlparse_page.parse_page(page.page.read_text())
        assert "\n".join(parsed.code).strip() == graph.output_code.strip(), f"{page.label}: another graph's code"
        (kernel,) = tlparse_page.kernel_lines(parsed)
        assert kernel.key == f"k_{tag}:1" and kernel.post_grad_nodes == [f"n_{tag}"]


@pytest.mark.compile
@needs_tlparse
def test_open_after_compile_keeps_the_pages_compile_printed(compile_case, run_cli, tmp_path):
    """Issue 37: ``open OUT`` on a ``compile --out OUT`` folder renders each log's pages
    where compile wrote and printed them (OUT/tlparse/<label>/), replacing nothing else."""
    case = compile_case("mlp")
    copy = tmp_path / "run"
    shutil.copytree(case.out, copy)
    printed = [  # tlparse's pages, then the viewer's
        Path(line.split(" page: ", 1)[1]).relative_to(case.out)
        for line in case.stdout.splitlines()
        if "provenance page: " in line or "viewer page: " in line
    ]
    assert printed
    code, out, err = run_cli("open", copy, "--no-browser")
    assert code == 0, err
    opened = [Path(line.split("  ", 1)[1].strip()).relative_to(copy) for line in out.splitlines()]
    assert opened == printed
    assert all((copy / page).is_file() for page in printed)


# --- every page tlparse writes, labelled as the graph folders are (issue 55, point 3) -------


def _no_compile_id_record(name: str, payload: str, graph_dump: bool = False) -> str:
    """A record as torch logs an AOTInductor compile's: no compile id in the envelope."""
    envelope: dict = (
        {"graph_dump": {"name": name, "type": "cpp", "filename": "/tmp/x.wrapper.cpp"}}
        if graph_dump
        else {"artifact": {"name": name, "encoding": "string"}}
    )
    envelope["has_payload"] = hashlib.md5(payload.encode()).hexdigest()
    head = f"V0101 00:00:00.000000 1 torch/x.py:1] {json.dumps(envelope)}\n"
    return head + "".join(f"\t{line}\n" for line in payload.split("\n"))


@pytest.fixture
def mixed_log(tmp_path) -> Path:
    """[0/0]: a graph whose code says ``_forward`` but whose diagnostics (the graph folder's
    kind) say inference; [1/0]: a compile id Dynamo logged a graph for, with no Inductor code
    (``torch.export``'s trace); then an AOTInductor compile, with no compile id at all."""
    aoti_mapping = {
        "preToPost": {},
        "postToPre": {},
        "cppCodeToPost": {"aoti_k:1": ["n_aoti"]},
        "postToCppCode": {"n_aoti": ["aoti_k:1"]},
        "version": 2.0,
    }
    log = tmp_path / "mixed.log"
    log.write_text(
        _record("before_pre_grad_graph", "class P(torch.nn.Module):\n    x = l_x_")
        + "".join(_graph("forward", "fwd")[:2])
        + _record(DIAGNOSTICS, json.dumps({"compile_id": "0/0", "graph": "inference"}))
        + _graph("forward", "fwd")[2]
        + _record("dynamo_output_graph", "class E(torch.nn.Module):\n    y = l_y_", cid=(1, 0, 0))
        + _no_compile_id_record("before_pre_grad_graph", "class A(torch.nn.Module):\n    a = l_a_")
        + _no_compile_id_record("inductor_post_grad_graph", "class G(torch.nn.Module):\n    n_aoti = x")
        + _no_compile_id_record("inductor_aot_wrapper_code", "void run() {\n    aoti_k(buf);\n}", graph_dump=True)
        + _no_compile_id_record(DIAGNOSTICS, json.dumps({"compile_id": "none", "graph": "inference"}))
        + _no_compile_id_record(NODE_MAPPINGS, json.dumps(aoti_mapping))
    )
    return log


def test_graphs_take_the_folders_kind_and_aotinductor_is_a_compile(mixed_log):
    graphs = tlparse_render.graphs_of(tlparse_render.read_records(mixed_log), with_code=False)
    assert [(g.compile_id, g.kind, g.has_code, g.has_mapping) for g in graphs] == [
        ("[0/0]", "inference", True, True),  # the diagnostics win over the code's "_forward"
        ("[1/0]", None, False, False),
        (tlparse_render.NO_COMPILE_ID, "inference", True, True),
    ]


@needs_tlparse
def test_open_lists_every_page_tlparse_wrote(mixed_log, run_cli, tmp_path):
    code, out, err = run_cli("open", mixed_log, "--out", tmp_path / "pages", "--no-browser")
    assert code == 0, err
    listed = [(line.split("  ", 1)[0].strip(), line.split("  ", 1)[1].strip()) for line in out.splitlines()]
    written = sorted(p.name for p in (tmp_path / "pages").glob("provenance_tracking_*.html"))
    assert sorted(Path(where.split("  ")[0]).name for _, where in listed) == written
    assert [label for label, _ in listed] == ["[0/0] inference", "[1/0] no compiled graph", "AOTInductor inference"]
    assert listed[1][1].endswith("(no compiled code logged for this compile: nothing to link)")
    # the AOTInductor page is tlparse's page of the records without a compile id: its graph's
    aoti = tlparse_page.parse_page(Path(listed[2][1]).read_text())
    assert any("n_aoti" in line for line in aoti.post_grad)
