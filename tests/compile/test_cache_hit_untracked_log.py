"""A user's plain TORCH_TRACE log of a warm-cache run: Inductor logs its provenance records
without a payload on a FX-graph-cache hit of a graph compiled without provenance tracking
(``codecache.py``). Every reader takes them as not logged, with one note of why: the log
reads as the cold run's, which holds no provenance record at all.

One real program, run cold then warm (plain ``python``, its own Inductor cache, no hook),
each with its own TORCH_TRACE folder.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import warm_start
from helpers.fresh_process import FRESH  # tests/ is on sys.path
from spyre_provenance.logs import tlparse_render, tracelog
from spyre_provenance.model.names import KERNEL_STACK_TRACES, NODE_MAPPINGS
from spyre_provenance.validate.paths import validate_paths

pytestmark = pytest.mark.compile

PROGRAM = """
import torch
f = torch.compile(lambda x: torch.tanh(x) * 2)
print(f(torch.randn(8)).sum().item() != 0)
"""
NOTE = tracelog.empty_records_note(2)
NO_MAPPING = "no kernel call sites found: no TORCH_TRACE log or graph folder with a node mapping"


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(cold trace folder, warm trace folder) of one program sharing one Inductor cache."""
    root = tmp_path_factory.mktemp("cache_hit_untracked")
    cache = {"TORCHINDUCTOR_CACHE_DIR": str(root / "cache"), **warm_start.CACHES_ON}
    for run in ("cold", "warm"):
        done = FRESH.run(driver=PROGRAM, env={**cache, "TORCH_TRACE": str(root / run)})
        assert done.returncode == 0, done.stderr[-3000:]
    return root / "cold", root / "warm"


def test_the_warm_log_holds_the_payload_less_records(traces: tuple[Path, Path]) -> None:
    # what this file is about: should torch stop logging them, these tests test nothing
    cold, warm = (next(folder.glob("*.log")) for folder in traces)
    assert list(tracelog.read_trace(cold)) == []
    items = list(tracelog.read_trace(warm))
    assert [(type(i), i.name, i.compile_id) for i in items] == [
        (tracelog.EmptyRecord, NODE_MAPPINGS, "[0/0]"),
        (tracelog.EmptyRecord, KERNEL_STACK_TRACES, "[0/0]"),
    ]


def test_validate_reads_it_as_a_log_without_records(run_cli, traces: tuple[Path, Path]) -> None:
    cold, warm = traces
    code, out, err = run_cli("validate", cold)
    assert (code, out) == (2, "")
    assert (
        err
        == f"spyre-provenance validate: error: {cold}: no provenance artifacts in this folder's files or TORCH_TRACE logs\n"
    )
    code, out, err = run_cli("validate", warm)
    assert (code, out) == (2, "")
    (log,) = warm.glob("*.log")
    assert err == (
        f"spyre-provenance validate: error: {warm}: no provenance artifacts in this folder's files or"
        f" TORCH_TRACE logs; {log}: {NOTE}\n"
    )
    code, out, err = run_cli("validate", log)
    assert (code, out) == (2, "")
    assert err == f"spyre-provenance validate: error: {log}: no provenance artifacts in this TORCH_TRACE log ({NOTE})\n"


def test_validate_notes_them_beside_a_tracked_log(
    run_cli, traces: tuple[Path, Path], data_dir: Path, tmp_path: Path
) -> None:
    (log,) = traces[1].glob("*.log")
    (tmp_path / "warm.log").write_bytes(log.read_bytes())
    (tmp_path / "tracked.log").write_bytes((data_dir / "logs" / "seed_mlp.log").read_bytes())
    code, out, err = run_cli("validate", tmp_path)
    assert (code, err) == (0, "")
    assert out.splitlines()[2:] == [f"NOTE    -     TORCH_TRACE  {tmp_path / 'warm.log'}", f"  note: {NOTE}"]
    code, out, _ = run_cli("validate", "--format", "json", tmp_path)
    notes = [r["notes"] for r in json.loads(out) if r["notes"]]
    assert notes == [[NOTE]]
    # the API's reports are verdicts on artifacts: the note is none
    assert [r.artifact for r in validate_paths([tmp_path])] == [NODE_MAPPINGS, KERNEL_STACK_TRACES]


@pytest.mark.parametrize("command", ["lookup", "compare", "annotate"])
def test_readers_of_mappings_say_there_is_none(
    run_cli, traces: tuple[Path, Path], tmp_path: Path, command: str
) -> None:
    """As on the cold log, one error line, exit 2, and why (was: the empty record's "no JSON value")."""
    for trace in traces:
        if command == "lookup":
            args: tuple[object, ...] = ("lookup", "--from", trace, "cpp_fused_mul_tanh_0")
        elif command == "compare":
            args = ("compare", trace, trace)
        else:
            chrome = tmp_path / "prof.json"
            event = {"name": "cpp_fused_mul_tanh_0", "ph": "X", "ts": 1, "dur": 2, "pid": 1, "tid": 1}
            chrome.write_text(json.dumps({"traceEvents": [event]}))
            args = ("annotate", "--from", trace, chrome, "-o", tmp_path / "annotated.json")
        why = f" ({NOTE})" if trace == traces[1] else ""
        code, out, err = run_cli(*args)
        assert (code, err) == (2, f"spyre-provenance {command}: error: {trace}: {NO_MAPPING}{why}\n")


@pytest.mark.skipif(tlparse_render.tlparse_binary() is None, reason="tlparse is not installed")
def test_open_shows_the_page_with_nothing_linked(run_cli, traces: tuple[Path, Path], tmp_path: Path) -> None:
    for trace in traces:
        out_dir = tmp_path / trace.name
        code, out, err = run_cli("open", "--no-browser", "--out", out_dir, trace)
        assert code == 1
        assert (
            out
            == f"[0/0] inference  {out_dir / 'provenance_tracking_-_0_0_0.html'}  (no provenance mapping logged: nothing is linked)\n"
        )
        why = f" ({NOTE})" if trace == traces[1] else ""
        assert err == f"{trace}: no compiled graph with a provenance mapping in the log{why}\n"
