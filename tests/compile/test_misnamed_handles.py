"""A handle that names another op or line than its node, on a real compile (issue 55 point 6).

An RMSNorm's ``x = self.weight * x`` before a linear, on ``[batch, tokens, hidden]`` fp16,
reference backend (torch-spyre main's handle rule): the multiply's handle says
``aten.linear`` and the linear's line. compile's summary counts it among the handle/origin
disagreements with both lines and the reason, the diagnostics artifact lists it, and
``lookup`` shows the node's own line beside the handle's. On ``[tokens, hidden]`` each op
keeps its own and nothing is counted.
"""

from __future__ import annotations

import json

import jsonschema
import pytest

from helpers.where import SCHEMAS, ZOO  # tests/ is on sys.path
from spyre_provenance.links.misnamed import ORIGIN_NODE_RULE
from spyre_provenance.model.names import DIAGNOSTICS
from spyre_provenance.viewer import data

pytestmark = pytest.mark.compile

MODEL = ZOO / "rmsnorm_linear.py"


def _line(code: str) -> str:
    """``file:line`` of the model's line holding ``code``."""
    (number,) = [i for i, text in enumerate(MODEL.read_text().splitlines(), 1) if text.strip() == code]
    return f"{MODEL}:{number}"


MULTIPLY, LINEAR = _line("x = self.weight * x"), _line("return self.proj(x)")


def _diagnostics(out) -> dict:
    (graph,) = sorted(out.glob("graph_*"))
    return json.loads((graph / f"{DIAGNOSTICS}.json").read_text())


def test_the_multiply_named_as_the_linear_is_counted_and_shown_with_its_own_line(compile_case, run_cli):
    done = compile_case(f"{MODEL}:batched", "--backend", "reference", "--dtype", "float16")
    assert done.returncode == 0, done.stderr[-2000:]
    diag = _diagnostics(done.out)
    (misnamed,) = diag["misnamed_handles"]
    assert (misnamed["opspec"], misnamed["nodes"], misnamed["differs"]) == ("mul", ["mul_1"], ["op", "line"])
    assert (misnamed["handle_op"], misnamed["handle_line"]) == ("aten.linear.default", LINEAR)
    assert (misnamed["node_ops"], misnamed["node_lines"]) == (["aten.mul.Tensor"], [MULTIPLY])
    assert diag["disagreements"] == [misnamed["kernel"]] and diag["complete"]
    # the summary: the same count as the diagnostics, each OpSpec with both lines, and why
    assert f"handle/origin disagreements: 1 ({misnamed['kernel']})" in done.stdout
    assert f"torch-spyre handles naming another op or line than their node: 1 ({ORIGIN_NODE_RULE})" in done.stdout
    assert (
        f"{misnamed['kernel']} OpSpec mul -> {misnamed['buffer']}: handle {misnamed['handle']} says"
        f" aten.linear.default at {LINEAR}; its node mul_1 is aten.mul.Tensor at {MULTIPLY}"
    ) in done.stdout
    # lookup: the handle's line, and on the next line the node's own, and why
    code, out, err = run_cli("lookup", misnamed["kernel"], "--from", done.out)
    assert code == 0, err
    lines = out.splitlines()
    (at,) = [i for i, line in enumerate(lines) if f"handle {misnamed['handle']}" in line]
    assert lines[at].endswith(f"(aten.linear.default; {LINEAR})")
    assert lines[at + 1].strip() == (
        f"its node mul_1: aten.mul.Tensor at {MULTIPLY}; the handle names another op and line: {ORIGIN_NODE_RULE}"
    )
    assert sum("its node" in line for line in lines) == 1  # the matmul's and the others' agree
    code, out, err = run_cli("lookup", misnamed["kernel"], "--from", done.out, "--format", "json")
    doc = json.loads(out)
    jsonschema.validate(doc, json.loads((SCHEMAS / "provenance_lookup" / "v3.schema.json").read_text()))
    (site,) = doc["answers"][0]["matches"][0]["call_sites"]
    owns = [o["own"] for o in site["opspecs"] if o["own"] is not None]
    assert owns == [
        {"nodes": ["mul_1"], "aten_ops": ["aten.mul.Tensor"], "sources": [MULTIPLY], "differs": ["op", "line"]}
    ]
    # the viewer: the OpSpec is marked and says the same beside its handle when clicked
    (graph,) = data.build(done.out)["graphs"]
    marked = [
        (spec["op"], spec["buffer"], spec["handle_names_other"])
        for spec in graph["opspecs"]
        if spec["handle_names_other"] is not None
    ]
    assert marked == [("mul", misnamed["buffer"], lines[at + 1].strip())]


def test_on_a_2d_input_every_handle_names_its_own_op_and_line(compile_case):
    done = compile_case(f"{MODEL}:flat", "--backend", "reference", "--dtype", "float16")
    assert done.returncode == 0, done.stderr[-2000:]
    diag = _diagnostics(done.out)
    assert diag["misnamed_handles"] == [] and diag["disagreements"] == []
    assert "handle/origin disagreements: 0" in done.stdout
    assert "torch-spyre handles naming another" not in done.stdout


def test_the_time_summary_names_the_misnamed_handle_of_a_timed_kernel(compile_case, run_cli):
    done = compile_case(f"{MODEL}:batched", "--backend", "reference", "--dtype", "float16", "--profile")
    assert done.returncode == 0, done.stderr[-2000:]
    (misnamed,) = _diagnostics(done.out)["misnamed_handles"]
    (trace,) = (done.out / "profile").glob("*.trace.json")
    code, out, err = run_cli("annotate", trace, "--from", done.out, "--summary")
    assert code == 0, err
    assert (
        "  torch-spyre handles naming another op or line than their node: 1; the rows follow each kernel's stack"
        f" traces (Inductor's), not its handles ({ORIGIN_NODE_RULE})"
    ) in out.splitlines()
    (note,) = [line for line in out.splitlines() if f"OpSpec mul -> {misnamed['buffer']}" in line]
    assert note.endswith(f"says aten.linear.default at {LINEAR}; its node mul_1 is aten.mul.Tensor at {MULTIPLY}")
    code, out, err = run_cli("annotate", trace, "--from", done.out, "--summary", "--format", "json")
    doc = json.loads(out)
    jsonschema.validate(doc, json.loads((SCHEMAS / "provenance_time_summary" / "v2.schema.json").read_text()))
    assert doc["misnamed"] == [note.strip()]
