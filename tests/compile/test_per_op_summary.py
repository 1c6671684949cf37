"""``compile``'s summary folds per-op compiles into one line per op kind (issue 46, point 1):
a model that is one ATen op called on its own compiles as torch-spyre's eager mode compiles an
op (``links.per_op``), and its summary says so in one line that counts what the folders hold,
compiled once for the module on the reference backend."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from helpers.fresh_process import FRESH  # tests/ is on sys.path

pytestmark = pytest.mark.compile

MODEL = """\
import torch
from torch import nn


class Relu(nn.Module):
    def forward(self, x):
        return torch.ops.aten.relu.default(x)


def build():
    torch.manual_seed(0)
    return Relu(), (torch.randn(2, 8),)
"""
_FOLD = re.compile(
    r"  per-op compiles of (?P<op>\S+) \(eager mode\): (?P<graphs>[0-9]+) graph\(s\) \((?P<ids>[^)]*)\),"
    r" (?P<sites>[0-9]+) kernel call site\(s\); call sites linked on the page: (?P<linked>[0-9]+)/(?P<judged>[0-9]+);"
    r" coverage complete"
)


@pytest.fixture(scope="module")
def one_op(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    root = tmp_path_factory.mktemp("one-op")
    (root / "one_op.py").write_text(MODEL)
    out = root / "out"
    done = FRESH.run(
        "compile", f"{root / 'one_op.py'}:build", "--backend", "reference", "--no-tlparse", "--no-viewer", "--out", out
    )
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    return out, done


def test_a_per_op_compile_is_one_line_of_its_op_as_its_folder_holds(one_op) -> None:
    out, done = one_op
    folders = sorted(out.glob("graph_*"))
    mapping = json.loads((folders[0] / "inductor_provenance_tracking_node_mappings.json").read_text())
    handles = json.loads((folders[0] / "spyre_opspec_debug_handles.json").read_text())["handles"]
    assert len(folders) == 1 and list(mapping["preToPost"]) == ["relu_default"]
    folds = [m for m in map(_FOLD.match, done.stdout.splitlines()) if m]
    assert len(folds) == 1, done.stdout
    fold = folds[0]
    assert fold["op"] == "aten.relu.default" and {h["aten_op"] for h in handles.values()} == {fold["op"]}
    assert (int(fold["graphs"]), fold["ids"]) == (len(folders), "0/0")
    assert int(fold["sites"]) == int(fold["linked"]) == int(fold["judged"]) == len(mapping["cppCodeToPost"])
    assert "  graph 0/0" not in done.stdout  # folded, not listed as well
    assert "artifacts: " in done.stdout and "all valid" in done.stdout
