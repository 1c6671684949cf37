"""``spyre-provenance compile`` end to end: real compile, real log, real tlparse page."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from helpers import tlparse_page
from helpers.fresh_process import FRESH  # tests/ is on sys.path
from spyre_provenance.compile import examples
from spyre_provenance.logs import wrapper_code
from spyre_provenance.logs.graphs import read_log_graphs
from spyre_provenance.logs.tracelog import artifact_payloads
from spyre_provenance.model.names import NODE_MAPPINGS
from spyre_provenance.validate import paths as path_validation

pytestmark = pytest.mark.compile


def run_compile(out: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return FRESH.run("compile", *args, "--out", out)


@pytest.fixture(scope="module")
def demo(compile_case):
    """What ``make demo`` runs: ``compile mlp`` with the default backend."""
    case = compile_case("mlp")
    assert case.returncode == 0, case.stdout + case.stderr[-3000:]
    return case.out, case


@pytest.fixture(scope="module")
def demo_again(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo_again")
    done = run_compile(out, "mlp")
    assert done.returncode == 0, done.stderr[-3000:]
    return out


@pytest.fixture(scope="module")
def stock(compile_case):
    case = compile_case("mlp", "--backend", "inductor")
    assert case.returncode == 0, case.stdout + case.stderr[-3000:]
    return case.out, case


def log_of(out: Path) -> Path:
    (log,) = (out / "trace").glob("*.log")
    return log


def only_page(out: Path) -> tlparse_page.Page:
    """The page of compile 0/0 (tlparse also writes an empty one for the id-less records)."""
    return tlparse_page.parse_page((out / "tlparse" / "mlp" / "provenance_tracking_-_0_0_0.html").read_text())


@pytest.mark.parametrize("case", ["demo", "stock"])
def test_summary_reports_full_coverage(case, request):
    out, done = request.getfixturevalue(case)
    text = done.stdout
    assert "output vs eager: match" in text
    linked = [
        line.split(":", 1)[1].split()[0] for line in text.splitlines() if "call sites linked on the page:" in line
    ]
    assert linked and all(a == b != "0" for a, b in (n.split("/") for n in linked)), text
    reached = [
        line.split(":", 1)[1].split(";")[0].split()[0] for line in text.splitlines() if "compute nodes reached:" in line
    ]
    assert reached and all(a == b for a, b in (n.split("/") for n in reached)), text
    assert "VIOLATION" not in text and "PARTIAL" not in text and "INCONSISTENT" not in text
    assert "all valid" in text and "provenance page:" in text


def test_demo_runs_on_the_reference_backend(demo):
    out, done = demo
    from spyre_provenance.backends import spyre as spyre_backend

    usable, why = spyre_backend.probe()
    if usable:
        pytest.skip(f"torch_spyre is usable here: auto picks it ({why})")
    # auto says, first and in one line, what it chose and why
    assert done.stdout.splitlines()[0] == f"backend reference (auto: {why})"
    assert "on the reference backend" in done.stdout
    mapping = json.loads(next(out.glob(f"graph_*/{NODE_MAPPINGS}.json")).read_bytes())
    assert mapping["cppCodeToPost"] and all(k.startswith("sdsc_") for k in mapping["cppCodeToPost"])


def test_backend_spyre_without_a_usable_torch_spyre_is_refused_in_one_line(compile_case):
    from spyre_provenance.backends import spyre as spyre_backend

    usable, why = spyre_backend.probe()
    if usable:
        pytest.skip(f"torch_spyre is usable here ({why})")
    done = compile_case("mlp", "--backend", "spyre")
    assert done.returncode == 2, done.stdout + done.stderr[-3000:]
    assert done.stderr.strip().splitlines() == [f"spyre-provenance compile: error: --backend spyre: {why}"]
    assert done.stdout == "" and not done.graph_dirs()


@pytest.mark.parametrize("case", ["demo", "stock"])
def test_every_written_artifact_validates(case, request):
    out, _ = request.getfixturevalue(case)
    reports = path_validation.validate_paths([out / "trace", *out.glob("graph_*")])
    assert reports and all(r.ok for r in reports), [r for r in reports if not r.ok]


@pytest.mark.parametrize("case", ["demo", "stock"])
def test_log_mapping_is_the_graphs_last_and_matches_the_files(case, request):
    out, _ = request.getfixturevalue(case)
    entries = list(artifact_payloads(log_of(out)))
    mappings = [payload for _, name, payload in entries if name == NODE_MAPPINGS]
    assert len(mappings) == 1  # never a second, contradicting mapping
    written = next(out.glob(f"graph_*/{NODE_MAPPINGS}.json")).read_text()
    assert json.loads(mappings[0]) == json.loads(written)


@pytest.fixture(scope="module")
def demo_fp16(compile_case):
    case = compile_case("mlp", "--dtype", "float16")
    assert case.returncode == 0, case.stdout + case.stderr[-3000:]
    return case.out, case


@pytest.mark.parametrize("case", ["demo", "demo_fp16", "stock"])
def test_tlparse_page_links_every_announced_kernel(case, request):
    out, _ = request.getfixturevalue(case)
    (graph,) = read_log_graphs(log_of(out))
    announced = wrapper_code.handle_comments(graph.output_code)
    page = only_page(out)
    lines = tlparse_page.kernel_lines(page)
    assert [k.key for k in lines] == announced == list(graph.node_mappings["cppCodeToPost"])
    for kernel in lines:
        assert kernel.post_grad_lines, f"{kernel.key} is not linked on the page"
        assert set(kernel.post_grad_nodes) <= set(graph.node_mappings["cppCodeToPost"][kernel.key])
    assert page.links["preToPost"], "the pre-grad panel links nothing"
    assert any(line.strip() for line in page.pre_grad)


def test_two_runs_give_byte_identical_artifacts(demo, demo_again):
    first, _ = demo
    files = sorted(p.relative_to(first) for p in first.glob("graph_*/*.json"))
    assert files
    for name in files:
        assert (first / name).read_bytes() == (demo_again / name).read_bytes(), name
    bundles = sorted(p.relative_to(first) for p in (first / "sdsc").rglob("*.json"))
    # the bundle folders' names too (inductor-spyre/<uuid8>_<kernel>_<suffix>/, from the bytes)
    assert bundles == sorted(p.relative_to(demo_again) for p in (demo_again / "sdsc").rglob("*.json"))
    assert bundles and all((first / b).read_bytes() == (demo_again / b).read_bytes() for b in bundles)


def test_unknown_model_is_one_line_and_exit_2(tmp_path):
    done = run_compile(tmp_path, "no_such_model")
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1 and "no_such_model" in done.stderr
    assert "Traceback" not in done.stderr


REFERENCE_CASES = {
    "mlp-fp16": ("mlp", "--dtype", "float16"),
    "residual": ("residual",),
    "reduce2": ("reduce2",),
}


@pytest.mark.parametrize("case", sorted(REFERENCE_CASES))
def test_reference_backend_maps_every_call_site(case, compile_case):
    compiled = compile_case(*REFERENCE_CASES[case])
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr[-3000:]
    assert "on the reference backend" in compiled.stdout
    assert "output vs eager: match" in compiled.stdout
    assert "without handle: 0" in compiled.stdout
    for graph in read_log_graphs(compiled.log):
        keys = list(graph.node_mappings["cppCodeToPost"])
        assert keys and all(k.startswith("sdsc_") for k in keys)
        sites = wrapper_code.call_sites(graph.output_code)
        assert [s.key for s in sites] == keys  # every call site mapped, 1:1, in order
        assert all(graph.node_mappings["cppCodeToPost"][k] for k in keys)


def test_fp16_bias_adds_are_the_linear_s_with_its_line(compile_case):
    """As on torch-spyre main, which decomposes ``linear`` while tracing: a bias add's
    handle says ``aten.linear.default`` and points at the model line of its Linear."""
    compiled = compile_case(*REFERENCE_CASES["mlp-fp16"])
    (folder,) = compiled.graph_dirs()
    handles = json.loads((folder / "spyre_opspec_debug_handles.json").read_text())["handles"]
    bias_adds = {h["ir_chain"][0]: h for h in handles.values() if h["ir_chain"][:1] in (["add"], ["add_1"])}
    assert sorted(bias_adds) == ["add", "add_1"]
    lines = {"add": "self.fc1(x)", "add_1": "self.fc2(h)"}
    source = Path(examples.__file__).read_text().splitlines()
    for node, handle in bias_adds.items():
        assert handle["aten_op"] == "aten.linear.default"
        assert lines[node] in source[handle["source"]["start_line"] - 1], handle


MODEL_FILE = """\
import torch
from torch import nn


def build():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 8), nn.{act}()), (torch.randn(2, 8),)
"""


def test_two_models_one_label_are_refused_in_one_line(tmp_path):
    """Issue 37: ``a/model.py:build`` and ``b/model.py:build`` share the label
    ``model-build``; the second compile into the same ``--out`` would replace the first's
    folders, so it is refused (exit 2, one line) and the first's output stays. The same
    model again replaces its own output; a non-ASCII file name is transliterated the same
    way for the label and the default ``--out`` folder."""
    for folder, act in (("a", "ReLU"), ("b", "Tanh")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "model.py").write_text(MODEL_FILE.format(act=act))
    out = tmp_path / "out"
    first = run_compile(out, f"{tmp_path / 'a' / 'model.py'}:build", "--no-tlparse")
    assert first.returncode == 0, first.stderr[-3000:]
    before = sorted(p.name for p in out.iterdir() if p.name.startswith("graph_"))
    assert before == ["graph_model-build_00_0-0_inference"]
    mapping = (out / before[0] / "inductor_provenance_tracking_node_mappings.json").read_bytes()
    second = run_compile(out, f"{tmp_path / 'b' / 'model.py'}:build", "--no-tlparse")
    assert second.returncode == 2 and "compiled" not in second.stdout, second.stderr
    assert len(second.stderr.strip().splitlines()) == 1 and "use another --out" in second.stderr
    assert "Traceback" not in second.stderr
    assert (out / before[0] / "inductor_provenance_tracking_node_mappings.json").read_bytes() == mapping
    from spyre_provenance.compile.request import default_out, label_of

    assert label_of("modèle.py:build") == "modele-build" and default_out("modèle.py:build") == Path("out/modele")


# A model that compiles a part of itself, as DistributedDataParallel(torch.compile(seq)) does
SELF_COMPILING = """
import torch
from torch import nn


def model():
    torch.manual_seed(0)
    return nn.Sequential(torch.compile(nn.Linear(4, 4)), nn.ReLU()), (torch.randn(2, 4),)
"""

# compile as it was before the eager reference ran the model's own torch.compile eagerly
# (compile.eager.eagerly): that compile, stock Inductor's and untracked, lands on the log
UNTRACKED_EAGER_DRIVER = """
import contextlib
import sys
from spyre_provenance import cli
from spyre_provenance.compile import eager

eager.eagerly = contextlib.nullcontext
sys.exit(cli.main(sys.argv[1:]))
"""


def test_a_compile_found_wanting_prints_why(tmp_path):
    (tmp_path / "self_compiling.py").write_text(SELF_COMPILING)
    model = f"{tmp_path / 'self_compiling.py'}:model"
    done = FRESH.run(
        "compile", model, "--out", tmp_path / "out", "--no-tlparse", "--no-viewer", driver=UNTRACKED_EAGER_DRIVER
    )
    assert done.returncode == 1, done.stdout + done.stderr[-3000:]
    # the log holds a graph the hook did not record, of the tracked graph's compile id (ids
    # start again at each torch._dynamo.reset): the hook's graph is paired with its own, and
    # the other has a block of its own, where the violation is; then the verdict's reasons
    tracked, _, untracked = done.stdout.partition("  graph [0/0] on the log, recorded by no hook of this compile")
    assert untracked and "VIOLATION" not in tracked, done.stdout
    assert "    VIOLATION: graph: no node mappings to check [call-sites]" in untracked.splitlines()
    closing = done.stdout.rstrip().splitlines()
    at = next(i for i, line in enumerate(closing) if line.startswith("  FOUND WANTING (exit 1): "))
    reasons = closing[at + 1 :]
    assert closing[at] == f"  FOUND WANTING (exit 1): {len(reasons)} reason(s)"
    assert "    graph [0/0]: its coverage on the log is not complete" in reasons
