"""On stock Inductor the hook's mapping equals the one torch 2.13 itself computes."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from helpers.where import SCRIPTS  # tests/ is on sys.path

pytestmark = pytest.mark.compile

SCRIPT = SCRIPTS / "hook_vs_upstream.py"
MODELS = ("mlp", "residual")


@pytest.fixture(scope="module")
def side_by_side():
    done = subprocess.run([sys.executable, str(SCRIPT), *MODELS], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("model", MODELS)
def test_forward_mapping_equals_upstream(side_by_side, model):
    graphs = side_by_side[model]
    assert len(graphs) == 1 and graphs[0]["kind"] == "inference"
    ours, upstream = graphs[0]["ours"], graphs[0]["upstream"]
    assert not graphs[0]["faults"]
    assert ours["cppCodeToPost"], "the compile produced no kernel call sites"
    for key in ("preToPost", "postToPre", "cppCodeToPost", "postToCppCode", "version"):
        assert ours[key] == upstream[key], key
    # same keys in the same order too: tlparse and golden diffs see the same document
    assert json.dumps(ours) == json.dumps(upstream)
