"""vLLM's general plugin (issue 45 point 2): the entry point ``spyre_provenance`` of the group
``vllm.general_plugins`` switches tracking on in a vLLM process, following vLLM's rules
(``VLLM_PLUGINS`` unset: every plugin; set: the named ones only), called the way vLLM's loader
calls it (``programs/vllm_loader.py``: a stand-in of the loader, for an environment without
vLLM, whose releases pin a torch other than this one; ``test_vllm_loader.py`` runs vLLM's own
loader where it is installed). Three processes at once, one compile each.
"""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from helpers.fresh_process import environment
from spyre_provenance.logs.graphs import read_log_graphs
from spyre_provenance.model import folders

OURS = "spyre_provenance"
pytestmark = [
    pytest.mark.compile,
    pytest.mark.skipif(
        OURS not in {e.name for e in entry_points(group="vllm.general_plugins")},
        reason="this environment's install predates the vllm.general_plugins entry point (reinstall the package)",
    ),
]
CASES = {"all plugins": None, "named": "spyre_inference,spyre_provenance", "not named": "spyre_inference"}


@pytest.fixture(scope="session")
def loaded(tmp_path_factory) -> dict[str, tuple[subprocess.CompletedProcess[str], Path]]:
    root = tmp_path_factory.mktemp("vllm")
    started = {}
    for case, plugins in CASES.items():
        out = root / case.replace(" ", "-")
        env = {k: v for k, v in environment().items() if k not in ("SPYRE_PROVENANCE_OUT", "VLLM_PLUGINS")}
        if plugins is not None:
            env["VLLM_PLUGINS"] = plugins
        program = Path(__file__).parent / "programs" / "vllm_loader.py"
        started[case] = (
            subprocess.Popen(
                [sys.executable, str(program), str(out)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
            ),
            out,
        )
    done = {}
    for case, (process, out) in started.items():
        stdout, stderr = process.communicate(timeout=900)
        done[case] = (subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr), out)
    return done


@pytest.mark.parametrize("case", ["all plugins", "named"])
def test_the_plugin_tracks_the_vllm_process(loaded, case):
    ran, out = loaded[case]
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert f"'{OURS}'" in ran.stdout.splitlines()[0]
    (folder,) = out.iterdir()  # one process, one folder, whatever the plugin was called twice
    assert folders.process_of_folder(folder.name).program == "vllm-loader"
    (graph,) = read_log_graphs(folder / "trace" / "vllm-loader.log")
    assert graph.diagnostics["complete"] is True and graph.node_mappings["cppCodeToPost"]


def test_a_plugin_vllm_plugins_does_not_name_is_not_loaded(loaded):
    ran, out = loaded["not named"]
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert ran.stdout.splitlines()[0] == "loaded []"
    assert not out.exists()  # the start-up hook ran before the variable was set: nothing tracked


def test_tracking_through_the_plugin_changes_nothing_computed(loaded):
    results = {case: ran.stdout.splitlines()[1] for case, (ran, _) in loaded.items()}
    assert len(set(results.values())) == 1
