"""``compare A B`` on real compiles (issue 46 point 5): a model edited at one line, prefill
against decode (two compile ids of one folder), and one compile made twice. Each case is
compiled once per session (``compile_case``); the oracles are the compiles' own artifacts
and the profiler's own trace, read here without the project's readers."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from helpers.compare_cases import INSERTED, edited_args, model_files, phases_args  # tests/ is on sys.path


def _line_of(source: str, code: str) -> int:
    (number,) = [i for i, line in enumerate(source.splitlines(), 1) if line.strip() == code]
    return number


@pytest.fixture(scope="session")
def models(tmp_path_factory) -> dict[str, Path]:
    return model_files(tmp_path_factory)


@pytest.fixture(scope="session")
def edited(compile_case, models):
    before, after = (compile_case(*args) for args in edited_args(models))
    for case in (before, after):
        assert case.returncode == 0, case.stderr[-2000:]
    return before, after


@pytest.fixture(scope="session")
def phases(compile_case, models):
    case = compile_case(*phases_args(models))
    assert case.returncode == 0, case.stderr[-2000:]
    return case


def _json(run_cli, *args) -> tuple[int, dict]:
    code, out, err = run_cli("compare", *args, "--format", "json")
    assert code in (0, 1), err
    return code, json.loads(out)


def _by_code(doc: dict) -> dict[str, dict]:
    found = {}
    for pair in doc["lines"]:
        line = pair["a"] or pair["b"]
        assert line["code"] not in found, line["code"]
        found[line["code"]] = pair
    return found


def _user_lines(out: Path) -> set[tuple[str, int]]:
    """Every (file, line) of the model that the compile's stack traces name, read from the
    graph folders' artifact files."""
    found = set()
    for traces in out.glob("graph_*/inductor_provenance_tracking_kernel_stack_traces.json"):
        for stacks in json.loads(traces.read_text()).values():
            for stack in stacks:
                for part in stack.split('File "')[1:]:
                    file, rest = part.split('", line ', 1)
                    if file.endswith(("edited.py", "phases.py")):
                        found.add((file, int(rest.split(",", 1)[0])))
    return found


@pytest.mark.compile
def test_a_model_edited_at_one_line_changes_that_line_only(edited, models, run_cli):
    before, after = edited
    code, doc = _json(run_cli, before.out, after.out)
    assert code == 1 and not doc["same"]
    lines = _by_code(doc)
    inserted = lines.pop(INSERTED.strip())
    assert inserted["status"] == "only_b" and inserted["a"] is None
    assert inserted["b"]["line"] == _line_of(models["after"].read_text(), INSERTED.strip())
    assert any("gelu" in op for op in inserted["b"]["ops"]) and inserted["b"]["opspecs"] and inserted["b"]["kernels"]
    assert doc["lines"][0] is not None and doc["lines"][0]["status"] == "only_b"  # what changed comes first
    # every other line the model made is matched with itself, below the insertion one further down
    assert {(Path(f).name, n) for f, n in _user_lines(before.out)} == {
        ("edited.py", p["a"]["line"]) for p in lines.values()
    }
    text_before, text_after = models["before"].read_text(), models["after"].read_text()
    for code_text, pair in lines.items():
        assert pair["status"] in ("same", "regrouped") and set(pair["changes"]) <= {"kernels"}, pair
        assert pair["a"]["line"] == _line_of(text_before, code_text)
        assert pair["b"]["line"] == _line_of(text_after, code_text)
        assert pair["a"]["opspecs"] == pair["b"]["opspecs"] and pair["a"]["ops"] == pair["b"]["ops"]
    assert doc["files"] == [{"a": str(models["before"]), "b": str(models["after"])}]
    assert doc["counts"]["only_b"] == 1 and doc["counts"]["changed"] == doc["counts"]["only_a"] == 0


@pytest.mark.compile
def test_prefill_against_decode_two_compile_ids_of_one_folder(phases, models, run_cli):
    source = models["phases"].read_text()
    code, doc = _json(run_cli, f"{phases.out}:0/0", f"{phases.out}:[0/1]")
    assert code == 1
    assert [g.split()[1] for g in doc["a"]["graphs"]] == ["0/0"] and [g.split()[1] for g in doc["b"]["graphs"]] == [
        "0/1"
    ]
    lines = _by_code(doc)
    prefill, decode = lines.pop("h = torch.softmax(h, dim=1)"), lines.pop("h = torch.relu(h)")
    assert prefill["status"] == "only_a" and prefill["a"]["line"] == _line_of(source, "h = torch.softmax(h, dim=1)")
    assert decode["status"] == "only_b" and decode["b"]["line"] == _line_of(source, "h = torch.relu(h)")
    assert set(lines) == {"h = self.proj(x)", "return self.out(h)"}
    for code_text, pair in lines.items():  # one file, one text: the shared lines pair at their numbers
        assert pair["a"]["line"] == pair["b"]["line"] == _line_of(source, code_text)
        # a token against four: the shared lines became OpSpecs of other iteration spaces
        assert "opspecs" in pair["changes"] and "code" not in pair["changes"]


@pytest.mark.compile
def test_prefill_against_decode_times_each_line_from_its_own_compile(phases, run_cli):
    """Each line's time is the time of the kernel events that ran its compile's call sites
    holding it, read from the annotated trace ``compile --profile`` wrote beside the log."""
    (trace,) = (phases.out / "profile").glob("*.trace.json")
    events = [
        e for e in json.loads(trace.read_text())["traceEvents"] if "spyre_provenance_graph" in (e.get("args") or {})
    ]
    assert len(events) >= 2
    _, doc = _json(run_cli, f"{phases.out}:0/0", f"{phases.out}:0-1")
    for label in ("a", "b"):
        assert doc[label]["traces"] == [str(trace)]
        (graph,) = doc[label]["graphs"]
        for pair in doc["lines"]:
            line = pair[label]
            if line is None:
                continue
            ran = [
                e["dur"]
                for e in events
                if e["args"]["spyre_provenance_graph"] == graph
                and f"{line['file']}:{line['line']}" in e["args"]["spyre_provenance_source"]
            ]
            assert ran and line["time_us"] == pytest.approx(sum(ran))
    for pair in doc["lines"]:
        if pair["a"] and pair["b"]:
            assert pair["time_change_us"] == pytest.approx(pair["b"]["time_us"] - pair["a"]["time_us"])
    code, out, _ = run_cli("compare", f"{phases.out}:0/0", f"{phases.out}:0/1", "--no-trace", "--format", "json")
    assert all(p["time_change_us"] is None for p in json.loads(out)["lines"]) and code == 1


@pytest.mark.compile
def test_one_compile_made_twice_is_the_same(compile_case, run_cli):
    first, second = compile_case("mlp"), compile_case("mlp", "--no-tlparse")
    assert first.returncode == second.returncode == 0
    code, doc = _json(run_cli, first.out, second.out)
    assert code == 0 and doc["same"] and doc["lines"]
    assert doc["counts"]["same"] == len(doc["lines"])
    assert all(p["a"]["opspecs"] and p["a"]["kernels"] for p in doc["lines"])
    code, out, err = run_cli("compare", first.out, second.out)
    assert code == 0 and "the compiles are the same" in out, err
    code, out, _ = run_cli("compare", first.out, second.out, "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert code == 0 and len(rows) == len(doc["lines"]) and {r["status"] for r in rows} == {"same"}


@pytest.mark.compile
def test_a_compile_id_the_folder_lacks_is_unusable(phases, run_cli):
    code, out, err = run_cli("compare", f"{phases.out}:0/9", phases.out)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "no compile 0/9 there (it holds 0/0, 0/1)" in err


@pytest.mark.compile
def test_stock_inductor_against_the_reference_backend_compares_kernels(compile_case, run_cli):
    """Stock Inductor records no OpSpecs: a line's kernels and their ATen ops are what it
    became, and a kernel of another name is a change of the line."""
    stock, reference = compile_case("mlp", "--backend", "inductor"), compile_case("mlp")
    assert stock.returncode == reference.returncode == 0
    code, doc = _json(run_cli, stock.out, reference.out)
    assert code == 1 and doc["lines"]
    mapping = json.loads(next(stock.out.glob("graph_*/inductor_provenance_tracking_node_mappings.json")).read_text())
    listed = set()
    for pair in doc["lines"]:
        assert pair["status"] == "changed" and "kernels" in pair["changes"] and "code" not in pair["changes"]
        assert pair["a"]["line"] == pair["b"]["line"] and pair["a"]["opspecs"] == [] and pair["b"]["opspecs"]
        assert pair["a"]["ops"] and all(op.startswith("aten.") for op in pair["a"]["ops"])
        listed |= {k["call_site"] for k in pair["a"]["kernels"]}
    assert listed == set(mapping["cppCodeToPost"])  # every call site of stock Inductor's under some line
