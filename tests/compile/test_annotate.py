"""``compile --profile`` and ``spyre-provenance annotate``: every kernel event of a profiled
run carries its provenance, checked against the artifact files as written; the output is
Trace Event Format JSON read back with the standard library alone; hostile traces are one
line, exit 2, and leave no output file."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest

from helpers.where import ZOO  # tests/ is on sys.path
from spyre_provenance.model.names import KERNEL_STACK_TRACES, NODE_MAPPINGS

CASES = [
    ("mlp", "--profile"),
    ("mlp", "--train", "--profile"),
    ("mlp", "--backend", "inductor", "--profile"),
    ("residual", "--backend", "inductor", "--train", "--profile"),
    # the zoo's (tests/models/test_zoo.py): one kernel called at two call sites, forward and backward
    (f"{ZOO / 'models.py'}:shared_block", "--backend", "reference", "--train", "--profile"),
]
_PROFILED = re.compile(r"graph_[0-9]+_(?P<kernel>.+)")
# Trace Event Format: the phases and, per phase, the fields an event must carry
_PHASES = set("BEXiICbnesftPNODMRc()Vv")
_TIMED = set("BEXiICbnesft")


def check_trace_event_format(doc: object) -> list[dict]:
    """The JSON Object Format of the Trace Event Format (the document chrome://tracing and
    Perfetto read): an object with a ``traceEvents`` array of events, each with a ``ph``
    and a ``name``, a ``ts``/``pid``/``tid`` when timed, a ``dur`` when complete, ``args``
    an object when present."""
    assert isinstance(doc, dict) and isinstance(doc.get("traceEvents"), list)
    for event in doc["traceEvents"]:
        assert isinstance(event, dict) and isinstance(event.get("name"), str), event
        assert event.get("ph") in _PHASES, event
        if event["ph"] in _TIMED:
            assert isinstance(event.get("ts"), (int, float)), event
            assert isinstance(event.get("pid"), (int, str)) and isinstance(event.get("tid"), (int, str)), event
        if event["ph"] == "X":
            assert isinstance(event.get("dur"), (int, float)) and event["dur"] >= 0, event
        assert isinstance(event.get("args", {}), dict), event
    return doc["traceEvents"]


def _graphs(out: Path) -> dict[str, list[tuple[dict, dict]]]:
    """graph kind -> [(mapping, stack traces)] as written in the graph folders."""
    found: dict[str, list[tuple[dict, dict]]] = {}
    for folder in sorted(out.glob("graph_*")):
        mapping = json.loads((folder / f"{NODE_MAPPINGS}.json").read_text())
        traces_file = folder / f"{KERNEL_STACK_TRACES}.json"
        traces = json.loads(traces_file.read_text()) if traces_file.is_file() else {}
        found.setdefault(folder.name.rsplit("_", 1)[1], []).append((mapping, traces))
    return found


@pytest.mark.compile
@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(c))
def test_every_kernel_event_of_a_profiled_run_is_annotated(compile_case, case):
    done = compile_case(*case)
    assert done.returncode == 0, done.stderr[-2000:]
    (line,) = [x for x in done.stdout.splitlines() if "profile: annotated" in x]
    counted = re.search(r"annotated ([0-9]+) of ([0-9]+) kernel events", line)
    assert counted and counted[1] == counted[2] and int(counted[1]) > 0, line
    (log,) = (done.out / "trace").glob("*.log")
    model = log.stem
    events = check_trace_event_format(json.loads((done.out / "profile" / f"{model}.trace.json").read_text()))
    graphs = _graphs(done.out)
    kernel_events = [e for e in events if e["ph"] == "X" and _PROFILED.fullmatch(e["name"])]
    assert len(kernel_events) == int(counted[2])
    for event in kernel_events:
        kernel = _PROFILED.fullmatch(event["name"])["kernel"]
        if "inductor" not in case:
            assert kernel.startswith("sdsc_")  # the reference backend's kernels, by their Spyre names
        args = event["args"]
        key = args["spyre_provenance_call_site"]
        assert key.rpartition(":")[0] == kernel
        _, compile_id, kind = args["spyre_provenance_graph"].split(" ")
        assert compile_id == "0/0"
        ((mapping, traces),) = [(m, t) for m, t in graphs[kind] if key in m["cppCodeToPost"]]
        post = mapping["cppCodeToPost"][key]
        assert args["spyre_provenance_post_grad_nodes"] == post
        assert args["spyre_provenance_pre_grad_nodes"] == list(
            dict.fromkeys(p for n in post for p in mapping["postToPre"].get(n, []))
        )
        assert args["stack"] == traces.get(key, [])  # upstream's field: the kernel's stack traces
        frames = {f"{f}:{n}" for t in args["stack"] for f, n in re.findall(r'File "([^"]+)", line ([0-9]+)', t)}
        assert set(args["spyre_provenance_source"]) == frames
    if "--train" in case:
        kinds = [e["args"]["spyre_provenance_graph"].split(" ")[2] for e in kernel_events]
        assert kinds == sorted(kinds, key=["forward", "backward"].index)  # forward's kernels run first


@pytest.mark.compile
def test_annotate_again_and_gzipped_gives_the_same_events(compile_case, run_cli, tmp_path):
    done = compile_case("mlp", "--train", "--profile")
    trace = done.out / "profile" / "mlp.trace.json"
    packed = tmp_path / "mlp.trace.json.gz"
    packed.write_bytes(gzip.compress(trace.read_bytes()))
    code, out, err = run_cli("annotate", packed, "--from", done.out, "-o", tmp_path / "again.json.gz")
    assert code == 0 and err == "" and out.startswith("annotated ")
    again = json.loads(gzip.decompress((tmp_path / "again.json.gz").read_bytes()))
    before = json.loads(trace.read_text())
    assert again == before  # annotating twice changes nothing; the other members kept, in order
    assert list(again) == list(before)


@pytest.mark.compile
def test_unknown_kernel_events_are_counted_listed_and_kept(compile_case, run_cli, tmp_path):
    done = compile_case("mlp", "--profile")
    trace = tmp_path / "t.json"
    events = [
        {
            "ph": "X",
            "cat": "cpu_op",
            "name": "graph_0_cpp_fused_not_here_9",
            "pid": 1,
            "tid": 1,
            "ts": 1,
            "dur": 2,
            "args": {},
        },
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 3, "dur": 1},
    ]
    trace.write_text(json.dumps({"traceEvents": events, "traceName": "x"}))
    code, out, _ = run_cli("annotate", trace, "--from", done.out, "-o", tmp_path / "o.json")
    assert code == 1 and "annotated 0 of 1 kernel events" in out and "graph_0_cpp_fused_not_here_9 x1" in out
    assert json.loads((tmp_path / "o.json").read_text()) == {"traceEvents": events, "traceName": "x"}


def _hostile(tmp_path: Path) -> dict[str, Path]:
    good = {"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 1}] * 50, "traceName": "t"}
    text = json.dumps(good)
    files = {
        "truncated": text[: len(text) // 2],
        "not-json": "this is no trace\n",
        "events-not-a-list": json.dumps({"traceEvents": {"ph": "X"}}),
        "event-without-name": json.dumps({"traceEvents": [{"ph": "X", "ts": 1, "pid": 1, "tid": 1}]}),
        "event-not-an-object": json.dumps({"traceEvents": [1, 2]}),
        "top-level-array": json.dumps([{"ph": "X", "name": "a"}]),
        "no-events": json.dumps({"traceName": "t"}),
        "text-after": text + " {}",
    }
    found = {}
    for name, content in files.items():
        found[name] = tmp_path / f"{name}.json"
        found[name].write_text(content)
    found["bad-gzip"] = tmp_path / "bad.json.gz"
    found["bad-gzip"].write_bytes(b"\x1f\x8b" + b"not really gzip" * 10)
    return found


@pytest.fixture(scope="module")
def any_out(tmp_path_factory, data_dir) -> Path:
    """A folder of provenance to annotate against: the seed's TORCH_TRACE log."""
    folder = tmp_path_factory.mktemp("from")
    (folder / "seed_mlp.log").write_bytes((data_dir / "logs" / "seed_mlp.log").read_bytes())
    return folder


@pytest.mark.parametrize(
    "name",
    [
        "truncated",
        "not-json",
        "events-not-a-list",
        "event-without-name",
        "event-not-an-object",
        "top-level-array",
        "no-events",
        "text-after",
        "bad-gzip",
    ],
)
def test_hostile_traces_are_one_line_and_leave_nothing(run_cli, tmp_path, any_out, name):
    trace = _hostile(tmp_path)[name]
    target = tmp_path / "out" / "annotated.json"
    target.parent.mkdir()
    code, out, err = run_cli("annotate", trace, "--from", any_out, "-o", target)
    assert code == 2 and out == "", (name, out, err)
    assert len(err.strip().splitlines()) == 1 and str(trace) in err, err
    assert list(target.parent.iterdir()) == []  # no output, no temporary left behind


@pytest.mark.big
def test_a_gigabyte_on_one_line_is_refused_without_reading_it_all(run_cli, tmp_path, any_out):
    trace = tmp_path / "huge.json"
    with open(trace, "wb") as fh:  # written in chunks: the test never holds it either
        fh.write(b'{"traceEvents": [{"ph": "X", "name": "')
        chunk = b"a" * (1 << 20)
        fh.writelines(chunk for _ in range(1024))
    target = tmp_path / "out" / "annotated.json"
    target.parent.mkdir()
    code, _, err = run_cli("annotate", trace, "--from", any_out, "-o", target)
    assert code == 2 and "MiB" in err and len(err.strip().splitlines()) == 1, err
    assert list(target.parent.iterdir()) == []


def test_a_profiled_run_that_fails_is_one_line_and_leaves_no_trace(tmp_path):
    from spyre_provenance.compile import profile as profiled_run
    from spyre_provenance.model.layout import Layout
    from spyre_provenance.viewer import pages

    profiler = profiled_run.Profiler(Layout(tmp_path, "mlp"))

    def rerun():
        raise RuntimeError("device lost\nmore detail")

    profiler.after_run(rerun)  # the compile goes on: nothing raised
    written = pages.write(tmp_path, tmp_path, tlparse=None, viewer=False, logs=[], profile=profiler.run)
    assert written.profile is not None
    assert written.profile.lines == ["  PROFILE NOT WRITTEN: the profiled run failed: RuntimeError: device lost"]
    assert not profiler.raw.exists() and not Layout(tmp_path, "mlp").profile_trace.exists()
