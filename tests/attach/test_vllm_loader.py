"""vLLM's real plugin loader (issue 55 point 7): ``vllm.plugins.load_general_plugins`` of the
vLLM installed beside this torch (``pip install --no-deps vllm==0.27.1``, its pure-Python
imports too) loads our entry point of ``vllm.general_plugins`` and calls it, as in every vLLM
process (``programs/vllm_real_loader.py``; ``test_vllm_plugin.py`` holds the same rules with
a stand-in of the loader, where vLLM is not installed).

vLLM calls a plugin with no ``try``: an exception there stops the server. So ``register()``
(``plugin.startup.vllm_plugin``) never raises, whatever the environment holds, and the
program computes what it computes untracked.

Skipped where vLLM is not installed (``helpers.vllm_here``: in CI beside torch 2.13, a failure).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from helpers.fresh_process import TIMEOUT, environment
from helpers.run_program import PROGRAMS
from helpers.vllm_here import vllm_or_skip
from spyre_provenance.logs.graphs import read_log_graphs
from spyre_provenance.model import folders

OURS = "spyre_provenance"
PROGRAM = PROGRAMS / "vllm_real_loader.py"


@pytest.fixture(scope="module", autouse=True)
def vllm_loader() -> None:
    vllm_or_skip()
    from importlib.metadata import entry_points

    if OURS not in {e.name for e in entry_points(group="vllm.general_plugins")}:
        pytest.fail("this environment's install predates the vllm.general_plugins entry point (reinstall the package)")


pytestmark = [pytest.mark.compile]


def _load(
    out: Path | str, *what: str, plugins: str | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in environment().items() if k not in ("SPYRE_PROVENANCE_OUT", "VLLM_PLUGINS")}
    if plugins is not None:
        env["VLLM_PLUGINS"] = plugins
    return subprocess.run(
        [sys.executable, str(PROGRAM), str(out), *what],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=TIMEOUT,
    )


@pytest.fixture(scope="module")
def untracked(tmp_path_factory) -> str:
    """What the program computes with our plugin not named: the result every run must print."""
    ran = _load(tmp_path_factory.mktemp("plain") / "out", plugins="lora_filesystem_resolver")
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert ran.stdout.splitlines()[0] == "tracking False"
    return ran.stdout.splitlines()[1]


@pytest.mark.parametrize("plugins", [None, f"lora_filesystem_resolver,{OURS}"], ids=["unset", "named"])
def test_vllms_loader_starts_tracking(tmp_path, untracked, plugins):
    out = tmp_path / "out"
    ran = _load(out, plugins=plugins)
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert ran.stdout.splitlines() == ["tracking True", untracked]
    (folder,) = out.iterdir()  # one process, one folder
    assert folders.process_of_folder(folder.name).program == "vllm-real-loader"
    (graph,) = read_log_graphs(folder / "trace" / "vllm-real-loader.log")
    assert graph.diagnostics["complete"] is True and graph.node_mappings["cppCodeToPost"]


def test_a_vllm_plugins_that_does_not_name_it_leaves_it_unloaded(tmp_path, untracked):
    out = tmp_path / "out"
    ran = _load(out, plugins="lora_filesystem_resolver")
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert ran.stdout.splitlines() == ["tracking False", untracked]
    assert not out.exists()


#: what a vLLM process's environment may hold when vLLM calls the plugin (argv of the program)
HOSTILE = {
    "OUT is a file": ("{file}",),
    "OUT is under a file": ("{file}/out",),
    "OUT is relative, the folder it is relative to gone": ("cwd-gone",),
    "OUT is empty": (),
    "OUT is unset after vLLM started tracking": ("unset-after",),
    "an unknown backend": ("env:SPYRE_PROVENANCE_BACKEND=no-such-backend",),
    "run's folder for ended processes is a file": ("env:SPYRE_PROVENANCE_ENDED={file}",),
    "no stderr at all": ("no-stderr", "{file}"),
    "stderr closed": ("closed-stderr", "{file}"),
    "warnings are errors, and tracking fails": ("warnings-are-errors", "{file}"),
    "the package's attaching module cannot be imported": ("no-attach",),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_register_never_raises_whatever_the_environment_holds(tmp_path, untracked, case):
    """vLLM's real loader calls ``register()`` and the program goes on to compute what it
    computes untracked, exit 0, whatever the case spoils."""
    file = tmp_path / "a-file"
    file.write_text("not a folder")
    what = [w.format(file=file) for w in HOSTILE[case]]
    out = {"OUT is empty": "", "OUT is relative, the folder it is relative to gone": "out"}.get(case, tmp_path / "out")
    if what and not what[-1].startswith(("env:", "no-", "closed-", "warnings-", "cwd-", "unset-")):
        out = what.pop()  # the case's own OUT
    ran = _load(out, *what, plugins=OURS, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert ran.stdout.splitlines()[-1] == untracked, ran.stdout + ran.stderr[-3000:]
    assert "Traceback" not in ran.stderr, ran.stderr[-3000:]
