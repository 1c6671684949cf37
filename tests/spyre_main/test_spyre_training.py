"""Training on torch-spyre main, as it is today (REFERENCE.md §4.1): torch-spyre registers
an autograd fallthrough for the ops it decomposes (``linear`` among them), so a model of
Linears compiles as an inference graph; where a backward graph does build, torch-spyre
refuses it on layouts. And a backward that fails after its forward compiled never spoils
the forward's page."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import tlparse_page
from helpers.fresh_process import FRESH
from helpers.where import ZOO
from spyre_provenance.logs import tlparse_render, wrapper_code
from spyre_provenance.logs.graphs import read_log_graphs

pytestmark = [
    pytest.mark.compile,
    pytest.mark.skipif(tlparse_render.tlparse_binary() is None, reason="tlparse is not installed"),
]

PARAM_FREE = f"{ZOO / 'models.py'}:param_free"


def test_linear_layers_train_as_an_inference_graph(spyre_main_case):
    case = spyre_main_case("mlp", "--train")
    assert case.returncode == 0, case.stdout + case.stderr[-2000:]
    assert [p.name.rsplit("_", 1)[1] for p in case.graph_dirs()] == ["inference"]
    assert "graph 0/0 inference" in case.stdout and "backward" not in case.stdout


def test_a_backward_that_builds_is_refused_on_layouts(spyre_main_case):
    case = spyre_main_case(PARAM_FREE, "--train")
    assert case.returncode == 2, case.stdout + case.stderr[-2000:]
    (line,) = [text for text in case.stderr.splitlines() if text.startswith("spyre-provenance compile: error:")]
    assert "torch.compile failed: RuntimeError:" in line and "tangents_1" in line
    assert line.endswith("does not have FixedTiledLayout"), line
    assert case.graph_dirs() == []


def test_a_failed_backward_never_spoils_the_forward_page(torch_spyre_python, tmp_path):
    """The Python API, as a user tracks a training step: the forward compiles, its
    backward fails in torch-spyre. The log holds the forward's graph and code and then
    the backward's post-grad graph; ``open`` gives the forward its own page, built on the
    forward's graph (tlparse alone would read the folder's last post-grad graph, the
    backward's), every call site linked."""
    trace = tmp_path / "trace"
    got = torch_spyre_python(
        f"""
        import json, torch
        from spyre_main import route
        from spyre_provenance import tracking
        from spyre_provenance.compile.examples import load_calls
        route.install()
        model, calls = load_calls({PARAM_FREE!r}, torch.float16)
        from spyre_provenance.backends.spyre import SpyreBackend
        backend = SpyreBackend()
        error = None
        try:
            with tracking(backend) as session:
                out = torch.compile(model, backend=backend.compiler())(*calls[0])
        except Exception as exc:
            error = type(exc).__name__
        print(json.dumps({{"error": error, "graphs": [g.kind for g in session.results]}}))
        """,
        env={"TORCH_TRACE": str(trace)},
    )
    assert got["error"] is not None and got["graphs"] == ["forward"], got
    (log,) = trace.glob("*.log")
    (forward,) = [g for g in read_log_graphs(log) if g.output_code is not None]
    opened = FRESH.run("open", log, "--out", tmp_path / "pages", "--no-browser", timeout=300)
    assert opened.returncode == 0, opened.stdout + opened.stderr
    pages = [line.split("  ", 1)[1].strip().split("  ")[0] for line in opened.stdout.splitlines() if "  " in line]
    (page_path,) = [p for p in pages if p.endswith(".html")]
    page = tlparse_page.parse_page(Path(page_path).read_text())
    assert "\n".join(page.code).strip() == forward.output_code.strip()
    assert "\n".join(page.post_grad).strip() in forward.post_grad_graph  # the forward's, not the backward's
    lines = tlparse_page.kernel_lines(page)
    assert [k.key for k in lines] == wrapper_code.handle_comments(forward.output_code)
    assert all(k.post_grad_lines for k in lines), [k.key for k in lines if not k.post_grad_lines]
    assert json.dumps(forward.diagnostics["complete"]) == "true"
