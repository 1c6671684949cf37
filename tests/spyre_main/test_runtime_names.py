"""Run time on torch-spyre main's real compiles: its kernel provenance keys and event names,
the project's rule for them checked against torch-spyre's own descriptor, every name form
an engineer meets resolved to the kernel's source line, and a trace shaped as torch-spyre's
profiler writes one annotated with torch-spyre's own fields unchanged."""

from __future__ import annotations

import copy
import importlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.compute_step import cb_name  # tests/ is on sys.path
from helpers.where import ZOO
from spyre_provenance.model import kernel_keys
from spyre_provenance.model.frames import frames, is_user_frame
from spyre_provenance.runtime import index as kernel_index
from spyre_provenance.runtime import kernel_names, time_summary
from spyre_provenance.runtime.annotate import PREFIX, annotate
from spyre_provenance.runtime.lookup import lookup

pytestmark = pytest.mark.compile

#: the seed MLP and the zoo at Spyre's width (``tests/zoo/spyre_models.py``, where present):
#: what torch-spyre main compiles here in fp16 (REFERENCE.md 4.1 lists what stops the rest)
MODELS = ["mlp"]
if (ZOO / "spyre_models.py").is_file():
    sys.path.insert(0, str(ZOO))
    MODELS += [f"{ZOO / 'spyre_models.py'}:{name}" for name in importlib.import_module("spyre_models").SPYRE_ZOO]
    sys.path.remove(str(ZOO))


def _graphs(case) -> list[tuple[dict, dict, dict]]:
    """(OpSpec artifact, node mappings, stack traces) of each graph folder."""
    found = []
    for graph in case.graph_dirs():
        read = {p.stem: json.loads(p.read_text()) for p in graph.glob("*.json")}
        if "spyre_opspec_debug_handles" in read:
            found.append(
                (
                    read["spyre_opspec_debug_handles"],
                    read["inductor_provenance_tracking_node_mappings"],
                    read.get("inductor_provenance_tracking_kernel_stack_traces", {}),
                )
            )
    return found


def _aten_ops(opspecs: dict, key: str) -> list[str]:
    """The ATen ops of a call site's handles and all they were fused from (the descriptor's)."""
    todo = [s["debug_handle"] for s in opspecs["kernels"][key] if s["debug_handle"]]
    seen, ops = set(), set()
    while todo:
        hid = todo.pop()
        if hid in seen:
            continue
        seen.add(hid)
        handle = opspecs["handles"][hid]
        if handle["aten_op"]:
            ops.add(handle["aten_op"])
        todo += handle["fused_from"]
    return sorted(ops)


def _handle_ids(opspecs: dict, key: str) -> list[str]:
    return list(dict.fromkeys(s["debug_handle"] for s in opspecs["kernels"][key] if s["debug_handle"]))


def _user_line(traces: list[str]) -> str:
    """The innermost user frame of a call site's first stack trace: the line the mapping states."""
    user = [f for f in frames(traces[0]) if is_user_frame(f.file)]
    return f"{user[-1].file}:{user[-1].line}"


@pytest.mark.parametrize("spec", MODELS, ids=lambda s: s.rsplit(":", 1)[-1])
def test_the_rule_is_torch_spyre_descriptor(torch_spyre_python, spec):
    """On torch-spyre's own OpSpecs of a real compile, the project's key, handle ids and
    event name equal what torch-spyre's ``SpyreAsyncCompile.sdsc`` gives its runner."""
    seen = torch_spyre_python(
        f"""
        import json, torch
        from spyre_main import route
        from spyre_provenance.compile.eager import load
        from spyre_provenance.model import kernel_keys
        from torch_spyre.execution.async_compile import SpyreAsyncCompile

        seen = []
        original = SpyreAsyncCompile.sdsc

        def sdsc(self, kernel_name, specs, pool_size=0):
            runner = original(self, kernel_name, specs, pool_size=pool_size)
            d = runner.kernel_provenance
            seen.append({{
                "kernel": kernel_name,
                "theirs": [d.key, list(d.debug_handle_ids), runner.profiler_event_name],
                "ours": [kernel_keys.bundle_key(specs), kernel_keys.handle_ids(specs),
                         kernel_keys.event_name(d.aten_ops, kernel_keys.bundle_key(specs))],
            }})
            return runner

        SpyreAsyncCompile.sdsc = sdsc
        loaded = load({spec!r}, "float16")
        torch._dynamo.reset()
        with torch.no_grad():
            torch.compile(loaded.module, backend=route.spyre_inductor)(*loaded.calls[0])
        print(json.dumps(seen))
        """
    )
    assert seen, "torch-spyre built no kernel"
    for kernel in seen:
        assert kernel["ours"] == kernel["theirs"], kernel["kernel"]


@pytest.fixture(scope="module", params=MODELS, ids=lambda s: s.rsplit(":", 1)[-1])
def compiled(request, spyre_main_case):
    case = spyre_main_case(request.param)
    if case.returncode == 2:  # torch-spyre refused it here: the zoo's own tests report that
        pytest.skip(f"torch-spyre main does not compile it here: {case.stderr.strip().splitlines()[-1][:300]}")
    assert case.returncode in (0, 1), case.stderr[-3000:]
    graphs = _graphs(case)
    assert graphs, case.stdout[-2000:]
    return case, graphs


def test_each_call_site_records_its_key_and_folder(compiled):
    case, graphs = compiled
    folders = {b.name for b in case.bundle_dirs()}
    for opspecs, mapping, _ in graphs:
        assert opspecs["version"] == 2 and set(opspecs["bundles"]) == set(opspecs["kernels"])
        for key, bundle in opspecs["bundles"].items():
            assert kernel_keys.KEY_RE.fullmatch(bundle["provenance_key"]), key
            assert bundle["folder"] in folders, key  # torch-spyre's own folder, as it wrote it
            assert key in mapping["cppCodeToPost"]


def test_every_name_form_resolves_to_the_mapping_line(compiled):
    case, graphs = compiled
    index = kernel_index.build([case.out])
    (log,) = (case.out / "trace").glob("*.log")
    for opspecs, _, traces in graphs:
        for key, bundle in opspecs["bundles"].items():
            kernel = key.rpartition(":")[0]
            event = kernel_keys.event_name(_aten_ops(opspecs, key), bundle["provenance_key"])
            folder = bundle["folder"]
            one_kernel = [
                f"{event}#3",
                event,
                kernel_names.renamed(f"{event}#3"),  # as acelyzer 1.3 renames it
                bundle["provenance_key"],
                folder,
                folder.split("_", 1)[1],  # as a device error prints it: <kernel>_<mkdtemp 8>
                cb_name(
                    str(case.inductor_cache / "inductor-spyre" / folder), 2
                ),  # a compute step's, no provenance name
                *(f"{folder} {kind}" for kind in ("Cmpt Exec", "Cmpt Prep", "DmaI", "DmaO")),
            ]
            by_name = [f"{span}{kernel}" for span in ("launch_jobplan:", "prepare_kernel:", "dxp_standalone:")]
            document = lookup(one_kernel + by_name, index)
            line = _user_line(traces[key])
            for answer in document.answers:
                sites = [(m, s) for m in answer.matches for s in m.call_sites if s.key == key]
                assert sites, answer.query
                match, site = sites[0]
                assert f"{site.source[0].file}:{site.source[0].line}" == line, answer.query
                assert match.model == log.stem  # the model's label, as compile --out named it
                if answer.query in one_kernel:
                    assert len(answer.matches) == 1, answer.query  # one kernel, one answer
                    assert site.provenance_key == bundle["provenance_key"] and site.bundle_folder == folder


def _profiler_trace(graphs: list[tuple[dict, dict, dict]]) -> dict:
    """A trace shaped as torch.profiler exports torch-spyre's (REFERENCE.md 6): per kernel
    its CPU span ``launch_jobplan:<kernel>`` inside the compiled region, and the device
    event as ``AiuptiActivityHandlers.cpp`` fills it (a CONCURRENT_KERNEL activity: cat
    ``kernel``, ``#<step>`` after the name, ``provenance_key`` quoted, ``debug_handles`` a
    JSON array of strings)."""
    events = [
        {"ph": "X", "cat": "cpu_op", "name": "Torch-Compiled Region: 0/0", "pid": 7, "tid": 7, "ts": 0, "dur": 10_000}
    ]
    step = 0
    for opspecs, _, _ in graphs:
        for key, bundle in opspecs["bundles"].items():
            step += 1
            kernel = key.rpartition(":")[0]
            events.append(
                {
                    "ph": "X",
                    "cat": "user_annotation",
                    "name": f"launch_jobplan:{kernel}",
                    "pid": 7,
                    "tid": 7,
                    "ts": 10 * step,
                    "dur": 5,
                    "args": {"External id": step},
                }
            )
            events.append(
                {
                    "ph": "X",
                    "cat": "kernel",
                    "name": kernel_keys.event_name(_aten_ops(opspecs, key), bundle["provenance_key"]) + f"#{step}",
                    "pid": 0,
                    "tid": 1,
                    "ts": 10 * step + 2,
                    "dur": 3 + step,
                    "args": {
                        "queued": 0,
                        "submitted": 0,
                        "device": 0,
                        "stream": 1,
                        "context": "0",
                        "correlation": step,
                        "provenance_key": bundle["provenance_key"],
                        "debug_handles": _handle_ids(opspecs, key),
                    },
                }
            )
    return {"schemaVersion": 1, "deviceProperties": [], "traceEvents": events, "traceName": "spyre"}


def test_a_torch_spyre_trace_is_annotated_with_its_fields_unchanged(compiled, tmp_path):
    case, graphs = compiled
    raw = _profiler_trace(graphs)
    (tmp_path / "t.json").write_text(json.dumps(raw))
    summary = annotate(tmp_path / "t.json", kernel_index.build([case.out]), tmp_path / "a.json")
    assert summary.annotated == summary.kernel_events == len(raw["traceEvents"]) - 1
    done = json.loads((tmp_path / "a.json").read_text())["traceEvents"]
    for before, after in zip(raw["traceEvents"], done, strict=True):
        ours = {k: v for k, v in after.get("args", {}).items() if k.startswith(PREFIX) or k == "stack"}
        assert {k: v for k, v in after.get("args", {}).items() if k not in ours} == before.get("args", {})
        if before["cat"] == "kernel":
            assert after["args"][f"{PREFIX}bundle"]["provenance_key"] == before["args"]["provenance_key"]
            assert ours["stack"] and ours[f"{PREFIX}source"]


def test_device_events_named_by_their_cb_name_are_annotated(compiled, tmp_path):
    """A kernel without a provenance name: its device event is named by its compute step's
    ``cb_name`` (``<bundle folder>/spyreCodeDir/bundle.mlir#<step>``) and carries no key or
    handles; annotate places it by the bundle folder, on the call site's source line."""
    case, graphs = compiled
    raw = _profiler_trace(graphs)
    folders = {
        kernel_keys.event_name(_aten_ops(opspecs, key), bundle["provenance_key"]): (key, bundle["folder"], traces)
        for opspecs, _, traces in graphs
        for key, bundle in opspecs["bundles"].items()
    }
    expected = {}
    for event in raw["traceEvents"]:
        if event["cat"] == "kernel":
            key, folder, traces = folders[event["name"].rsplit("#", 1)[0]]
            event["name"] = cb_name(str(case.inductor_cache / "inductor-spyre" / folder), 0)
            event["args"] = {k: v for k, v in event["args"].items() if k not in ("provenance_key", "debug_handles")}
            expected[event["name"]] = _user_line(traces[key])
    (tmp_path / "t.json").write_text(json.dumps(raw))
    summary = annotate(tmp_path / "t.json", kernel_index.build([case.out]), tmp_path / "a.json")
    assert summary.annotated == summary.kernel_events == len(raw["traceEvents"]) - 1
    for event in json.loads((tmp_path / "a.json").read_text())["traceEvents"]:
        if event["cat"] == "kernel":
            source = event["args"][f"{PREFIX}source"]
            assert expected[event["name"]] in source, (event["name"], source)


def test_a_trace_of_another_build_is_reported_not_annotated(compiled, tmp_path):
    case, graphs = compiled
    raw = _profiler_trace(graphs)
    device = [e for e in raw["traceEvents"] if e["cat"] == "kernel"]
    other = copy.deepcopy(raw)
    changed = [e for e in other["traceEvents"] if e["cat"] == "kernel"]
    changed[0]["args"]["debug_handles"] = list(reversed(changed[0]["args"]["debug_handles"])) + ["1"]
    (tmp_path / "t.json").write_text(json.dumps(other))
    summary = annotate(tmp_path / "t.json", kernel_index.build([case.out]), tmp_path / "a.json")
    assert summary.annotated == summary.kernel_events - 1
    ((name, count),) = summary.mismatched.items()
    assert count == 1 and name.startswith(device[0]["name"]) and "another build" in name
    assert "another build" in summary.line()


def test_acelyzer_keeps_every_provenance_field(compiled, tmp_path):
    """IBM's trace analyzer, the real one (``aiu-trace-analyzer`` from PyPI), processes an
    annotated torch-spyre trace: each kernel event comes out with torch-spyre's fields and
    every field ``annotate`` added, unchanged."""
    acelyzer = shutil.which("acelyzer", path=str(Path(sys.executable).parent)) or shutil.which("acelyzer")
    assert acelyzer, "acelyzer is in the test extra: pip install -e '.[test]'"
    case, graphs = compiled
    (tmp_path / "t.json").write_text(json.dumps(_profiler_trace(graphs)))
    annotate(tmp_path / "t.json", kernel_index.build([case.out]), tmp_path / "annotated.json")
    annotated = [
        e for e in json.loads((tmp_path / "annotated.json").read_text())["traceEvents"] if e["cat"] == "kernel"
    ]
    done = subprocess.run(
        [acelyzer, "-i", "annotated.json", "-o", "processed.json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    processed = json.loads((tmp_path / "processed.json").read_text())
    events = processed["traceEvents"] if isinstance(processed, dict) else processed
    # acelyzer renames kernel events (1.3 drops the digits: spyre_kernel_v_fused_..._rboe...#),
    # so an event is found by where it sits on the device timeline, not by its name
    by_place = {(e.get("cat"), float(e["ts"])): e for e in events if e.get("ph") == "X"}
    for event in annotated:
        out = by_place[("kernel", float(event["ts"]))]["args"]
        for field, value in event["args"].items():
            if field.startswith(PREFIX) or field in ("stack", "provenance_key", "debug_handles"):
                assert out.get(field) == value, (event["name"], field)
    # the names acelyzer gave them resolve too, each to its own call site
    renamed = [by_place[("kernel", float(e["ts"]))]["name"] for e in annotated]
    document = lookup(renamed, kernel_index.build([case.out]))
    for event, answer in zip(annotated, document.answers, strict=True):
        sites = [s.key for m in answer.matches for s in m.call_sites]
        assert event["args"][f"{PREFIX}call_site"] in sites, answer.query
    # and what acelyzer wrote is still a trace the summary places, by torch-spyre's own field
    timed = time_summary.summarize(tmp_path / "processed.json", kernel_index.build([case.out]))
    assert timed.time_from == time_summary.DEVICE
    assert timed.attributed == timed.timed_events == len(annotated)
