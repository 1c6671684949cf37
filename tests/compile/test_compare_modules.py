"""``compare`` where no frame is the user's (issue 56 point 7): a model built of torch's own
modules, an ``nn.Sequential`` edited in one module (``1``: ``nn.GELU`` -> ``nn.ReLU``), is
compared by module path and class, marked as module evidence, never by a line of torch's.

Two real compiles with stock Inductor (each module its own kernel: an ``addmm`` per
``nn.Linear``, a pointwise kernel per activation), profiled, so each module's time is read
too. The oracles are the compiles' own artifacts: the module stacks their diagnostics
recorded, and the profiler's trace through the time summary.
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import jsonschema
import pytest

from helpers.where import ZOO  # tests/ is on sys.path
from spyre_provenance.model.modules import MODULE_FILE, MODULE_MARK, ModuleCall
from spyre_provenance.runtime import index as kernel_index
from spyre_provenance.runtime import time_summary
from spyre_provenance.validate import schemas

pytestmark = pytest.mark.compile

MODELS = ZOO / "torch_modules.py"
UNCHANGED = ["0: Linear", "2: Linear", "3: Tanh", "4: Linear"]
# a place printed as a line of a file (``linear.py:125``, ``torch/nn/...``): never a module's
A_FILE_LINE = re.compile(r"\.py:\d|torch/nn|\(no source line\)")


@pytest.fixture(scope="module")
def sides(compile_case) -> tuple[Path, Path]:
    done = [
        compile_case(f"{MODELS}:{factory}", "--backend", "inductor", "--no-tlparse", "--no-viewer", "--profile")
        for factory in ("sequential_gelu", "sequential_relu")
    ]
    for case in done:
        assert case.returncode == 0, case.stderr[-2000:]
    return done[0].out, done[1].out


def _recorded_modules(out: Path) -> set[str]:
    """The innermost module of every stack the compile's diagnostics recorded, by name."""
    found = set()
    for path in out.glob("graph_*/spyre_provenance_diagnostics.json"):
        for stacks in json.loads(path.read_text())["module_stacks"].values():
            found |= {ModuleCall(*stack[-1]).name for stack in stacks}
    return found


def test_the_edited_module_is_named_by_path_and_class_and_the_rest_are_the_same(sides, run_cli):
    a, b = sides
    code, printed, err = run_cli("compare", a, b, "--format", "json")
    assert code == 1, err
    doc = json.loads(printed)
    jsonschema.Draft202012Validator(schemas.load_schema("provenance_compare", 1)).validate(doc)
    uses = [u for p in doc["lines"] for u in (p["a"], p["b"]) if u is not None]
    # every place is a module: module evidence, no file, no line number
    assert uses and all(u["evidence"] == "module" and u["file"] == MODULE_FILE and u["line"] == 0 for u in uses)
    assert {p["file"] for p in doc["lines"]} == {MODULE_FILE}
    assert {u["code"] for u in uses} == _recorded_modules(a) | _recorded_modules(b)
    changed, *rest = doc["lines"]  # what changed comes first
    assert changed["status"] == "changed" and "code" in changed["changes"]
    assert (changed["a"]["code"], changed["b"]["code"]) == ("1: GELU", "1: ReLU")
    assert [(p["status"], p["a"]["code"]) for p in rest] == [("same", name) for name in UNCHANGED]
    assert doc["counts"] == {"changed": 1, "only_a": 0, "only_b": 0, "regrouped": 0, "same": 4}
    # each module's time is its rows' in the time summary of its side's trace (module rows too)
    for side, out in (("a", a), ("b", b)):
        (trace,) = (out / "profile").glob("*.trace.json")
        summary = time_summary.summarize(trace, kernel_index.build([out]))
        rows = {r.code: r.total_us for r in summary.lines if r.placed_by == time_summary.BY_MODULE}
        timed = {p[side]["code"]: p[side]["time_us"] for p in doc["lines"]}
        # (a module whose kernels the trace did not time, stock Inductor's extern addmm on CPU: 0)
        assert rows and set(rows) <= set(timed)
        assert timed == pytest.approx({name: rows.get(name, 0.0) for name in timed})


def test_text_and_csv_say_module_never_a_line(sides, run_cli):
    a, b = sides
    code, screen, _ = run_cli("compare", a, b)
    assert code == 1
    assert f"changed     module 1: GELU -> 1: ReLU  {MODULE_MARK}" in screen
    assert "modules: 1 changed, 0 only in A" in screen and "same: 4 modules" in screen
    assert " lines" not in screen.split("\n", 2)[2]  # modules are never called lines
    code, every, _ = run_cli("compare", a, b, "--all")
    assert code == 1
    for name in UNCHANGED:
        assert f"same        module {name}  {MODULE_MARK}" in every
    for text in (screen, every):
        body = text.split("\n", 3)[3]  # past the header, which names the sides' folders
        assert not A_FILE_LINE.search(body), body
    code, table, _ = run_cli("compare", a, b, "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(table)))
    assert code == 1 and len(rows) == 5
    assert all(
        r["evidence"] == "module" and r["file"] == MODULE_FILE and r["line_a"] == r["line_b"] == "0" for r in rows
    )
    assert [(r["status"], r["code_a"], r["code_b"]) for r in rows][0] == ("changed", "1: GELU", "1: ReLU")
