"""The ``provenance_regression`` fixture, as another project's test suite uses it (pytester).

Three in-process runs of one tiny model (Linear(8, 8) + ReLU on the reference backend,
~3 s each): the first writes the golden, an edited golden fails with the readable diff,
``--force-regen`` writes back the same bytes.
"""

from __future__ import annotations

import importlib.metadata
import json
from pathlib import Path

import pytest

from spyre_provenance import golden

pytest_plugins = ["pytester"]

TEST_MODULE = """
import torch
from torch import nn


class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        return torch.relu(self.fc(x))


def test_tiny(provenance_regression):
    torch.manual_seed(0)
    provenance_regression.check(Tiny(), (torch.randn(2, 8),), backend="reference")
"""

GRAPH = "graph_00_0-0_inference"


def test_entry_point_is_declared():
    points = importlib.metadata.entry_points(group="pytest11")
    assert any(p.value == "spyre_provenance.plugin.pytest_fixture" for p in points)


def test_without_torch_the_fixture_names_the_extra(pytester: pytest.Pytester):
    # torch hidden from the run (a None in sys.modules is what find_spec and import see)
    pytester.makeconftest("import sys\nsys.modules['torch'] = None\n")
    pytester.makepyfile(test_bare="def test_uses_it(provenance_regression):\n    pass\n")
    run = pytester.runpytest_subprocess("-p", "spyre_provenance.plugin.pytest_fixture", "-p", "no:cacheprovider")
    run.assert_outcomes(errors=1)
    # one line, no traceback (fnmatch would read the brackets as a character class)
    assert (
        "provenance_regression compiles with torch, which is not installed: pip install 'spyre-provenance[pytest]'"
        in run.stdout.lines
    )
    assert "Traceback" not in run.stdout.str()


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _cache_entries(cache: Path) -> list[Path]:
    return sorted(p for p in (cache / "fxgraph").rglob("*") if p.is_file())


@pytest.mark.compile
def test_provenance_regression(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch):
    """The first run compiles cold into a cache dir of its own; the edited and regenerated
    runs start warm from it (issue 54: tracking keeps Inductor's caches, and a hit's
    artifacts are the miss's, so the golden holds)."""
    pytester.makepyfile(test_tiny=TEST_MODULE)
    cache = pytester.path / "inductor-cache"
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(cache))
    monkeypatch.setenv("TORCHINDUCTOR_FX_GRAPH_CACHE", "1")

    # -p: also when the entry point is not installed (a no-op when it is: same name)
    def run(*args):
        return pytester.runpytest_subprocess(
            "-p", "spyre_provenance.plugin.pytest_fixture", "-p", "no:cacheprovider", *args
        )

    case = pytester.path / "test_tiny" / "test_tiny"

    first = run()
    first.assert_outcomes(failed=1)
    first.stdout.fnmatch_lines(
        ["*provenance golden created in test_tiny/test_tiny: manifest.json, graph_00_0-0_inference/*"]
    )
    written = _files(case)
    entries = _cache_entries(cache)
    assert entries, "the first run wrote no FX-graph cache entry"
    assert set(written) == {
        "manifest.json",
        f"{GRAPH}/inductor_provenance_tracking_node_mappings.json",
        f"{GRAPH}/inductor_provenance_tracking_kernel_stack_traces.json",
        f"{GRAPH}/spyre_opspec_debug_handles.json",
    }
    # the golden serializer wrote them, normalized: paths relative to the test project
    assert all(golden.dumps(json.loads(data)) == data for data in written.values())
    traces = json.loads(written[f"{GRAPH}/inductor_provenance_tracking_kernel_stack_traces.json"])
    assert all(t.startswith('  File "test_tiny.py", line ') for ts in traces.values() for t in ts)
    manifest = json.loads(written["manifest.json"])
    assert manifest["model"] == "test_tiny.Tiny" and manifest["backend"] == "reference"
    assert manifest["update"] == "pytest test_tiny.py::test_tiny --force-regen"

    mappings = case / GRAPH / "inductor_provenance_tracking_node_mappings.json"
    doc = json.loads(mappings.read_text())
    (kernel,) = doc["cppCodeToPost"]
    doc["cppCodeToPost"][kernel] = [n.replace("relu", "relu_3") for n in doc["cppCodeToPost"][kernel]]
    mappings.write_text(json.dumps(doc, indent=2))
    edited = run()
    edited.assert_outcomes(failed=1)
    text = edited.stdout.str()
    assert f"  {GRAPH}: kernel {kernel}: post-grad node relu_3 -> relu" in text
    assert "1 change(s) from test_tiny/test_tiny to this run:" in text
    assert "Traceback" not in text and "torch.__trace" not in text

    regen = run("--force-regen")
    regen.assert_outcomes(failed=1)
    regen.stdout.fnmatch_lines(
        [
            "*provenance golden regenerated in test_tiny/test_tiny: graph_00_0-0_inference/inductor_provenance_tracking_node_mappings.json*"
        ]
    )
    assert _files(case) == written
    assert _cache_entries(cache) == entries, "a warm run compiled again instead of hitting the cache"


DIFFERS_MODULE = """
import torch
from torch import nn


class Differs(nn.Module):
    def forward(self, x):
        return torch.relu(x) * (2 if torch.compiler.is_compiling() else 1)


def test_differs(provenance_regression):
    provenance_regression.check(Differs(), (torch.randn(2, 8),), backend="reference")
"""


@pytest.mark.compile
def test_a_compile_found_wanting_fails_before_any_golden_is_written(pytester: pytest.Pytester):
    """The fixture judges the compile as ``spyre-provenance compile`` does (``compile_job``'s
    verdict): compiled code that computes something else than eager fails, and no golden is
    made of it."""
    pytester.makepyfile(test_differs=DIFFERS_MODULE)
    run = pytester.runpytest_subprocess("-p", "spyre_provenance.plugin.pytest_fixture", "-p", "no:cacheprovider")
    run.assert_outcomes(failed=1)
    run.stdout.fnmatch_lines(["*provenance_regression: the compiled output does not match eager (max abs error *"])
    assert not (pytester.path / "test_differs").exists()
