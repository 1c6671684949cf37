"""vLLM's compile path under tracking (issue 54): ``standalone_compile`` then
``CompiledArtifact.save`` in one process, and a fresh process that only loads the saved
artifact and calls it, no compile at all (``programs/standalone_artifact.py``). Both tracked
from outside with ``SPYRE_PROVENANCE_OUT``, each with its own Inductor cache dir, as a
warm vLLM start on another machine would be.

And an Inductor cache entry that holds no provenance of ours (its writer failed to store
it): the hit is counted "cached without provenance", partial, never complete.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.fresh_process import environment
from helpers.vllm_here import vllm_or_skip

pytestmark = pytest.mark.compile

PROGRAM = Path(__file__).parent / "programs" / "standalone_artifact.py"
#: the suite turns both caches off (tests/conftest.py); these tests are of them on
CACHES_ON = {"TORCHINDUCTOR_FX_GRAPH_CACHE": "1", "TORCHINDUCTOR_AUTOGRAD_CACHE": "1"}


def _run(action: str, artifact: Path, out: Path | None, cache: Path) -> subprocess.CompletedProcess[str]:
    env = environment({**CACHES_ON, "TORCHINDUCTOR_CACHE_DIR": str(cache)})
    env.pop("SPYRE_PROVENANCE_OUT", None)
    if out is not None:
        env["SPYRE_PROVENANCE_OUT"] = str(out)
    done = subprocess.run(
        [sys.executable, str(PROGRAM), action, str(artifact)], capture_output=True, text=True, env=env, timeout=600
    )
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    return done


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path | str]:
    root = tmp_path_factory.mktemp("standalone")
    plain = _run("save", root / "plain_artifact", None, root / "cache_plain")
    saved = _run("save", root / "artifact", root / "saved", root / "cache_save")
    loaded = _run("load", root / "artifact", root / "loaded", root / "cache_load")
    return {"root": root, "plain": plain.stdout, "saved": saved.stdout, "loaded": loaded.stdout}


def _graph_folder(out: Path) -> Path:
    (folder,) = out.glob("*/graph_*")
    return folder


def test_save_succeeds_tracked_and_computes_what_plain_does(runs) -> None:
    root = runs["root"]
    assert (root / "artifact").is_dir()
    assert runs["saved"] == runs["plain"] == runs["loaded"]


def test_a_process_that_only_loads_gets_the_graphs_complete_artifacts(runs) -> None:
    root = runs["root"]
    saved, loaded = _graph_folder(root / "saved"), _graph_folder(root / "loaded")
    names = sorted(p.name for p in saved.glob("*.json"))
    assert "inductor_provenance_tracking_node_mappings.json" in names
    assert sorted(p.name for p in loaded.glob("*.json")) == names
    for name in names:
        a, b = (json.loads((folder / name).read_bytes()) for folder in (saved, loaded))
        if name == "spyre_provenance_diagnostics.json":
            assert (a.pop("cache"), b.pop("cache")) == ("compiled", "cached")
            assert b["complete"] is True
        assert a == b, name


def test_an_entry_without_provenance_is_counted_partial(tmp_path) -> None:
    """A compile whose provenance could not be stored leaves an entry without it; the next
    tracked hit says so on the screen and in its diagnostics."""
    cache = tmp_path / "cache"
    env = environment({**CACHES_ON, "TORCHINDUCTOR_CACHE_DIR": str(cache)})
    # the writer: tracked, but nothing stored with the entry (as when storing failed)
    unstored = "from spyre_provenance.capture import graph_cache; graph_cache.Entries.store = lambda *a: None"
    cli = "from spyre_provenance.cli import main; raise SystemExit(main())"
    args = ["compile", "mlp", "--out"]
    first = subprocess.run(
        [sys.executable, "-c", f"{unstored}; {cli}", *args, str(tmp_path / "cold")],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert first.returncode == 0, first.stdout + first.stderr[-2000:]
    second = subprocess.run(
        [sys.executable, "-c", cli, *args, str(tmp_path / "warm")], capture_output=True, text=True, env=env, timeout=600
    )
    assert "cached without provenance: from Inductor's cache" in second.stdout, second.stdout
    assert second.returncode != 0, "a graph with nothing recorded must not pass as complete"
    (diag,) = (tmp_path / "warm").glob("graph_*/spyre_provenance_diagnostics.json")
    doc = json.loads(diag.read_bytes())
    assert (doc["cache"], doc["partial"], doc["complete"]) == ("cached without provenance", True, False)
    assert any("holds no provenance" in fault["error"] for fault in doc["faults"])


VLLM_PROGRAM = Path(__file__).parent / "programs" / "vllm_adaptor.py"


@pytest.mark.parametrize(
    "aot, write, read",
    [("0", "compile", "load"), ("1", "aot", "aot-load")],
    ids=["CompiledArtifact.save-load", "mega-AOT-serialize-deserialize"],
)
def test_vllms_own_adaptor_saves_and_a_warm_start_is_recorded(tmp_path, aot, write, read) -> None:
    """vLLM's InductorStandaloneAdaptor, as its worker calls it: compile and save (or
    serialize) tracked, then a fresh process that only loads; both folders complete."""
    vllm_or_skip()
    where = tmp_path / ("artifacts" if aot == "0" else "artifact.bin")
    outputs, folders = [], []
    for action in (write, read):
        env = environment(
            {
                **CACHES_ON,
                "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / f"cache_{action}"),
                "VLLM_USE_MEGA_AOT_ARTIFACT": aot,
            }
        )
        env["SPYRE_PROVENANCE_OUT"] = str(tmp_path / action)
        done = subprocess.run(
            [sys.executable, str(VLLM_PROGRAM), action, str(where)],
            capture_output=True,
            text=True,
            env=env,
            timeout=600,
            cwd=VLLM_PROGRAM.parent,
        )
        assert done.returncode == 0, done.stdout + done.stderr[-3000:]
        outputs.append(done.stdout.splitlines()[-1])
        folders.append(_graph_folder(tmp_path / action))
    assert outputs[0] == outputs[1]
    saved, loaded = folders
    names = sorted(p.name for p in saved.glob("*.json"))
    assert "inductor_provenance_tracking_node_mappings.json" in names
    assert sorted(p.name for p in loaded.glob("*.json")) == names
    diagnostics = json.loads((loaded / "spyre_provenance_diagnostics.json").read_bytes())
    assert (diagnostics["cache"], diagnostics["complete"]) == ("cached", True)
    for name in names:
        if name != "spyre_provenance_diagnostics.json":
            assert (saved / name).read_bytes() == (loaded / name).read_bytes(), name
