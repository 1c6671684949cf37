"""``spyre-provenance validate``: output lines, exit codes 0/1/2, one line per unusable input,
logs and folders, JSON output, the size limit, a 200 MB file in bounded memory, no traceback.

Most cases run in-process (``run_cli``); a few go through ``python -m spyre_provenance``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from helpers.fresh_process import FRESH  # tests/ is on sys.path (rootdir-relative "prepend" import mode)
from helpers.tlparse_page import parse_page
from helpers.where import DATA, REPO  # tests/ is on sys.path
from spyre_provenance.logs import tlparse_render
from spyre_provenance.model.detect import artifact_for_filename
from spyre_provenance.model.names import AUDIT, KERNEL_STACK_TRACES, NODE_MAPPINGS, filename_regex
from spyre_provenance.validate import paths as path_validation

RunCli = Callable[..., tuple[int, str, str]]
MAPPINGS_NAME = "inductor_provenance_tracking_node_mappings.json"
SEED_TEXT = (DATA / "artifacts" / MAPPINGS_NAME).read_text()


@pytest.fixture
def original_datadir(request: pytest.FixtureRequest) -> Path:
    return DATA / "regressions" / request.path.stem


@pytest.fixture
def artifacts(data_dir: Path, tmp_path: Path) -> Path:
    """A private copy of tests/data/artifacts (tests add broken files next to the good ones)."""
    return Path(shutil.copytree(data_dir / "artifacts", tmp_path / "artifacts"))


def write(path: Path, content: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    return path


def broken_seed(path: Path) -> Path:
    doc = json.loads(SEED_TEXT)
    doc["postToPre"]["relu"].append("linear")
    return write(path, json.dumps(doc))


# --- artifact files ---------------------------------------------------------------------------


def test_valid_artifacts_one_ok_line_each(run_cli: RunCli, artifacts: Path) -> None:
    files = sorted(artifacts.glob("*.json"))
    code, out, err = run_cli("validate", *files)
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert len(lines) == len(files)
    assert f"OK      v2.0  {NODE_MAPPINGS}  {artifacts / MAPPINGS_NAME}" in lines
    assert f"OK      v1    {NODE_MAPPINGS}  {artifacts / 'inductor_provenance_tracking_node_mappings_v1.json'}" in lines
    assert (
        f"OK      v1    {KERNEL_STACK_TRACES}  {artifacts / 'inductor_provenance_tracking_kernel_stack_traces_v1.json'}"
        in lines
    )


def test_invalid_artifact_lists_its_problems(run_cli: RunCli, tmp_path: Path) -> None:
    path = broken_seed(tmp_path / MAPPINGS_NAME)
    code, out, err = run_cli("validate", path)
    assert (code, err) == (1, "")
    assert out.splitlines() == [
        f"INVALID v2.0  {NODE_MAPPINGS}  {path}",
        '  $.postToPre["relu"][1]: not in the inverse: preToPost["linear"] does not list "relu"',
    ]


def test_version_1_mapping_without_its_maps_names_them(run_cli: RunCli, tmp_path: Path) -> None:
    path = write(tmp_path / MAPPINGS_NAME, '{"preToPost": {"a": []}}')
    code, out, err = run_cli("validate", path)
    assert (code, err) == (1, "")
    assert out.splitlines() == [f"INVALID v1    {NODE_MAPPINGS}  {path}"] + [
        f'  $: missing required key "{name}" (version 1 has all four maps)'
        for name in ("postToPre", "cppCodeToPost", "postToCppCode")
    ]


@pytest.mark.parametrize("engine", ["fast", "full", "auto"])
def test_engines_report_the_same(run_cli: RunCli, tmp_path: Path, engine: str) -> None:
    path = broken_seed(tmp_path / MAPPINGS_NAME)
    code, out, _ = run_cli("validate", "--engine", engine, path)
    assert code == 1 and '$.postToPre["relu"][1]' in out


def test_wrong_value_types_are_invalid(run_cli: RunCli, tmp_path: Path) -> None:
    path = write(tmp_path / MAPPINGS_NAME, '{"version": 2.0, "preToPost": {"relu": "relu"}, "postToPre": [1]}')
    code, out, _ = run_cli("validate", path)
    assert code == 1
    assert '  $.preToPost["relu"]: expected array, got string' in out.splitlines()
    assert "  $.postToPre: expected object, got array" in out.splitlines()


def test_unknown_version_is_invalid_not_unusable(run_cli: RunCli, tmp_path: Path) -> None:
    path = write(tmp_path / MAPPINGS_NAME, SEED_TEXT.replace('"version": 2.0', '"version": 3.0'))
    code, out, err = run_cli("validate", path)
    assert (code, err) == (1, "")
    assert out.splitlines() == [
        f"INVALID -     {NODE_MAPPINGS}  {path}",
        "  $.version: unsupported version 3.0 (this validator knows 2.0)",
    ]


def test_artifact_option_names_an_unnamed_file(run_cli: RunCli, tmp_path: Path) -> None:
    path = write(tmp_path / "traces.json", '{"k:1": ["t"]}')
    assert run_cli("validate", path)[0] == 0  # told by shape
    code, out, _ = run_cli("validate", "--artifact", "kernel_information", path)
    assert code == 1 and '$["k:1"]: expected object, got array' in out


def test_problems_beyond_the_limit(run_cli: RunCli, tmp_path: Path) -> None:
    maps = {"preToPost": {}, "postToPre": {}, "postToCppCode": {}, "cppCodeToPost": {f"k{i}": [] for i in range(130)}}
    path = write(tmp_path / MAPPINGS_NAME, json.dumps({**maps, "version": 2.0}))
    code, out, _ = run_cli("validate", path)
    assert code == 1 and out.splitlines()[-1] == "  ... and 30 more problems"


# --- unusable input: one line on stderr, exit 2 ---------------------------------------------------

UNUSABLE = {
    "missing": (None, "no such file or folder"),
    "empty.json": (b"", "empty file"),
    "blank.json": (b"  \n", "empty (no JSON value)"),
    "truncated.json": (SEED_TEXT[:40].encode(), "not valid JSON"),
    "latin1.json": (
        '{"version": 2.0, "preToPost": {"caf\xe9": []}}'.encode("latin-1"),
        "not UTF-8 text (byte 0xe9 at offset 35)",
    ),
    "array.json": (b'[{"version": 2.0}]', "top level is a JSON array, expected an object"),
    "other.json": (b'{"name": "not an artifact"}', "not a recognized provenance artifact"),
    "notes.log": (b"just some text\n", "not a TORCH_TRACE log: the first line has no glog prefix"),
    "empty.log": (b"", "empty file"),
    "blob": (b"\x00\x01binary", "not valid JSON"),
}


@pytest.mark.parametrize("name", UNUSABLE)
def test_unusable_input_one_line_exit_2(run_cli: RunCli, tmp_path: Path, name: str) -> None:
    content, what = UNUSABLE[name]
    path = tmp_path / name
    if content is not None:
        write(path, content)
    code, out, err = run_cli("validate", path)
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and err.startswith(f"spyre-provenance validate: error: {path}: ")
    assert what in err


def test_folder_without_artifacts(run_cli: RunCli, tmp_path: Path) -> None:
    write(tmp_path / "data" / "other.json", '{"a": ["b"]}')  # shape too vague for a folder scan
    write(tmp_path / "notes.log", "hello\n")
    code, out, err = run_cli("validate", tmp_path)
    assert (code, out) == (2, "")
    assert (
        err
        == f"spyre-provenance validate: error: {tmp_path}: no provenance artifacts or TORCH_TRACE logs in this folder\n"
    )


def test_size_limit(run_cli: RunCli, artifacts: Path) -> None:
    code, out, err = run_cli("validate", "--max-bytes", "100", artifacts / MAPPINGS_NAME)
    assert (code, out) == (2, "")
    size = (artifacts / MAPPINGS_NAME).stat().st_size
    assert err.strip().endswith(f": {size} bytes is over the --max-bytes limit of 100 bytes")


def test_bad_size_option_is_a_usage_error(run_cli: RunCli, artifacts: Path) -> None:
    code, _, err = run_cli("validate", "--max-bytes", "lots", artifacts / MAPPINGS_NAME)
    assert code == 2 and "not a size" in err


def test_one_unusable_path_among_several(run_cli: RunCli, artifacts: Path, tmp_path: Path) -> None:
    bad = broken_seed(tmp_path / MAPPINGS_NAME)
    code, out, err = run_cli("validate", artifacts / MAPPINGS_NAME, tmp_path / "missing.json", bad)
    assert code == 2  # unusable outranks invalid
    assert [line.split()[0] for line in out.splitlines() if not line.startswith(" ")] == ["OK", "INVALID"]
    assert err.count("\n") == 1 and "missing.json: no such file or folder" in err


# --- TORCH_TRACE logs -----------------------------------------------------------------------------


def test_log_one_line_per_artifact(run_cli: RunCli, data_dir: Path) -> None:
    log = data_dir / "logs" / "seed_mlp.log"
    code, out, err = run_cli("validate", log)
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        f"OK      v2.0  {NODE_MAPPINGS}  {log}:[0/0] (line 21)",
        f"OK      v2    {KERNEL_STACK_TRACES}  {log}:[0/0] (line 23)",
    ]


def test_log_with_a_corrupt_payload(run_cli: RunCli, data_dir: Path, tmp_path: Path) -> None:
    text = (data_dir / "logs" / "seed_mlp.log").read_text()
    damaged = text.replace('"relu": ["input_2"]', '"relu": ["input_9"]')  # edited after hashing
    log = write(tmp_path / "dedicated_log_torch_trace_x.log", damaged)
    code, out, err = run_cli("validate", log)
    assert (code, err) == (1, "")
    lines = out.splitlines()
    assert lines[0] == f"INVALID v2.0  {NODE_MAPPINGS}  {log}:[0/0] (line 21)"
    assert re.fullmatch(
        r"  line 21: payload MD5 [0-9a-f]{32} does not match has_payload [0-9a-f]{32}: the payload is damaged", lines[1]
    )
    assert '  $.postToPre["relu"]: missing "input_2"' in out  # and the edit broke the inverse


def test_log_damage_outside_artifacts_is_its_own_result(run_cli: RunCli, data_dir: Path, tmp_path: Path) -> None:
    text = (data_dir / "logs" / "seed_mlp.log").read_text()
    log = write(tmp_path / "trace.log", text.replace('"oss": true', '"oss": false'))
    code, out, _ = run_cli("validate", log)
    assert code == 1
    assert f"INVALID -     TORCH_TRACE  {log}" in out.splitlines()
    assert "  line 13: torch_version record: payload MD5" in out


# A tracked compile the backend refuses (as torch-spyre refuses a layout): torch logs the
# failure (compilation_metrics' fail_type, the traceback in a dynamo_error record), no artifact.
FAILING_COMPILE = """
import sys, torch, spyre_provenance

def refusing(gm, example_inputs):
    raise RuntimeError("this backend refuses the graph")

with spyre_provenance.tracking(backend="reference"):
    try:
        torch.compile(torch.nn.Linear(4, 4), backend=refusing)(torch.randn(2, 4))
    except Exception as exc:
        print(type(exc).__name__)
"""


def test_a_failed_compile_s_folder_says_the_compile_failed(run_cli: RunCli, tmp_path: Path) -> None:
    trace = tmp_path / "trace"
    ran = FRESH.run(driver=FAILING_COMPILE, env={"TORCH_TRACE": str(trace), "INDUCTOR_PROVENANCE": "1"})
    assert ran.stdout.strip() == "BackendCompilerFailed", ran.stderr
    (log,) = trace.iterdir()
    traceback_line = next(
        n for n, line in enumerate(log.read_text().splitlines(), 1) if '{"artifact": {"name": "dynamo_error"' in line
    )
    said = (
        "the compile [0/0] failed (BackendCompilerFailed: backend='refusing' raised: RuntimeError: this backend"
        f" refuses the graph); its traceback is at line {traceback_line} of this log"
    )
    for path in (trace, log):  # the folder, and the log named on its own
        code, out, err = run_cli("validate", path)
        assert code == 2, (out, err)
        assert said in out + err
        assert "INDUCTOR_PROVENANCE" not in out + err and "no provenance artifacts" not in out + err


def test_log_without_provenance(run_cli: RunCli, data_dir: Path, tmp_path: Path) -> None:
    lines = (data_dir / "logs" / "seed_mlp.log").read_text().splitlines(keepends=True)
    log = write(tmp_path / "trace.log", "".join(lines[:20]))
    code, out, err = run_cli("validate", log)
    assert (code, out) == (2, "")
    assert "no provenance artifacts in this TORCH_TRACE log (was INDUCTOR_PROVENANCE=1 set?)" in err


def with_provenance_ids(log_text: str, ids: str) -> str:
    """The log with the compile-id keys of its provenance records' envelopes replaced by
    ``ids`` (JSON members with a trailing ", ", or "" for none); payloads are untouched, so
    every MD5 still holds."""
    lines = log_text.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if '"name": "inductor_provenance_tracking_' in line:
            lines[i] = line.replace('"frame_id": 0, "frame_compile_id": 0, "attempt": 0, ', ids)
            assert lines[i] != line
    return "".join(lines)


def test_log_without_compile_ids_is_valid_with_a_warning(run_cli: RunCli, data_dir: Path, tmp_path: Path) -> None:
    log = write(tmp_path / "trace.log", with_provenance_ids((data_dir / "logs" / "seed_mlp.log").read_text(), ""))
    code, out, err = run_cli("validate", log)
    assert (code, err) == (0, "")
    warning = (
        "no compile id in the envelope (frame_id, frame_compile_id, attempt), as torch logs AOTInductor compiles:"
        " tlparse files it under -_-_-_- with every record that has none, and builds"
        " provenance_tracking_-_-_-_-.html from that folder"
    )
    assert out.splitlines() == [
        f"WARN    v2.0  {NODE_MAPPINGS}  {log}:[-/-] (line 21)",
        f"  warning: line 21: {warning}",
        f"WARN    v2    {KERNEL_STACK_TRACES}  {log}:[-/-] (line 23)",
        f"  warning: line 23: {warning}",
    ]
    # --strict turns the warnings into a failure, as tlparse --strict does; the lines stay
    assert run_cli("validate", "--strict", log) == (1, out, "")


def test_partial_compile_id_warns_that_the_page_will_be_empty(run_cli: RunCli, data_dir: Path, tmp_path: Path) -> None:
    text = with_provenance_ids(
        (data_dir / "logs" / "seed_mlp.log").read_text(), '"frame_id": 0, "frame_compile_id": 0, '
    )
    log = write(tmp_path / "trace.log", text)
    code, out, err = run_cli("validate", log)
    assert (code, err) == (0, "")
    assert out.splitlines()[:2] == [
        f"WARN    v2.0  {NODE_MAPPINGS}  {log}:[0/0] (line 21)",
        "  warning: line 21: partial compile id (frame_id, frame_compile_id; no attempt): tlparse files it under"
        " -_0_0_- but builds the page provenance_tracking_-_0_0_0.html from -_0_0_0: the page will be empty",
    ]


def test_invalid_and_warned_at_once(run_cli: RunCli, data_dir: Path, tmp_path: Path) -> None:
    text = with_provenance_ids((data_dir / "logs" / "seed_mlp.log").read_text(), "")
    log = write(tmp_path / "trace.log", text.replace('"relu": ["input_2"]', '"relu": ["input_9"]'))
    code, out, _ = run_cli("validate", "--artifact", NODE_MAPPINGS, log)
    assert code == 1
    lines = out.splitlines()
    assert lines[0] == f"INVALID v2.0  {NODE_MAPPINGS}  {log}:[-/-] (line 21)"
    assert lines[1].startswith("  line 21: payload MD5 ")  # problems first, then the warnings
    assert lines[-1].startswith("  warning: line 21: no compile id in the envelope")


def test_json_report_carries_both_verdicts(run_cli: RunCli, data_dir: Path, tmp_path: Path) -> None:
    log = write(tmp_path / "trace.log", with_provenance_ids((data_dir / "logs" / "seed_mlp.log").read_text(), ""))
    good = write(tmp_path / MAPPINGS_NAME, SEED_TEXT)
    code, out, _ = run_cli("validate", "--format", "json", "--artifact", NODE_MAPPINGS, log, good)
    assert code == 0
    warned, plain = json.loads(out)
    assert (warned["status"], warned["problems"], warned["compile_id"]) == ("ok", [], "[-/-]")
    assert [w["path"] for w in warned["warnings"]] == ["line 21"]
    assert "-_-_-_-" in warned["warnings"][0]["message"]
    assert (plain["status"], plain["warnings"]) == ("ok", [])
    assert run_cli("validate", "--format", "json", "--strict", "--artifact", NODE_MAPPINGS, log, good)[0] == 1


needs_tlparse = pytest.mark.skipif(tlparse_render.tlparse_binary() is None, reason="tlparse is not installed")


@needs_tlparse
@pytest.mark.parametrize(
    "ids, files, page",
    [
        ("", "-_-_-_-", "-_-_-_-"),
        ('"frame_id": 0, "frame_compile_id": 0, ', "-_0_0_-", "-_0_0_0"),
        ('"frame_id": 0, ', "-_0_-_-", "-_0_-_-"),
        ('"frame_id": "0", "frame_compile_id": 0, "attempt": 0, ', "unknown_21", None),
    ],
    ids=["no ids", "no attempt", "frame id only", "a string"],
)
def test_warnings_say_what_tlparse_does(
    run_cli: RunCli, data_dir: Path, tmp_path: Path, ids: str, files: str, page: str | None
) -> None:
    """The warning names the folder tlparse really files the mapping under and the page it
    builds from it; a page the warning says is empty links nothing."""
    log = write(tmp_path / "trace.log", with_provenance_ids((data_dir / "logs" / "seed_mlp.log").read_text(), ids))
    _, out, _ = run_cli("validate", "--artifact", NODE_MAPPINGS, log)
    [warning] = [line for line in out.splitlines() if line.startswith("  warning: ")]
    out_dir = tmp_path / "tlparse"
    subprocess.run(
        [tlparse_render.tlparse_binary(), str(log), "-i", "--no-browser", "-o", str(out_dir), "--overwrite"],
        check=True,
        capture_output=True,
        timeout=120,
    )
    [filed] = out_dir.glob(f"*/{NODE_MAPPINGS}_*.json")
    assert filed.parent.name == files and f"under {files}" in warning
    if page is None:
        assert "no provenance page shows it" in warning
        return
    assert f"provenance_tracking_{page}.html" in warning
    links = parse_page((out_dir / f"provenance_tracking_{page}.html").read_text()).links
    if page != files:  # tlparse looks for the mapping in a folder that lacks it
        assert not any(links.values()) and "the page will be empty" in warning
    elif ids:  # filed apart from the seed compile's code (under -_0_0_0): nothing to link to
        assert not links.get("pyCodeToPost") and not links.get("cppCodeToPost") and "will be empty" in warning


def test_artifact_option_filters_a_log(run_cli: RunCli, data_dir: Path) -> None:
    code, out, _ = run_cli("validate", "--artifact", KERNEL_STACK_TRACES, data_dir / "logs" / "seed_mlp.log")
    assert code == 0 and len(out.splitlines()) == 1 and KERNEL_STACK_TRACES in out


# --- folders ---------------------------------------------------------------------------------------


def make_folder(root: Path, data_dir: Path) -> Path:
    shutil.copy(data_dir / "logs" / "seed_mlp.log", write(root / "trace" / "dedicated_log_torch_trace_a.log", ""))
    write(root / "graph_0" / MAPPINGS_NAME, SEED_TEXT)
    broken_seed(root / "graph_1" / MAPPINGS_NAME)
    write(root / "graph_1" / "unnamed.json", '{"fused:1": ["trace"]}')  # unmistakable by shape
    write(root / "graph_1" / "metrics.json", '{"compile_time": [1.5]}')  # ignored
    write(root / ".cache" / MAPPINGS_NAME, "not even JSON")  # hidden folders are skipped
    write(root / "build.log", "make: nothing to do\n")  # not a trace log: skipped
    return root


def test_folder_recursive(run_cli: RunCli, data_dir: Path, tmp_path: Path) -> None:
    root = make_folder(tmp_path / "out", data_dir)
    code, out, err = run_cli("validate", root)
    assert (code, err) == (1, "")
    heads = [line for line in out.splitlines() if not line.startswith(" ")]
    assert heads == [
        f"OK      v2.0  {NODE_MAPPINGS}  {root / 'graph_0' / MAPPINGS_NAME}",
        f"INVALID v2.0  {NODE_MAPPINGS}  {root / 'graph_1' / MAPPINGS_NAME}",
        f"OK      v2    {KERNEL_STACK_TRACES}  {root / 'graph_1' / 'unnamed.json'}",
        f"OK      v2.0  {NODE_MAPPINGS}  {root / 'trace' / 'dedicated_log_torch_trace_a.log'}:[0/0] (line 21)",
        f"OK      v2    {KERNEL_STACK_TRACES}  {root / 'trace' / 'dedicated_log_torch_trace_a.log'}:[0/0] (line 23)",
    ]


def test_json_format_for_ci(run_cli: RunCli, data_dir: Path, tmp_path: Path, data_regression: Any) -> None:
    root = make_folder(tmp_path / "out", data_dir)
    code, out, err = run_cli("validate", "--format", "json", root, tmp_path / "missing.json")
    assert code == 2 and err.count("\n") == 1
    results = json.loads(out)
    for result in results:  # stable across machines
        result["path"] = Path(result["path"]).relative_to(tmp_path).as_posix()
    data_regression.check(results)


def test_validate_paths_api(data_dir: Path, tmp_path: Path) -> None:
    root = make_folder(tmp_path / "out", data_dir)
    reports = path_validation.validate_paths([root, tmp_path / "missing"])
    assert [r.ok for r in reports] == [True, False, True, True, True, False]
    assert reports[3].location.endswith("dedicated_log_torch_trace_a.log:[0/0] (line 21)")
    assert reports[-1].artifact is None and str(reports[-1].problems[0]) == "$: no such file or folder"


# --- through the real entry point -------------------------------------------------------------------


def run_module(*args: Any, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return FRESH.run("validate", *args, **kwargs)


def test_module_entry_point(artifacts: Path, tmp_path: Path) -> None:
    ok = run_module(artifacts)
    assert ok.returncode == 0 and ok.stderr == ""
    assert len(ok.stdout.splitlines()) == len(list(artifacts.glob("*.json"))) == 8
    bad = run_module(write(tmp_path / "x.json", b"\xff\xfe{"), tmp_path / "nothing")
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr.splitlines() == [
        f"spyre-provenance validate: error: {tmp_path / 'x.json'}: not UTF-8 text (byte 0xff at offset 0)",
        f"spyre-provenance validate: error: {tmp_path / 'nothing'}: no such file or folder",
    ]


def test_never_a_traceback(tmp_path: Path, data_dir: Path) -> None:
    nasty = [
        write(tmp_path / MAPPINGS_NAME, '{"version": 2.0, "preToPost": {"a": [{"deep": [[[]]]}]}}'),
        write(tmp_path / "spyre_opspec_debug_handles.json", '{"version": 1, "kernels": 1, "handles": null}'),
        write(tmp_path / "kernel_information.json", '{"k:1": null}'),
        write(
            tmp_path / "dedicated_log_torch_trace_z.log",
            'V1202 10:56:15.069000 1 a.py:1] {"artifact": {"name": "inductor_provenance_tracking_node_mappings"},'
            ' "has_payload": "' + hashlib.md5(b"[1]").hexdigest() + '"}\n\t[1]\n\x00\xff\n',
        ),
        write(tmp_path / "deep.json", "[" * 100_000),
        tmp_path,
    ]
    result = run_module(*nasty)
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr, result.stderr
    assert result.returncode == 2


# --- big input ---------------------------------------------------------------------------------------


def write_big_mapping(path: Path, target_bytes: int) -> int:
    """A valid node mapping of about ``target_bytes``, streamed to disk: n pre nodes, each with
    one post node and one kernel, names ~55 characters."""
    pad = "_" + "n" * 48
    entry_bytes = 4 * 2 * 60 + 80  # four maps, two names per entry, quotes and punctuation
    n = target_bytes // entry_bytes

    def section(name: str, pairs: Any) -> str:
        return f'"{name}": {{' + ", ".join(f'"{a}": ["{b}"]' for a, b in pairs) + "}"

    with open(path, "w") as fh:
        fh.write("{")
        for name, pairs in (
            ("preToPost", ((f"pre{i}{pad}", f"post{i}{pad}") for i in range(n))),
            ("postToPre", ((f"post{i}{pad}", f"pre{i}{pad}") for i in range(n))),
            ("cppCodeToPost", ((f"kernel{i}{pad}:{i + 1}", f"post{i}{pad}") for i in range(n))),
            ("postToCppCode", ((f"post{i}{pad}", f"kernel{i}{pad}:{i + 1}") for i in range(n))),
        ):
            fh.write(section(name, pairs) + ", ")
        fh.write('"version": 2.0}')
    return path.stat().st_size


@pytest.mark.big
def test_200_mb_artifact_fast_path_in_bounded_memory(tmp_path: Path) -> None:
    path = tmp_path / MAPPINGS_NAME
    size = write_big_mapping(path, 200 * 2**20)
    assert size > 180 * 2**20
    # peak RSS of the validating process, measured by itself
    code = (
        "import resource, sys; from spyre_provenance.cli import main; rc = main(sys.argv[1:]);"
        "print('maxrss_kib', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr); sys.exit(rc)"
    )
    start = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-c", code, "validate", str(path)],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(REPO / "src")),
    )
    elapsed = time.monotonic() - start
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"OK      v2.0  {NODE_MAPPINGS}  {path}\n"
    peak = int(result.stderr.split("maxrss_kib")[1]) * 1024
    assert peak < 5 * size, f"peak RSS {peak / 2**20:.0f} MiB for a {size / 2**20:.0f} MiB file"
    assert elapsed < 20, elapsed


# --- the pre-commit hook ------------------------------------------------------------------------------


def test_pre_commit_hook_definition() -> None:
    [hook] = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    assert (hook["id"], hook["entry"], hook["language"]) == (
        "validate-provenance",
        "spyre-provenance validate",
        "python",
    )
    # the hook's pattern is FILENAME_PATTERNS, not a hand copy that misses a kind
    assert hook["files"] == filename_regex()
    files = re.compile(hook["files"])
    committed = sorted(p.relative_to(REPO).as_posix() for p in (REPO / "golden").rglob("*.json"))
    for name in committed:
        artifact = artifact_for_filename(name)
        assert bool(files.search(name)) == (artifact is not None), name
    assert {artifact_for_filename(n) for n in committed} >= {AUDIT, NODE_MAPPINGS, KERNEL_STACK_TRACES}
    for name in [
        "golden/mlp_fp16_audit/provenance_audit.json",
        "inductor_provenance_tracking_node_mappings_3.json",
        "out/inductor_provenance_tracking_kernel_stack_traces.json",
        "pkg/data/kernel_information.json",
        "spyre_opspec_debug_handles.json",
        "spyre_provenance_diagnostics.json",
    ]:
        assert files.search(name), name
        assert artifact_for_filename(name) is not None, name
    for name in ["package.json", "kernel_information.json.bak", "my_kernel_information.json", "mappings.json"]:
        assert not files.search(name), name
        assert artifact_for_filename(name) is None, name


def test_a_folder_says_a_logged_artifact_and_its_graph_folder_file_once(
    run_cli: RunCli, data_dir: Path, tmp_path: Path
) -> None:
    """An OUT holds a logged artifact in its log and in its graph folder, and tlparse's pages
    copy both (issue 55 point 4): one line, while both are valid; an invalid copy its own."""
    root = tmp_path / "out"
    log = root / "trace" / "seed.log"
    shutil.copy(data_dir / "logs" / "seed_mlp.log", write(log, ""))
    graph = root / "graph_seed_00_0-0_inference"
    write(graph / MAPPINGS_NAME, SEED_TEXT)
    shutil.copy(log, write(root / "tlparse" / "seed" / "raw.log", ""))  # tlparse's copy
    code, out, err = run_cli("validate", root)
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        f"OK      v2.0  {NODE_MAPPINGS}  {log}:[0/0] (line 21), and {graph.name}/{MAPPINGS_NAME}",
        f"OK      v2    {KERNEL_STACK_TRACES}  {log}:[0/0] (line 23)",
    ]
    broken_seed(graph / MAPPINGS_NAME)
    code, out, _ = run_cli("validate", root)
    heads = [line for line in out.splitlines() if not line.startswith(" ")]
    assert code == 1 and heads == [
        f"INVALID v2.0  {NODE_MAPPINGS}  {graph / MAPPINGS_NAME}",
        f"OK      v2.0  {NODE_MAPPINGS}  {log}:[0/0] (line 21)",
        f"OK      v2    {KERNEL_STACK_TRACES}  {log}:[0/0] (line 23)",
    ]
    code, out, _ = run_cli("validate", root / "tlparse")  # named, tlparse's copy is checked
    assert code == 0 and f"{root / 'tlparse' / 'seed' / 'raw.log'}:[0/0] (line 21)" in out
