"""Hostile input through ``validate``, ``diff`` and ``golden check``: no traceback, the right
exit code, bounded memory and time.

The corpus (tests/hostile/, written by tests/hostile/make_corpus.py) holds one file per case
under ``invalid/<case>/`` (validate must exit 1), ``unusable/<case>/`` (exit 2) or
``warn/<case>/`` (valid, but misfiled by tlparse: exit 0, 1 with --strict): truncated,
not UTF-8, duplicate keys, wrong types, kernel keys without ``:N``, inverse maps that
disagree, logs with a corrupt payload or envelope, ... The huge ones are made here: a
100 MB string, 100k-deep nesting, a log with a 30 MB line and one of 200k damaged lines;
each runs in its own process, whose peak RSS (``os.wait4``) and wall time are bounded.
Generated input (hypothesis, marker ``fuzz``): random bytes and byte-level mutations of
valid artifacts and logs; ``make test`` runs a few examples of each, ``pytest -m fuzz
--fuzz-examples 5000`` a long run.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

# pytest puts tests/ on sys.path (rootdir-relative "prepend" import mode)
from test_schemas import DIAG_V2

from helpers.where import DATA, GOLDEN, REPO, TESTS  # tests/ is on sys.path
from spyre_provenance import cli
from spyre_provenance.model import jsonio
from spyre_provenance.model.names import (
    DIAGNOSTICS,
    KERNEL_INFORMATION,
    KERNEL_STACK_TRACES,
    NODE_MAPPINGS,
    OPSPEC_DEBUG_HANDLES,
)
from spyre_provenance.validate import paths as path_validation
from spyre_provenance.validate import schemas

HOSTILE = TESTS / "hostile"
SEED_LOG = DATA / "logs" / "seed_mlp.log"
MIB = 2**20

RunCli = Callable[..., tuple[int, str, str]]


def corpus() -> list[tuple[str, str, Path]]:
    """(expected verdict, case, file) for every hand-made case."""
    found = []
    for verdict in EXIT:
        for folder in sorted((HOSTILE / verdict).iterdir()):
            (file,) = [p for p in folder.iterdir() if p.is_file()]
            found.append((verdict, folder.name, file))
    return found


EXIT = {"invalid": 1, "unusable": 2, "warn": 0}
CORPUS = corpus()
IDS = [f"{verdict}-{case}" for verdict, case, _ in CORPUS]
GOOD_DIAGNOSTICS = {
    "version": 1,
    "compile_id": "0/0",
    "graph": "inference",
    "partial": False,
    "mapping": "hook",
    "faults": [],
    "kernels": 2,
    "opspecs": 2,
    "handleless_opspecs": 0,
    "disagreements": [],
    "matches_upstream": True,
}


def test_corpus_is_large_and_covers_every_kind() -> None:
    assert len(CORPUS) >= 50
    names = {file.name for _, _, file in CORPUS}
    for artifact in (NODE_MAPPINGS, KERNEL_STACK_TRACES, KERNEL_INFORMATION, OPSPEC_DEBUG_HANDLES, DIAGNOSTICS):
        assert f"{artifact}.json" in names, artifact
    assert any(name.endswith(".log") for name in names)


def good_counterpart(file: Path, tmp_path: Path) -> Path:
    """A valid artifact of the same kind as ``file``, for ``diff``."""
    artifact = schemas.artifact_for_filename(file.name)
    if file.suffix == ".log":
        return SEED_LOG
    if artifact == DIAGNOSTICS:
        path = tmp_path / "good" / f"{DIAGNOSTICS}.json"
        path.parent.mkdir(exist_ok=True)
        path.write_text(json.dumps(GOOD_DIAGNOSTICS))
        return path
    return DATA / "artifacts" / f"{artifact or NODE_MAPPINGS}.json"


def assert_no_crash(code: int, out: str, err: str) -> None:
    assert code != 3 and "internal error" not in err, err
    assert "Traceback" not in out + err, err


# --- validate ------------------------------------------------------------------------------------


@pytest.mark.parametrize("verdict, case, file", CORPUS, ids=IDS)
def test_validate_gives_the_right_exit_code(run_cli: RunCli, verdict: str, case: str, file: Path) -> None:
    code, out, err = run_cli("validate", file)
    assert_no_crash(code, out, err)
    assert code == EXIT[verdict], out + err
    if verdict == "unusable":  # one clear line naming the file
        assert out == "" and err.count("\n") == 1 and err.startswith(f"spyre-provenance validate: error: {file}: ")
    elif verdict == "warn":  # valid: a WARN line and its reason, exit 1 only with --strict
        assert out.startswith("WARN ") and "\n  warning: line 1: " in out and err == ""
        assert run_cli("validate", "--strict", file) == (1, out, "")
    else:
        assert "INVALID " in out and err == ""
    if "duplicate-key" in case:  # reported, never silently dropped
        assert "duplicate key" in out


@pytest.mark.parametrize("engine", ["fast", "full"])
def test_both_engines_give_the_same_exit_codes(run_cli: RunCli, engine: str) -> None:
    for verdict, case, file in CORPUS:
        code, out, err = run_cli("validate", "--engine", engine, file)
        assert code == EXIT[verdict], (case, out, err)


# --- diff ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("verdict, case, file", CORPUS, ids=IDS)
def test_diff_never_crashes(run_cli: RunCli, verdict: str, case: str, file: Path, tmp_path: Path) -> None:
    good = good_counterpart(file, tmp_path)
    for a, b in ((file, good), (good, file)):
        code, out, err = run_cli("diff", a, b)
        assert_no_crash(code, out, err)
        if file.name != f"{DIAGNOSTICS}.json":  # diff compares provenance, not diagnostics
            assert code in (1, 2), (code, out, err)  # never "same provenance" against a good file
        if code == 2:
            assert out == "" and err.count("\n") == 1 and err.startswith("spyre-provenance diff: error: ")
        if verdict == "unusable" and file.suffix == ".json":
            assert code == 2


def _with_duplicate(text: str, field: str) -> str:
    """The same document with ``field`` written twice, first with another value: a reader
    that keeps the last value sees the original document."""
    return text.replace(f'"{field}"', f'"{field}": {{}}, "{field}"', 1)


def test_diff_reports_duplicate_keys(run_cli: RunCli, tmp_path: Path) -> None:
    good = DATA / "artifacts" / f"{NODE_MAPPINGS}.json"
    twice = tmp_path / f"{NODE_MAPPINGS}.json"
    twice.write_text(_with_duplicate(good.read_text(), "preToPost"))
    code, out, err = run_cli("diff", good, twice)
    assert code == 2 and "duplicate key" in err, (code, out, err)


# --- golden check -----------------------------------------------------------------------------------

GOLDEN_ARTIFACTS = {f"{a}.json" for a in (NODE_MAPPINGS, KERNEL_STACK_TRACES, OPSPEC_DEBUG_HANDLES, KERNEL_INFORMATION)}
GOLDEN_CORPUS = [c for c in CORPUS if c[2].name in GOLDEN_ARTIFACTS or c[2].suffix == ".log"]


@pytest.fixture(scope="module")
def compiled_mlp(golden_compile: Callable[[str], Any]) -> Any:
    """The session's compile of golden case ``mlp``, so golden check needs no compile here."""
    case = golden_compile("mlp")
    assert case.returncode == 0, case.stdout + case.stderr[-2000:]
    return case


@pytest.fixture
def golden_check(
    compiled_mlp: Any, run_cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> Callable[[Path], tuple[int, str, str]]:
    """``golden check mlp --golden-dir DIR``, the compile replaced by the session's."""
    from spyre_provenance.cli import golden_command

    monkeypatch.setattr(
        golden_command, "compile_case", lambda case, out: golden_command.CaseCompile(compiled_mlp.out, 0, "")
    )

    def run(golden_dir: Path) -> tuple[int, str, str]:
        return run_cli("golden", "check", "mlp", "--golden-dir", golden_dir)

    return run


def hostile_golden(tmp_path: Path, file: Path) -> Path:
    """golden/mlp with ``file`` in place of its artifact (a log: the golden is only that log)."""
    case = tmp_path / "golden" / "mlp"
    if file.suffix == ".log":
        (case / "trace").mkdir(parents=True)
        shutil.copy(file, case / "trace" / file.name)
    else:
        shutil.copytree(GOLDEN / "mlp", case)
        shutil.copy(file, case / "graph_00_0-0_inference" / file.name)
    return case.parent


def test_golden_check_passes_on_the_real_golden(golden_check: Callable[[Path], tuple[int, str, str]]) -> None:
    code, out, err = golden_check(GOLDEN)
    assert (code, out.strip(), err) == (0, "golden mlp: ok", "")


@pytest.mark.parametrize("verdict, case, file", GOLDEN_CORPUS, ids=[f"{v}-{c}" for v, c, _ in GOLDEN_CORPUS])
def test_golden_check_refuses_a_broken_golden(
    golden_check, verdict: str, case: str, file: Path, tmp_path: Path
) -> None:
    code, out, err = golden_check(hostile_golden(tmp_path, file))
    assert_no_crash(code, out, err)
    assert code in (1, 2), (code, out, err)  # a broken golden never passes
    if code == 2:
        assert out == "" and err.count("\n") == 1 and err.startswith("spyre-provenance golden: error: ")
    if verdict == "unusable" and file.suffix == ".json":
        assert code == 2


def test_golden_check_reports_duplicate_keys(golden_check, tmp_path: Path) -> None:
    golden_dir = tmp_path / "golden"
    shutil.copytree(GOLDEN / "mlp", golden_dir / "mlp")
    path = golden_dir / "mlp" / "graph_00_0-0_inference" / f"{NODE_MAPPINGS}.json"
    path.write_text(_with_duplicate(path.read_text(), "preToPost"))
    code, out, err = golden_check(golden_dir)
    assert code == 2 and "duplicate key" in err, (code, out, err)


# --- bounded memory and time, each in its own process --------------------------------------------


# The child reports its own peak RSS (VmHWM of its address space) when it exits. Not
# getrusage: on Linux a child's ru_maxrss starts at the RSS of the process it was forked
# (or vforked) from, here the test process, so it would measure pytest, not the command.
PEAK_REPORTER = """
import atexit, os, runpy, sys


def report():
    with open("/proc/self/status") as fh:
        peak = next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:"))
    with open(os.environ["SPYRE_TEST_PEAK_FILE"], "w") as fh:
        fh.write(str(peak * 1024))


atexit.register(report)
sys.argv = ["spyre-provenance", *sys.argv[1:]]
runpy.run_module("spyre_provenance", run_name="__main__")
"""


def measured(
    args: list[str], env: dict[str, str] | None = None, timeout: float = 120
) -> tuple[int, str, str, int, float]:
    """``spyre-provenance ARGS`` in its own process: (exit code, stdout, stderr, its peak RSS
    in bytes, wall seconds)."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        peak_file = Path(tmp) / "peak"
        start = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-c", PEAK_REPORTER, *args],
            capture_output=True,
            timeout=timeout,
            env={**os.environ, "PYTHONPATH": str(REPO / "src"), "SPYRE_TEST_PEAK_FILE": str(peak_file), **(env or {})},
        )
        elapsed = time.monotonic() - start
        peak = int(peak_file.read_text())
    return done.returncode, done.stdout.decode(errors="replace"), done.stderr.decode(errors="replace"), peak, elapsed


def _write_huge_string(path: Path, size: int) -> Path:
    """A node mapping whose one value is a single string of ``size`` bytes (and whose
    inverse map is empty, so it is INVALID, not OK, and the problem quotes the string)."""
    with open(path, "wb") as fh:
        fh.write(
            b'{"version": 2.0, "postToPre": {}, "cppCodeToPost": {}, "postToCppCode": {}, "preToPost": {"linear": ["'
        )
        chunk = b"x" * MIB
        for _ in range(size // MIB):
            fh.write(chunk)
        fh.write(b'"]}}')
    return path


@pytest.fixture(scope="module")
def huge_string(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _write_huge_string(tmp_path_factory.mktemp("huge") / f"{NODE_MAPPINGS}.json", 100 * MIB)


FLOOR = 150 * MIB  # an idle interpreter with the package imported is ~60 MiB


def test_100_mb_string_validate(huge_string: Path) -> None:
    size = huge_string.stat().st_size
    code, out, err, peak, elapsed = measured(["validate", str(huge_string)])
    assert code == 1 and "Traceback" not in err, err
    assert 'missing "linear"' in out and "(104857600 characters)" in out, out[:500]
    assert len(out) < 2000  # the 100 MB name is cut in every problem line, not printed
    assert peak < FLOOR + 3 * size, f"peak RSS {peak / MIB:.0f} MiB for {size / MIB:.0f} MiB"
    assert elapsed < 30, elapsed


def test_100_mb_string_diff(huge_string: Path) -> None:
    size = huge_string.stat().st_size
    good = DATA / "artifacts" / f"{NODE_MAPPINGS}.json"
    code, out, err, peak, elapsed = measured(["diff", str(good), str(huge_string)])
    assert code in (1, 2) and "Traceback" not in err and "internal error" not in err, err[-2000:]
    assert peak < FLOOR + 6 * size, f"peak RSS {peak / MIB:.0f} MiB for {size / MIB:.0f} MiB"
    assert elapsed < 60, elapsed


def test_100_mb_string_diff_output_is_bounded(huge_string: Path) -> None:
    good = DATA / "artifacts" / f"{NODE_MAPPINGS}.json"
    code, out, err, _, _ = measured(["diff", str(good), str(huge_string)])
    assert len(out) < 100_000, len(out)


def test_over_the_size_limit_validate_refuses_with_one_line(huge_string: Path) -> None:
    code, out, err, peak, elapsed = measured(["validate", str(huge_string)], env={"SPYRE_PROVENANCE_MAX_BYTES": "50M"})
    assert (code, out) == (2, "")
    assert (
        err.strip()
        == f"spyre-provenance validate: error: {huge_string}: 100.0 MiB is over the --max-bytes limit of 50.0 MiB"
    )
    assert peak < FLOOR and elapsed < 10  # refused before reading


def test_over_the_size_limit_diff_refuses_with_one_line(huge_string: Path) -> None:
    good = DATA / "artifacts" / f"{NODE_MAPPINGS}.json"
    code, out, err, peak, _ = measured(["diff", str(good), str(huge_string)], env={"SPYRE_PROVENANCE_MAX_BYTES": "50M"})
    assert (code, out) == (2, "") and "over the size limit" in err, err
    assert peak < FLOOR


@pytest.mark.parametrize("shape", ["arrays", "objects"])
def test_100k_deep_nesting(tmp_path: Path, shape: str) -> None:
    depth = 100_000
    text = "[" * depth + "]" * depth if shape == "arrays" else '{"a": ' * depth + "1" + "}" * depth
    path = tmp_path / f"{NODE_MAPPINGS}.json"
    path.write_text(text)
    good = DATA / "artifacts" / f"{NODE_MAPPINGS}.json"
    for args in (["validate", str(path)], ["validate", "--engine", "full", str(path)], ["diff", str(good), str(path)]):
        code, out, err, peak, elapsed = measured(args)
        assert code == 2 and out == "" and err.count("\n") == 1, (args, err)
        assert "nested too deeply" in err, err
        assert peak < FLOOR and elapsed < 10, (args, peak, elapsed)


def test_log_with_a_30_mb_line_and_200k_damaged_lines(tmp_path: Path) -> None:
    import hashlib

    payload = json.dumps({"version": 2.0, "preToPost": {"linear": ["x" * (30 * MIB)]}}).encode()
    envelope = {
        "artifact": {"name": NODE_MAPPINGS, "encoding": "json"},
        "frame_id": 0,
        "frame_compile_id": 0,
        "attempt": 0,
        "has_payload": hashlib.md5(payload).hexdigest(),
    }
    log = tmp_path / "dedicated_log_torch_trace_big.log"
    with open(log, "wb") as fh:
        fh.write(b"V1202 10:56:15.069000 1 a.py:1] " + json.dumps(envelope).encode() + b"\n\t" + payload + b"\n")
        fh.write(b"garbage without a glog prefix\n" * 200_000)
    code, out, err, peak, elapsed = measured(["validate", str(log)])
    assert code == 1 and err == "", err
    lines = out.splitlines()
    assert "  lines 3-200002: no glog prefix: not a TORCH_TRACE record" in lines  # one line, not 200k
    assert len(lines) < 20
    assert peak < FLOOR + 6 * 30 * MIB and elapsed < 30, (peak, elapsed)


DRIVER = """
import contextlib, io, json, sys, time
from spyre_provenance import cli

calls = json.loads(sys.argv[1])
worst = 0.0
for args in calls:
    start = time.monotonic()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        cli.main(args)
    worst = max(worst, time.monotonic() - start)
print(json.dumps({"calls": len(calls), "worst": worst}))
"""


def test_whole_corpus_in_bounded_memory_and_time(tmp_path: Path) -> None:
    """validate on every file at once, then diff of each against a good counterpart, all in
    one process: its peak RSS and each call's time stay small."""
    files = [str(f) for _, _, f in CORPUS]
    code, out, err, peak, elapsed = measured(["validate", *files])
    assert code == 2 and "Traceback" not in err and "internal error" not in err
    assert len([line for line in err.splitlines() if line.startswith("spyre-provenance validate: error:")]) == sum(
        v == "unusable" for v, _, _ in CORPUS
    )
    assert peak < FLOOR and elapsed < 30, (peak, elapsed)

    calls = [["diff", str(f), str(good_counterpart(f, tmp_path))] for _, case, f in CORPUS]
    peak_file = tmp_path / "peak"
    driver = textwrap.dedent(DRIVER) + PEAK_REPORTER.split("atexit.register(report)")[0] + "report()\n"
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", driver, json.dumps(calls)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO / "src"), "SPYRE_TEST_PEAK_FILE": str(peak_file)},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert report["calls"] == len(CORPUS) and report["worst"] < 5, report
    assert int(peak_file.read_text()) < FLOOR and time.monotonic() - start < 60


# --- generated input (hypothesis) --------------------------------------------------------------------

SEEDS = {
    f"{a}.json": (DATA / "artifacts" / f"{a}.json").read_bytes()
    for a in (NODE_MAPPINGS, KERNEL_STACK_TRACES, KERNEL_INFORMATION, OPSPEC_DEBUG_HANDLES)
}
SEEDS[f"{DIAGNOSTICS}.json"] = json.dumps(GOOD_DIAGNOSTICS).encode()
SEEDS[f"{DIAGNOSTICS}_v2.json"] = json.dumps(DIAG_V2).encode()  # what the hook writes; v1 is still read
SEEDS["dedicated_log_torch_trace_seed.log"] = SEED_LOG.read_bytes()
SPECIAL_BYTES = st.sampled_from(
    [b",", b"{", b"}", b"[", b"]", b'"', b":", b"\\", b"\x00", b"\xff", b"\n", b"\t", b"\\u", b"1e999", b"-"]
)


@st.composite
def mutated(draw: st.DrawFn) -> tuple[str, bytes]:
    """A valid artifact or log with one to three byte-level mutations."""
    name = draw(st.sampled_from(sorted(SEEDS)))
    data = bytearray(SEEDS[name])
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(data)))
        kind = draw(st.sampled_from(["truncate", "flip", "insert", "delete", "repeat"]))
        if kind == "truncate":
            del data[at:]
        elif kind == "flip" and at < len(data):
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif kind == "insert":
            data[at:at] = draw(SPECIAL_BYTES | st.binary(min_size=1, max_size=4))
        elif kind == "delete":
            del data[at : at + draw(st.integers(1, 16))]
        else:
            data[at:at] = data[at : at + draw(st.integers(1, 64))]
    return name, bytes(data)


def fuzz_settings(test: Callable[..., Any]) -> Callable[..., Any]:
    return settings(settings.get_profile("spyre-fuzz"))(test)


@contextlib.contextmanager
def captured() -> Iterator[tuple[io.StringIO, io.StringIO]]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        yield out, err


def check_one(tmp: Path, name: str, data: bytes) -> None:
    """validate (both engines agreeing), then diff against the valid original: no crash."""
    folder = tmp / str(abs(hash(data)))
    folder.mkdir(exist_ok=True)
    path = folder / name
    path.write_bytes(data)
    assert all(r.status in ("ok", "invalid", "unusable") for r in path_validation.check_paths([str(path)]))
    if path.suffix == ".json" and data.strip():
        verdicts = []
        for full in (False, True):
            try:
                verdicts.append(
                    "ok"
                    if schemas.validate_bytes(data, schemas.artifact_for_filename(name), full=full).ok
                    else "invalid"
                )
            except schemas.UnusableInput:
                verdicts.append("unusable")
        assert verdicts[0] == verdicts[1], (verdicts, data[:300])
    original = tmp / "originals" / name
    original.parent.mkdir(exist_ok=True)
    original.write_bytes(SEEDS[name])
    for args in (["validate", str(path)], ["diff", str(original), str(path)]):
        with captured() as (out, err):
            code = cli.main(args)
        assert code in (0, 1, 2), (args, code, err.getvalue()[-2000:])
        assert "Traceback" not in err.getvalue()


@pytest.mark.fuzz
def test_fuzz_mutated_artifacts_and_logs(tmp_path_factory: pytest.TempPathFactory) -> None:
    tmp = tmp_path_factory.mktemp("fuzz-mutated")
    seen: dict[str, int] = {}

    @fuzz_settings
    @given(mutated())
    def run(case: tuple[str, bytes]) -> None:
        name, data = case
        check_one(tmp, name, data)
        seen[name] = seen.get(name, 0) + 1

    run()
    assert seen


@pytest.mark.fuzz
def test_fuzz_random_bytes(tmp_path_factory: pytest.TempPathFactory) -> None:
    tmp = tmp_path_factory.mktemp("fuzz-bytes")

    @fuzz_settings
    @given(st.sampled_from(sorted(SEEDS)), st.binary(max_size=512) | st.text(max_size=256).map(str.encode))
    def run(name: str, data: bytes) -> None:
        check_one(tmp, name, data)

    run()


@pytest.mark.fuzz
def test_fuzz_duplicate_keys_are_always_reported() -> None:
    """Any generated artifact with one object key written twice: both engines name it."""
    from test_validator_agreement import GENERATED, _dumps_repeating, _positions

    @fuzz_settings
    @given(st.sampled_from(sorted(GENERATED)), st.data())
    def run(artifact: str, data: st.DataObject) -> None:
        doc = data.draw(GENERATED[artifact])
        objects = [doc] * bool(doc) + [c[k] for c, k in _positions(doc) if isinstance(c[k], dict) and c[k]]
        assume(objects)
        text = _dumps_repeating(doc, data.draw(st.sampled_from(objects)))
        for full in (False, True):
            report = schemas.validate_bytes(text, artifact, full=full)
            assert any(
                p.message == "duplicate key (JSON readers keep only one of the values)" for p in report.problems
            ), text
        with pytest.raises(schemas.UnusableInput, match="duplicate key"):
            jsonio.load_json(text)

    run()


@pytest.mark.parametrize("version", [{"k:1": []}, [2], "2"])
def test_diff_of_opspec_handles_with_a_hostile_version_is_unusable_not_internal(tmp_path, run_cli, version) -> None:
    """Found by the fuzz above: an OpSpec document whose ``version`` is an object made
    ``diff`` fail inside (exit 3, "unhashable type"); it is unusable input, exit 2."""
    for side in ("a", "b"):
        (tmp_path / side).mkdir()
        doc = {"version": version, "sdsc_x_0:1": [], "handles": {}}
        (tmp_path / side / "spyre_opspec_debug_handles.json").write_text(json.dumps(doc))
    code, out, err = run_cli(
        "diff", tmp_path / "a" / "spyre_opspec_debug_handles.json", tmp_path / "b" / "spyre_opspec_debug_handles.json"
    )
    assert code == 2 and "internal error" not in err, (code, out, err)
    assert len(err.strip().splitlines()) == 1, err
