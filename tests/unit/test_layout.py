"""``model.layout``: one value names every path under an ``--out`` folder, and no other
module of ``src/`` spells one (the folder names, or the constants behind them)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from spyre_provenance.model.layout import Layout

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "spyre_provenance"
#: the layout itself and the folder-name rules it is made of
ALLOWED = {"model/layout.py", "model/folders.py"}
#: an out folder's part as a path: joined (``/ "trace"``), globbed (``glob("rank*")``),
#: compared with a folder's name (``.name == "trace"``), or its constant named
OUT_PATH = re.compile(
    r'/\s*"(?:trace|sdsc|tlparse|profile|view\.html)"'
    r'|glob\("(?:trace|sdsc|tlparse|profile|rank)[/*]'
    r'|\.name\s*==\s*"(?:trace|sdsc|tlparse|profile)"'
    r"|\b(?:TRACE_FOLDER|SDSC_FOLDER|TLPARSE_FOLDER|PROFILE_FOLDER|RANK_PREFIX|ORIGIN_SUFFIX|rank_folder)\b"
)


def offenders(text: str) -> list[str]:
    return [m.group(0) for m in OUT_PATH.finditer(text)]


def test_no_module_but_the_layout_spells_a_path_of_the_out_folder():
    found = {
        str(path.relative_to(PACKAGE)): hits
        for path in sorted(PACKAGE.rglob("*.py"))
        if str(path.relative_to(PACKAGE)) not in ALLOWED and (hits := offenders(path.read_text(encoding="utf-8")))
    }
    assert found == {}


@pytest.mark.parametrize(
    "line",
    [
        'log = out / "trace" / f"{label}.log"',
        'for p in self.out.glob("rank*"):',
        'if log.parent.name == "trace":',
        "bundles = out / folders.SDSC_FOLDER / model",
    ],
)
def test_the_check_finds_a_spelled_path(line):
    assert offenders(line)


def test_every_path_of_a_model_is_under_its_out_folder_and_named_after_its_label(tmp_path):
    layout = Layout(tmp_path, "mlp")
    paths = [
        layout.trace_log,
        layout.origin_marker,
        layout.graph_folder(0, "0/0", "inference"),
        layout.bundle_root,
        layout.pages,
        layout.profile_trace,
        layout.profile_raw,
    ]
    assert all(p.is_relative_to(tmp_path) and "mlp" in p.name for p in paths)
    assert layout.rank(1).trace_log == tmp_path / "rank1" / "trace" / "mlp.log"
    assert Layout.of_log(layout.trace_log, "mlp") == layout
    assert Layout.of_log(tmp_path / "mlp.log") is None


def test_a_reader_without_the_label_cannot_name_a_models_own_path(tmp_path):
    with pytest.raises(ValueError, match="needs its label"):
        _ = Layout(tmp_path).trace_log
