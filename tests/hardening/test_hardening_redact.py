"""``--redact-paths``: no absolute path and no user name in the artifacts written and emitted.

The rules (spyre_provenance.links.redact) on plain strings first, then a real compile of a model
that lives in a (fake) home folder, in-process and through ``spyre-provenance compile``.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from helpers.where import REPO  # tests/ is on sys.path
from spyre_provenance.links.redact import Redactor, find_project
from spyre_provenance.logs import tracelog
from spyre_provenance.model.names import (
    DIAGNOSTICS,
    KERNEL_INFORMATION,
    KERNEL_STACK_TRACES,
    NODE_MAPPINGS,
    OPSPEC_DEBUG_HANDLES,
)
from spyre_provenance.validate import paths as path_validation
from spyre_provenance.validate.kinds import KINDS
from zoo.user_models import SOURCE

PACKAGE_ROOT = REPO / "src"


@pytest.fixture
def redactor() -> Redactor:
    return Redactor.default("/home/alice/proj", home="/home/alice", user="alice")


@pytest.mark.parametrize(
    "text, expected",
    [
        ('  File "/home/alice/proj/model.py", line 3, in forward', '  File "<project>/model.py", line 3, in forward'),
        (
            'File "/home/alice/proj/.venv/lib/python3.11/site-packages/torch/nn/modules/linear.py", line 125',
            'File "<site-packages>/torch/nn/modules/linear.py", line 125',
        ),
        ('File "/usr/lib/python3/dist-packages/numpy/core.py"', 'File "<site-packages>/numpy/core.py"'),
        ('File "/home/alice/data/train.py", line 9', 'File "~/data/train.py", line 9'),
        ('File "/home/alice/projects/other.py"', 'File "~/projects/other.py"'),  # whole components only
        ("/scratch/alice/run/model.py:12", "/scratch/<user>/run/model.py:12"),
        ("cannot open /home/alice/proj/x.json: denied", "cannot open <project>/x.json: denied"),
        (
            f'File "{PACKAGE_ROOT}/spyre_provenance/compile/examples.py"',
            'File "<site-packages>/spyre_provenance/compile/examples.py"',
        ),
        ("no path here: relu(x) / 2", "no path here: relu(x) / 2"),
        ("/opt/tools/bin/x", "/opt/tools/bin/x"),
    ],
)
def test_rules(redactor: Redactor, text: str, expected: str) -> None:
    assert redactor.redact_text(text) == expected
    assert redactor.redact_text(expected) == expected  # idempotent


def test_stdlib_and_paths(redactor: Redactor) -> None:
    import json as json_module

    stdlib = Path(json_module.__file__).parents[1]
    assert redactor.redact_text(f'File "{stdlib}/json/decoder.py"') == 'File "<stdlib>/json/decoder.py"'
    assert redactor.redact_path("/home/alice/proj") == "<project>"
    assert redactor.redact_path("/home/alice/proj/m.py") == "<project>/m.py"


def test_artifacts(redactor: Redactor) -> None:
    handles = {
        "version": 1,
        "kernels": {},
        "handles": {
            "7": {
                "source": {
                    "file": "/home/alice/proj/m.py",
                    "start_line": 1,
                    "start_col": 0,
                    "end_line": None,
                    "end_col": None,
                },
                "aten_op": None,
                "ir_chain": [],
                "fused_from": [],
                "transform_history": [{"kind": "rewrite", "pass_name": "p", "reason": "see /home/alice/proj/pass.py"}],
            }
        },
    }
    out = KINDS[OPSPEC_DEBUG_HANDLES].redact(handles, redactor)
    assert out["handles"]["7"]["source"]["file"] == "<project>/m.py"
    assert out["handles"]["7"]["transform_history"][0]["reason"] == "see <project>/pass.py"
    assert list(out["handles"]) == ["7"]  # ids stay: the bundles refer to them
    assert handles["handles"]["7"]["source"]["file"] == "/home/alice/proj/m.py"  # a copy
    diag = {"faults": [{"stage": "build", "error": "OSError: /home/alice/proj/x"}]}
    assert KINDS[DIAGNOSTICS].redact(diag, redactor)["faults"][0]["error"] == "OSError: <project>/x"
    traces = {"k:1": ['File "/home/alice/proj/m.py", line 1']}
    assert KINDS[KERNEL_STACK_TRACES].redact(traces, redactor) == {"k:1": ['File "<project>/m.py", line 1']}
    info = {"k:1": {"stack_traces": traces["k:1"], "kernel_type": "x"}}
    assert KINDS[KERNEL_INFORMATION].redact(info, redactor)["k:1"]["stack_traces"] == ['File "<project>/m.py", line 1']
    assert info["k:1"]["stack_traces"] == traces["k:1"]  # a copy
    mappings = {"version": 2.0, "preToPost": {"/home/alice/proj": ["x"]}}
    assert KINDS[NODE_MAPPINGS].redact(mappings, redactor) is mappings  # names only: as is


def test_project_is_found_upwards_but_never_home_or_root(tmp_path: Path) -> None:
    (tmp_path / "home" / "proj" / "src").mkdir(parents=True)
    (tmp_path / "home" / "proj" / "pyproject.toml").write_text("")
    assert find_project(tmp_path / "home" / "proj" / "src", tmp_path / "home") == tmp_path / "home" / "proj"
    assert find_project(tmp_path / "home" / "loose", tmp_path / "home") == tmp_path / "home" / "loose"
    assert find_project(tmp_path / "home", tmp_path / "home") is None
    assert find_project(Path("/"), None) is None


# --- a real compile of a model in a user's home folder -----------------------------------------


@pytest.fixture
def alices_project(tmp_path: Path) -> Path:
    project = tmp_path / "home" / "alice" / "proj"
    project.mkdir(parents=True)
    (project / "pyproject.toml").write_text("")
    (project / "tiny.py").write_text(SOURCE)
    return project


def leaks(text: str, project: Path) -> list[str]:
    home = str(project.parents[0])
    return [needle for needle in (home, str(project), "alice") if needle in text]


@pytest.mark.compile
def test_compile_in_process_writes_and_logs_no_path(
    alices_project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import torch

    from helpers.inductor_doubles import RecordingInductor
    from spyre_provenance.backends.reference.backend import ReferenceBackend
    from spyre_provenance.capture.tracking import start, until_disabled
    from spyre_provenance.model.layout import Layout

    monkeypatch.setenv("HOME", str(alices_project.parent))
    monkeypatch.setenv("USER", "alice")
    monkeypatch.setenv("LOGNAME", "alice")
    spec = importlib.util.spec_from_file_location("alices_tiny", alices_project / "tiny.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    model, inputs = module.tiny()
    inductor = RecordingInductor()

    out = tmp_path / "out"
    torch._dynamo.reset()
    with until_disabled(
        start(ReferenceBackend(), layout=Layout(out, None), redact_paths=alices_project, inductor=inductor)
    ) as session:
        torch.compile(model)(*inputs)
    torch._dynamo.reset()

    (graph,) = session.results
    assert any(str(alices_project) in t for r in graph.records for t in r.stack_traces)  # the records keep them
    traces = json.dumps(graph.stack_traces)
    line = SOURCE.splitlines().index("        return torch.relu(x @ w) * 2") + 1  # Tiny.forward's one line
    assert f'<project>/tiny.py\\", line {line}, in forward' in traces
    assert leaks(traces, alices_project) == []
    files = sorted(out.rglob("*.json"))
    assert {f.name for f in files} >= {
        f"{KERNEL_STACK_TRACES}.json",
        f"{OPSPEC_DEBUG_HANDLES}.json",
        f"{DIAGNOSTICS}.json",
    }
    for file in files:
        assert leaks(file.read_text(), alices_project) == [], file
    sources = {
        h["source"]["file"]
        for h in json.loads((files[0].parent / f"{OPSPEC_DEBUG_HANDLES}.json").read_text())["handles"].values()
        if h["source"]
    }
    assert sources == {"<project>/tiny.py"}
    for name, doc in inductor.logged:
        assert leaks(json.dumps(doc), alices_project) == [], name
    assert all(r.ok for r in path_validation.validate_paths([out]))


@pytest.mark.compile
def test_compile_command_redact_paths(alices_project: Path, tmp_path: Path, fresh_process) -> None:
    out = tmp_path / "out"
    done = fresh_process.run(
        "compile",
        f"{alices_project / 'tiny.py'}:tiny",
        "--backend",
        "reference",
        "--out",
        out,
        "--no-tlparse",
        "--redact-paths",
        env={"HOME": str(alices_project.parent), "USER": "alice", "LOGNAME": "alice"},
        cwd=alices_project,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    (folder,) = out.glob("graph_tiny-tiny_*")
    for file in folder.iterdir():
        assert leaks(file.read_text(), alices_project) == [], file
    assert "<project>/tiny.py" in (folder / f"{KERNEL_STACK_TRACES}.json").read_text()
    bundles = sorted((out / "sdsc").rglob("*.json"))  # the backend's own files, debug_handle_ included
    assert bundles and all(leaks(b.read_text(), alices_project) == [] for b in bundles)
    assert any("<project>/tiny.py" in b.read_text() for b in bundles)
    ours = {KERNEL_STACK_TRACES, OPSPEC_DEBUG_HANDLES, DIAGNOSTICS}
    for _, name, payload in tracelog.artifact_payloads(out / "trace" / "tiny-tiny.log"):
        if name in ours:
            assert leaks(payload, alices_project) == [], name
