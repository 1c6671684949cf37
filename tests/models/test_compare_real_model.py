"""``compare`` on a real model, prefill against decode (issue 56 point 6): a two-layer Granite
from transformers (tests/zoo/hf_models.py, random weights, never a download) called with its
prompt and then one token with the KV cache, two compiles of one folder on stock Inductor
(no OpSpecs: a line's own ops come from the post-grad nodes carrying it). The decode step's
own lines (the cache's two ``torch.cat``) are reported with their ops; a line whose own ops
are the same is not ``changed`` because the kernel it was fused into changed; a kernel called
once per layer is named once with its count; the default text fits a screen, and ``--all``,
JSON and CSV keep every line. The oracles read the compile's log and graph folders here,
without the project's readers."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest

from helpers.where import ZOO  # tests/ is on sys.path

pytest.importorskip("transformers", reason="the real-model zoo needs the [models] extra")

pytestmark = [pytest.mark.compile, pytest.mark.models]

SCREEN = 60
_HEADER = re.compile(r'"name": "inductor_post_grad_graph".*"frame_compile_id": (\d+)')
_FRAME = re.compile(r"^ {8}# File: (.+):(\d+) in .+?, code: ")
_NODE = re.compile(r'^ {8}(\w+)(?:: "[^"]*")? = torch\.ops\.(\w+)\.(\w+)')


@pytest.fixture(scope="module")
def decoded(compile_case):
    case = compile_case(f"{ZOO / 'hf_models.py'}:granite_decode", "--backend", "inductor", "--no-tlparse")
    assert case.returncode == 0, case.stderr[-2000:]
    return case


@pytest.fixture
def compared(decoded, run_cli):
    """(JSON document, default text, --all text, CSV rows) of 0/0 against 0/1 (a second each)."""
    sides = (f"{decoded.out}:0/0", f"{decoded.out}:0/1")
    code, out, err = run_cli("compare", *sides, "--format", "json")
    assert code == 1, err
    texts = [run_cli("compare", *sides, *more)[1] for more in ((), ("--all",), ("--format", "csv"))]
    return json.loads(out), texts[0], texts[1], list(csv.DictReader(io.StringIO(texts[2])))


def _own_ops(out: Path) -> dict[str, dict[tuple[str, int], set[str]]]:
    """Per compile id (``0/0``), each line's own ops: the ops of the kernels' post-grad nodes
    printed under that line's frame in the log's post-grad graph."""
    (log,) = out.glob("trace/*.log")
    graphs: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in log.read_text().splitlines():
        header = _HEADER.search(line)
        if header:
            current = graphs.setdefault(f"0/{header[1]}", [])
        elif line.startswith("\t") and current is not None:
            current.append(line[1:])
        elif not line.startswith("\t"):
            current = None
    found = {}
    for compile_id, text in graphs.items():
        (folder,) = out.glob(f"graph_*_{compile_id.replace('/', '-')}_inference")
        mapping = json.loads((folder / "inductor_provenance_tracking_node_mappings.json").read_text())
        in_kernels = {n for nodes in mapping["cppCodeToPost"].values() for n in nodes}
        lines: dict[tuple[str, int], set[str]] = {}
        where = None
        for printed in text:
            frame, node = _FRAME.match(printed), _NODE.match(printed)
            if frame:
                where = (frame[1], int(frame[2]))
            elif node and where and node[1] in in_kernels:
                lines.setdefault(where, set()).add(f"{node[2]}.{node[3]}")
        found[compile_id] = lines
    return found


def _trace_lines(out: Path, compile_id: str) -> set[tuple[str, int]]:
    """The innermost frames of a compile's kernel stack traces (none is torch's here)."""
    (folder,) = out.glob(f"graph_*_{compile_id.replace('/', '-')}_inference")
    found = set()
    for stacks in json.loads((folder / "inductor_provenance_tracking_kernel_stack_traces.json").read_text()).values():
        for stack in stacks:
            file, rest = stack.split('File "')[-1].split('", line ', 1)
            found.add((file, int(rest.split(",", 1)[0])))
    return found


def test_the_lines_only_decode_has_are_reported_with_their_own_ops(decoded, compared):
    doc, screen, _, _ = compared
    only_decode = _trace_lines(decoded.out, "0/1") - _trace_lines(decoded.out, "0/0")
    cats = {w for w in only_decode if w[0].endswith("cache_utils.py")}
    assert len(cats) == 2, only_decode  # the KV cache's keys and values
    own = _own_ops(decoded.out)["0/1"]
    reported = {(p["b"]["file"], p["b"]["line"]): p for p in doc["lines"] if p["status"] == "only_b"}
    assert set(reported) == only_decode
    for where in cats:
        line = reported[where]["b"]
        assert line["ops_from"] == "post-grad nodes" and set(line["ops"]) == own[where] and "aten.cat" in own[where]
        assert f"{Path(where[0]).name}:{where[1]}" in screen
        assert f"only in B   {Path(where[0]).name}:{where[1]}" in screen


def test_a_line_is_changed_by_its_own_ops_not_by_its_kernel(decoded, compared):
    doc, screen, _, _ = compared
    own = _own_ops(decoded.out)
    regrouped = 0
    for pair in doc["lines"]:
        a, b = pair["a"], pair["b"]
        if a is None or b is None:
            continue
        where_a, where_b = (a["file"], a["line"]), (b["file"], b["line"])
        same_ops = own["0/0"].get(where_a, set()) == own["0/1"].get(where_b, set())
        assert {a["ops_from"], b["ops_from"]} == {"post-grad nodes"}
        assert ("ops" in pair["changes"]) == (not same_ops), pair
        if same_ops and "code" not in pair["changes"]:
            assert pair["status"] in ("same", "regrouped"), pair
            assert (pair["status"] == "regrouped") == ("kernels" in pair["changes"])
            regrouped += pair["status"] == "regrouped"
        else:
            assert pair["status"] == "changed"
    # prefill and decode fuse differently: lines whose own work is the same were regrouped
    assert regrouped > 0 and doc["counts"]["regrouped"] == regrouped
    assert "regrouped: " in screen


def test_a_kernel_called_once_per_layer_is_named_once_with_its_count(compared):
    doc, screen, everything, _ = compared
    (cat,) = [p["b"] for p in doc["lines"] if p["status"] == "only_b" and "self.keys" in p["b"]["code"]]
    names = [k["kernel"] for k in cat["kernels"]]
    repeated = [n for n in dict.fromkeys(names) if names.count(n) == 2]
    assert repeated  # two layers: the cache's cat is in one kernel called by each
    for name in repeated:
        assert f"{name} ×2" in everything and f"{name}:" not in everything
    rows = screen.splitlines()
    at = next(i for i, r in enumerate(rows) if r.startswith(f"only in B   cache_utils.py:{cat['line']}"))
    assert rows[at + 1].count("×2") == len(repeated) and all(n[-12:] in rows[at + 1] for n in repeated)


def test_the_default_text_fits_a_screen_and_the_rest_stays_complete(decoded, compared):
    doc, screen, everything, rows = compared
    assert len(screen.splitlines()) <= SCREEN, screen
    assert len(everything.splitlines()) > len(screen.splitlines())
    assert sum(doc["counts"].values()) == len(doc["lines"]) == len(rows)
    for pair in doc["lines"]:
        line = pair["a"] or pair["b"]
        assert f"{line['file']}:{line['line']}" in everything
    calls = {k["call_site"] for p in doc["lines"] for s in ("a", "b") if p[s] for k in p[s]["kernels"]}
    for compile_id in ("0-0", "0-1"):
        (folder,) = decoded.out.glob(f"graph_*_{compile_id}_inference")
        mapping = json.loads((folder / "inductor_provenance_tracking_node_mappings.json").read_text())
        assert set(mapping["cppCodeToPost"]) <= calls  # every call site under some line of the JSON
    assert {r["ops_from_b"] for r in rows if r["status"] == "only_b"} == {"post-grad nodes"}
    if "not shown: " in screen:
        assert "--all lists every line" in screen.splitlines()[-1]


def test_on_the_reference_backend_the_screen_fits_and_shows_the_cache_lines_first(compile_case, run_cli):
    """With OpSpecs every shared line of prefill and decode changed its iteration spaces
    (a shape counts): the screen still fits, and the decode step's own lines, on one side
    only, are shown before the lines whose OpSpecs alone changed."""
    case = compile_case(f"{ZOO / 'hf_models.py'}:granite_decode", "--no-tlparse")
    assert case.returncode == 0, case.stderr[-2000:]
    sides = (f"{case.out}:0/0", f"{case.out}:0/1")
    code, out, err = run_cli("compare", *sides, "--format", "json")
    assert code == 1, err
    doc = json.loads(out)
    only_b = [p["b"] for p in doc["lines"] if p["status"] == "only_b"]
    assert {Path(u["file"]).name for u in only_b} == {"cache_utils.py"} and all(u["opspecs"] for u in only_b)
    screen = run_cli("compare", *sides)[1].splitlines()
    assert len(screen) <= SCREEN, "\n".join(screen)
    shown = [i for i, r in enumerate(screen) if r.startswith("only in B   cache_utils.py:")]
    first_changed = next(i for i, r in enumerate(screen) if r.startswith("changed "))
    assert len(shown) == len(only_b) and max(shown) < first_changed
    everything = run_cli("compare", *sides, "--all")[1]
    assert all(f"{(p['a'] or p['b'])['file']}:{(p['a'] or p['b'])['line']}" in everything for p in doc["lines"])
