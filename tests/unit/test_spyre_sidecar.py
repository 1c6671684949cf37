"""torch-spyre's own provenance (PR #3449's ``spyre_provenance.json`` and TORCH_TRACE artifact):
validate checks it (schema and the writer's rules), the hook's handles are cross-checked
against it. The documents are built by ``helpers.pr3449`` as the branch's writer builds them."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import pr3449
from helpers.fresh_process import environment
from spyre_provenance.backends.reference.lookalike import DebugHandle, SourceLoc
from spyre_provenance.validate import schemas, spyre_sidecar

sympy = pytest.importorskip("sympy")
C0 = sympy.Symbol("c0")
KERNEL = "sdsc_fused_linear_relu_0"
LINEAR = 5042312524869293591  # a 63-bit id, as torch-spyre's content hash makes them


def _specs(relu_line: int = 18) -> list[pr3449.OpSpec]:
    linear = DebugHandle(LINEAR, SourceLoc("/w/model.py", 17), "aten.linear.default", ("linear",))
    relu = DebugHandle(102, SourceLoc("/w/model.py", relu_line), "aten.relu.default", ("relu",))
    fused = DebugHandle(200, None, None, ("linear", "relu", "buf0"), (linear, relu))
    space = {C0: (sympy.Integer(64), 1)}
    return [
        pr3449.OpSpec("batchmatmul", False, space, [], {}, debug_handle=fused),
        pr3449.OpSpec("relufwd", False, space, [], {}, core_id_to_work_slice={C0: sympy.Integer(0)}, debug_handle=relu),
    ]


@pytest.fixture
def sidecar() -> dict:
    return pr3449.sidecar(
        [(KERNEL, _specs(), [1]), ("sdsc_fused_add_1", [], [2])],
        pre_to_post={"linear": ["permute", "mm"], "relu": ["relu"]},
        cpp_to_post={f"{KERNEL}:1": ["mm", "permute", "relu"], "sdsc_fused_add_1:2": []},
        stack_traces={f"{KERNEL}:1": ['File "/w/model.py", line 18, in forward']},
    )


def _key_of(doc: dict, name: str) -> str:
    return next(o["identityKey"] for o in doc["kernelOccurrences"].values() if o["compilerKernelName"] == name)


def _problems(doc: dict, **kw) -> list[str]:
    report = schemas.validate_bytes(pr3449.text(doc), **kw)
    assert report.artifact == "spyre_provenance"
    return [str(p) for p in report.problems]


@pytest.mark.parametrize("full", [False, True])
def test_a_sidecar_as_the_branch_writes_it_is_valid(sidecar: dict, full: bool) -> None:
    assert _problems(sidecar, full=full) == []
    report = schemas.validate_bytes(pr3449.text(sidecar))
    assert (report.version, report.ok) == ("1", True)


def test_the_writers_rules_are_checked(sidecar: dict) -> None:
    (cid,) = sidecar["upstreamProjections"]
    oid = next(iter(sidecar["kernelOccurrences"]))
    key = _key_of(sidecar, KERNEL)
    broken = copy.deepcopy(sidecar)
    broken["handles"]["200"]["fused_from"] = [str(LINEAR), "999"]
    broken["kernelIdentities"][key]["atenOps"] = ["aten.mm.default"]
    broken["kernelOccurrences"][oid]["compilerKernelName"] = "sdsc_wrong_0"
    broken["upstreamProjections"][cid]["postToPre"]["mm"] = []
    broken["status"] = "partial"
    problems = _problems(broken)
    assert '$.handles["200"].fused_from[1]: no handle "999" in $.handles' in problems
    assert any(p.startswith(f'$.kernelIdentities["{key}"].atenOps: expected') for p in problems)
    assert f'$.kernelOccurrences["{oid}"]: is not the digest of its compile, kernel name and key' in problems
    assert f'$.upstreamProjections["{cid}"].postToPre: is not the exact inverse of preToPost' in problems
    assert '$.status: expected "complete"' in problems


def test_a_later_schema_version_is_invalid_and_says_which_it_knows(sidecar: dict) -> None:
    sidecar["schemaVersion"] = 2
    assert _problems(sidecar) == ["$.schemaVersion: unsupported version 2 (this validator knows 1)"]
    sidecar["schemaVersion"] = 1
    sidecar["futureField"] = True
    assert _problems(sidecar, full=True) == ['$: unexpected key "futureField"']


def test_validate_lists_the_sidecar_file_and_the_trace_artifact(sidecar: dict, tmp_path: Path, run_cli) -> None:
    """The sidecar as a file (a folder scan finds it by name), and as the TORCH_TRACE artifact
    torch-spyre logs with ``trace_structured_artifact("spyre_provenance", "json", ...)``."""
    (tmp_path / "run").mkdir()
    sidecar_file = tmp_path / "run" / "spyre_provenance.json"
    sidecar_file.write_text(pr3449.text(sidecar))
    logs = tmp_path / "logs"
    driver = (  # inside a compile, as torch-spyre logs it while the wrapper loads
        "import sys\n"
        "from torch._guards import CompileContext, CompileId, compile_context\n"
        "from torch._logging._internal import trace_structured_artifact\n"
        "text = open(sys.argv[1]).read()\n"
        "with compile_context(CompileContext(CompileId(frame_id=0, frame_compile_id=0))):\n"
        "    trace_structured_artifact('spyre_provenance', 'json', payload_fn=lambda: text)\n"
    )
    env = environment({"TORCH_TRACE": str(logs)})
    subprocess.run([sys.executable, "-c", driver, str(sidecar_file)], env=env, check=True, timeout=300)
    (log,) = logs.iterdir()
    code, out, err = run_cli("validate", tmp_path / "run", log)
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == f"OK      v1    spyre_provenance  {sidecar_file}"
    assert lines[1] == f"OK      v1    spyre_provenance  {log}:[0/0] (line 1)"
    broken = json.loads(pr3449.text(sidecar)) | {"status": "partial"}
    sidecar_file.write_text(pr3449.text(broken))
    code, out, _ = run_cli("validate", sidecar_file)
    assert code == 1 and out.splitlines()[1] == '  $.status: expected "complete"'


def _hook_handles(site: str, ids: list[str], lines: dict[str, int], key: str | None) -> dict:
    """A graph's ``spyre_opspec_debug_handles`` (version 2) for one call site."""
    handles = {
        hid: {
            "source": {"file": "/w/model.py", "start_line": line, "start_col": 0, "end_line": None, "end_col": None},
            "aten_op": None,
            "ir_chain": [],
            "fused_from": [],
            "transform_history": [],
        }
        for hid, line in lines.items()
    }
    specs = [
        {"op": "add", "is_reduction": False, "iteration_space": [64], "buffer": None, "debug_handle": h} for h in ids
    ]
    bundles = {site: {"provenance_key": key, "folder": None}} if key else {}
    return {"version": 2, "kernels": {site: specs, "extern_kernels.mm:2": []}, "handles": handles, "bundles": bundles}


def test_the_hooks_handles_agree_with_torch_spyres(sidecar: dict) -> None:
    key = _key_of(sidecar, KERNEL)
    ours = _hook_handles(f"{KERNEL}:1", ["200", "102"], {"200": 17, "102": 18}, key)
    ours["handles"]["200"]["source"] = None  # the fused handle has no line of its own, there either
    assert spyre_sidecar.cross_check(ours, sidecar) == []


def test_a_disagreement_names_the_call_site_and_both_sides(sidecar: dict) -> None:
    key = _key_of(sidecar, KERNEL)
    site = f"{KERNEL}:1"
    whose = "torch-spyre's spyre_provenance"
    other_handles = _hook_handles(site, ["102"], {"102": 18}, key)
    assert spyre_sidecar.cross_check(other_handles, sidecar) == [f"{site}: handles 102 here, 200, 102 in {whose}"]
    other_line = _hook_handles(site, ["200", "102"], {"102": 19}, "a" * 16)
    other_line["handles"]["200"] = {**other_line["handles"]["102"], "source": None}
    assert spyre_sidecar.cross_check(other_line, sidecar) == [
        f"{site}: provenance key {'a' * 16} here, {key} in {whose}",
        f"{site}: handle 102 at /w/model.py:19 here, at /w/model.py:18 in {whose}",
    ]


def test_a_graph_the_sidecar_does_not_hold_is_not_compared(sidecar: dict) -> None:
    elsewhere = _hook_handles("sdsc_fused_gelu_0:1", ["5"], {"5": 3}, None)
    assert spyre_sidecar.cross_check(elsewhere, sidecar) == []


WRAPPER = f"""# AOT ID: ['0_inference']
def call(args):
    # [Provenance debug handles] {KERNEL}:1
    {KERNEL}.run(arg0_1, buf0)
"""


def test_compile_reports_where_the_hook_and_torch_spyre_disagree(sidecar: dict, tmp_path: Path) -> None:
    """check_outputs reads the sidecar torch-spyre logged in the graph's compile and lists
    each disagreement with the hook's handles; without it, the graph's check is as before."""
    from spyre_provenance.compile.output_check import check_outputs

    site = f"{KERNEL}:1"
    ours = _hook_handles(site, ["200", "102"], {"102": 19}, _key_of(sidecar, KERNEL))
    ours["handles"]["200"] = {**ours["handles"]["102"], "source": None}
    records = {"inductor_output_code": WRAPPER, "spyre_opspec_debug_handles": json.dumps(ours)}
    without = check_outputs([], pr3449.log_records(tmp_path / "a", records))
    assert [(g.spyre_provenance, g.spyre_disagreements) for g in without.graphs] == [(False, [])]
    records["spyre_provenance"] = pr3449.text(sidecar)
    (graph,) = check_outputs([], pr3449.log_records(tmp_path / "b", records)).graphs
    assert graph.spyre_provenance is True
    assert graph.spyre_disagreements == [
        f"{site}: handle 102 at /w/model.py:19 here, at /w/model.py:18 in torch-spyre's spyre_provenance"
    ]


def _upstream_run(tmp_path: Path, sidecar: dict, *, logged: bool) -> Path:
    """A run torch-spyre's branch compiled without the hook (``TORCH_TRACE`` and
    ``INDUCTOR_PROVENANCE=1`` only): Inductor's own mapping and wrapper, and torch-spyre's
    sidecar, logged in the compile or published as a file beside the log."""
    mapping = {
        "preToPost": {"linear": ["permute", "mm"], "relu": ["relu"]},
        "postToPre": {"mm": ["linear"], "permute": ["linear"], "relu": ["relu"]},
        "cppCodeToPost": {f"{KERNEL}:1": ["mm", "permute", "relu"]},
        "postToCppCode": {"mm": [f"{KERNEL}:1"], "permute": [f"{KERNEL}:1"], "relu": [f"{KERNEL}:1"]},
        "version": 2.0,
    }
    records = {"inductor_output_code": WRAPPER, "inductor_provenance_tracking_node_mappings": json.dumps(mapping)}
    if logged:
        records["spyre_provenance"] = pr3449.text(sidecar)
    log = pr3449.log_records(tmp_path, records)
    if not logged:
        (tmp_path / "torchinductor").mkdir()
        (tmp_path / "torchinductor" / "spyre_provenance.json").write_text(pr3449.text(sidecar))
    return log


@pytest.mark.parametrize("logged", [True, False], ids=["logged", "file"])
def test_lookup_reads_torch_spyres_provenance_as_evidence(sidecar: dict, tmp_path: Path, run_cli, logged) -> None:
    """A device event names the kernel only by its key: the hook recorded none here, the
    sidecar does, so lookup finds the call site; without the sidecar it does not."""
    key = _key_of(sidecar, KERNEL)
    event = next(i["eventNameBase"] for k, i in sidecar["kernelIdentities"].items() if k == key) + "#3"
    log = _upstream_run(tmp_path / "run", sidecar, logged=logged)
    code, out, err = run_cli("lookup", event, "--from", tmp_path / "run", "--format", "json")
    assert (code, err) == (0, "")
    (answer,) = json.loads(out)["answers"]
    (match,) = answer["matches"]
    assert match["kernel"] == KERNEL
    assert [(s["key"], s["provenance_key"]) for s in match["call_sites"]] == [(f"{KERNEL}:1", key)]
    # a handle id, fused into the kernel's handle: the sidecar knows it, the hook did not run
    code, out, _ = run_cli("lookup", str(LINEAR), "--from", tmp_path / "run", "--format", "json")
    assert code == 0 and [m["kernel"] for m in json.loads(out)["answers"][0]["matches"]] == [KERNEL]
    bare = _upstream_run(tmp_path / "bare", sidecar, logged=False)
    code, out, _ = run_cli("lookup", event, "--from", bare, "--format", "json")
    assert json.loads(out)["answers"][0]["matches"] == [] and code == 1
    assert log.is_file()


def test_lookup_reads_a_kernel_name_from_its_launch_spec(sidecar: dict, tmp_path: Path, run_cli) -> None:
    """A compiled kernel's folder named by torch-spyre's kernel cache (its key, not the
    kernel's name): lookup reads ``kernel_name`` from the launch spec beside the code, as
    ``kernel_launchspec.save_launch_spec`` writes it, and finds the call site."""
    _upstream_run(tmp_path / "run", sidecar, logged=False)
    code_dir = tmp_path / "cache" / "inductor-spyre" / ("f" * 64) / "spyreCodeDir"
    code_dir.mkdir(parents=True)
    spec = {"version": 1, "kernel_name": KERNEL, "pool_size": 0, "bundle_symbolic_args": True, "args": []}
    (code_dir / "launch_spec.json").write_text(json.dumps(spec, indent=2))
    for name in (code_dir / "launch_spec.json", code_dir, code_dir.parent):
        code, out, err = run_cli("lookup", name, "--from", tmp_path / "run", "--format", "json")
        assert (code, err) == (0, ""), name
        (answer,) = json.loads(out)["answers"]
        assert answer["form"] == "kernel"
        assert [(m["kernel"], [s["key"] for s in m["call_sites"]]) for m in answer["matches"]] == [
            (KERNEL, [f"{KERNEL}:1"])
        ]
    (code_dir / "launch_spec.json").unlink()
    code, out, _ = run_cli("lookup", code_dir, "--from", tmp_path / "run", "--format", "json")
    assert code == 1 and json.loads(out)["answers"][0]["matches"] == []


def test_the_summary_lists_the_disagreements_only_where_torch_spyre_logged_its_own() -> None:
    from spyre_provenance.compile.output_check import GraphCheck
    from spyre_provenance.compile.summary import spyre_provenance_lines

    assert spyre_provenance_lines(GraphCheck("0/0", None)) == []
    assert spyre_provenance_lines(None) == []
    agreed = GraphCheck("0/0", None, spyre_provenance=True)
    assert spyre_provenance_lines(agreed) == [
        "    torch-spyre's own provenance (spyre_provenance): 0 disagreement(s) with the hook's handles"
    ]
    found = GraphCheck("0/0", None, spyre_provenance=True, spyre_disagreements=["k:1: handles 1 here, 2 in it"])
    assert spyre_provenance_lines(found)[1:] == ["      k:1: handles 1 here, 2 in it"]


def test_annotate_places_a_device_event_by_torch_spyres_provenance(sidecar: dict, tmp_path: Path, run_cli) -> None:
    """annotate reads names through the same index: a torch-spyre device event of a run
    without the hook gets its call site from the sidecar's key."""
    key = _key_of(sidecar, KERNEL)
    _upstream_run(tmp_path / "run", sidecar, logged=True)
    name = next(i["eventNameBase"] for k, i in sidecar["kernelIdentities"].items() if k == key)
    args = {"provenance_key": key, "debug_handles": ["200", "102"]}
    event = {"ph": "X", "cat": "kernel", "name": f"{name}#0", "ts": 10, "dur": 5, "pid": 0, "tid": 0, "args": args}
    trace = tmp_path / "trace.json"
    trace.write_text(json.dumps({"traceEvents": [event]}))
    out_trace = tmp_path / "annotated.json"
    code, _, err = run_cli("annotate", trace, "--from", tmp_path / "run", "-o", out_trace)
    assert code == 0, err
    (annotated,) = json.loads(out_trace.read_text())["traceEvents"]
    assert annotated["args"]["spyre_provenance_call_site"] == f"{KERNEL}:1"
    assert annotated["args"]["provenance_key"] == key  # torch-spyre's own field, unchanged
