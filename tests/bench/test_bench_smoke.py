"""``make bench`` keeps working: the quick run prints a table of the full run's shape.

Only structure and finite ratios are asserted, never timings: timings belong to the machine
(the real numbers are in the README's benchmarks section). Also checked: the synthetic
mapping the benchmark measures is valid, and the builder's bytes are exactly what
``json.dumps`` writes for it, at a size where the chunked writer has several chunks.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys

import msgspec
import pytest

from bench import synthetic
from helpers.where import REPO
from spyre_provenance.links import mapping
from spyre_provenance.validate import schemas

SECTIONS = (
    "#### 1. Compile overhead",
    "#### 2. Validation throughput",
    "#### 3. Build",
    "#### 4. Scaling",
    "#### 5. Audit overhead",
    "#### 6. Whole-process overhead",
    "#### Targets",
)


def tables(text: str) -> list[list[dict[str, str]]]:
    """Every markdown table in ``text``, as rows of header -> cell."""
    found, lines = [], text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("|") and i + 1 < len(lines) and re.fullmatch(r"\|(\s*-+:?\s*\|)+", lines[i + 1]):
            header = [c.strip() for c in line.strip("|").split("|")]
            rows = []
            for row in lines[i + 2 :]:
                if not row.startswith("|"):
                    break
                rows.append(dict(zip(header, (c.strip() for c in row.strip("|").split("|")), strict=True)))
            found.append(rows)
    return found


def finite(cell: str) -> float:
    value = float(cell.replace(",", ""))
    assert math.isfinite(value), cell
    return value


@pytest.fixture(scope="module")
def quick_table(tmp_path_factory: pytest.TempPathFactory) -> str:
    raw = tmp_path_factory.mktemp("bench") / "raw.json"
    done = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--json", str(raw)],
        cwd=REPO,  # bench/ is importable from the checkout, not installed
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(raw.read_bytes())["compile"]["models"], "raw measurements written"
    return done.stdout


def test_quick_run_prints_every_section_in_order(quick_table: str) -> None:
    positions = [quick_table.find(s) for s in SECTIONS]
    assert -1 not in positions, positions
    assert positions == sorted(positions)
    assert re.search(r"Machine: .+ cores .+ Python \d+\.\d+\.\d+ · torch \S+", quick_table)
    assert re.search(r"### Benchmark run \d{4}-\d\d-\d\d \d\d:\d\d UTC", quick_table)


def test_compile_table_has_finite_ratios_for_each_model(quick_table: str) -> None:
    compile_rows = tables(quick_table)[0]
    assert [row["model"] for row in compile_rows] == ["tiny"]
    for row in compile_rows:
        assert finite(row["call sites"]) >= 1  # the hook mapped the compile it timed
        for column in ("A (s)", "B (s)", "C (s)", "A/B", "A/C", "A/B CPU"):
            assert finite(row[column]) > 0
        low, high = row["A/B per round"].split("-")
        assert finite(low) <= finite(high)


def test_throughput_tables_have_finite_ratios(quick_table: str) -> None:
    _, validation, build, scaling, _audit, _whole = tables(quick_table)
    assert [row["path"].split(":")[0] for row in validation] == [
        "`json.loads` (the floor)",
        "`json.loads`, cyclic GC paused",
        "fast path",
        "JSON Schema path",
    ]
    for row in validation:
        for column in ("time (s)", "x json.loads", "x json.loads, GC paused", "peak / size"):
            assert finite(row[column]) > 0
    assert finite(build[-1]["peak / size"]) > 0
    *sizes, spread = scaling
    assert [finite(row["references"]) for row in sizes] == [1000, 4000]
    assert spread["references"] == "max / min"
    for column in ("build + bytes", "json.loads", "fast path", "JSON Schema path"):
        assert finite(spread[column]) >= 1.0


def test_whole_process_row_ran_both_arms_as_fresh_processes(quick_table: str) -> None:
    (row,) = tables(quick_table)[5]
    assert row["model"] == "tiny, training"
    assert (finite(row["graphs"]), finite(row["call sites"]), finite(row["pairs"])) == (2, 2, 1)  # forward, backward
    assert finite(row["post-grad nodes"]) >= 2
    for column in ("A wall (s)", "B wall (s)"):
        assert finite(row[column]) > 1  # a whole interpreter, torch import included
    for column in ("A/B wall", "A/B CPU"):
        median, spread = row[column].split(" ", 1)
        assert finite(median) > 0 and re.fullmatch(r"\(\d+\.\d\d-\d+\.\d\d\)", spread), row[column]
    own = re.fullmatch(r"(\d+) ms \((\d+\.\d)%\)", row["hook's own time"])
    assert own and int(own[1]) > 0, row["hook's own time"]  # the hook was imported and ran in arm A
    assert "enter tracking" in row["A - B by phase"] and "interpreter start and exit" in row["A - B by phase"]


def test_hook_import_leaves_out_what_a_tracked_compile_never_uses() -> None:
    # Every tracked process pays for what importing the hook imports (the whole-process
    # rows): the log readers and jsonschema are for the command line, not for the hook.
    code = "import sys, spyre_provenance.capture.tracking; print(' '.join(sorted(sys.modules)))"
    loaded = set(
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    )
    assert "spyre_provenance.validate.coverage" in loaded and "spyre_provenance.validate.fastpath" in loaded
    assert not loaded & {"spyre_provenance.logs.tracelog", "spyre_provenance.logs.graphs", "jsonschema", "torch"}


def test_every_target_gets_a_verdict(quick_table: str) -> None:
    verdicts = quick_table.split("#### Targets", 1)[1].strip().splitlines()
    assert len(verdicts) == 6  # one per target: compile, validation, build, scaling, audit, whole process
    assert all(re.match(r"- \*\*(met|not met|met on .+)\*\* \(", line) for line in verdicts)


def test_audit_row_compares_compile_with_and_without_the_audit(quick_table: str) -> None:
    (row,) = tables(quick_table)[4]
    assert row["model"] == "tiny" and finite(row["stages audited"]) >= 4  # the audit arm counted stages
    for column in ("compile (s)", "compile --audit (s)", "ratio"):
        assert finite(row[column]) > 0
    assert "compile --audit / compile on the tiny: wall " in quick_table.split("#### Targets", 1)[1]


def test_synthetic_mapping_is_valid_and_written_exactly_like_json_dumps() -> None:
    refs = 100_000  # postToCppCode gets 50k keys: several of the writer's chunks
    document = mapping.build_node_mappings(synthetic.records(refs), *synthetic.relation(refs))
    data = mapping.to_json_bytes(document)
    assert data == json.dumps(msgspec.to_builtins(document), ensure_ascii=False).encode("utf-8")
    assert len(document.postToCppCode) > mapping._CHUNK
    report = schemas.validate_bytes(data)
    assert report.ok, report.problems[:3]
    assert len(document.cppCodeToPost) == refs // synthetic.REFS_PER_KERNEL
    assert sum(map(len, document.cppCodeToPost.values())) == refs
