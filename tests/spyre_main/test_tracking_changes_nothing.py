"""Tracking never changes torch-spyre's outcome: each model compiled on torch-spyre main
with tracking on (``compile --backend spyre``) and off (the same route, no hook) gives the
same kernels with byte-identical SuperDSC bundles (every OpSpec, its handle id included),
or the same refusal, the one line of the refusals table in docs/torch-spyre-main.md."""

from __future__ import annotations

import re

import pytest

from helpers.where import REPO, ZOO
from spyre_main.test_spyre_zoo import ACCEPTED, _id

pytestmark = pytest.mark.compile

DOC = REPO / "docs" / "torch-spyre-main.md"


def refusals_table() -> list[tuple[str, str]]:
    """(spec, reason) of each row of the docs' refusals table."""
    rows = re.findall(r"^\| `([\w.]+:\w+)` \| `(.+)` \|$", DOC.read_text(), re.MULTILINE)
    assert rows, f"{DOC} has no refusals table"
    return [(f"{ZOO / spec.split(':')[0]}:{spec.split(':')[1]}", reason) for spec, reason in rows]


REFUSED = refusals_table()


def _bundles(case) -> dict[str, dict[str, bytes]]:
    """kernel name -> {file name: bytes} of its bundle folder (``<uuid8>_<kernel>_<8>``)."""
    found: dict[str, dict[str, bytes]] = {}
    for folder in case.bundle_dirs():
        files = {p.name: p.read_bytes() for p in sorted(folder.glob("sdsc_*.json"))}
        found[folder.name[9:-9]] = files
    return found


@pytest.mark.parametrize("spec", ACCEPTED, ids=[_id(s) for s in ACCEPTED])
def test_the_same_kernels_and_opspecs_with_and_without_tracking(spec, spyre_main_case, spyre_main_untracked):
    tracked, untracked = spyre_main_case(spec), spyre_main_untracked(spec)
    assert tracked.returncode == 0, tracked.stderr[-2000:]
    assert untracked.stdout.strip() == "compiled", untracked.stdout + untracked.stderr[-2000:]
    with_tracking, without = _bundles(tracked), _bundles(untracked)
    assert with_tracking and sorted(with_tracking) == sorted(without)
    for kernel, files in with_tracking.items():
        assert files == without[kernel], kernel


@pytest.mark.parametrize("spec, reason", REFUSED, ids=[_id(s) for s, _ in REFUSED])
def test_the_same_refusal_with_and_without_tracking(spec, reason, spyre_main_case, spyre_main_untracked):
    tracked = spyre_main_case(spec)
    assert tracked.returncode == 2, tracked.stdout + tracked.stderr[-2000:]
    (line,) = [text for text in tracked.stderr.splitlines() if text.startswith("spyre-provenance compile: error:")]
    assert tracked.graph_dirs() == [] and "Traceback" not in tracked.stderr
    if reason.startswith("the model fails in eager mode"):  # the project's refusal, before any compile
        assert line.endswith(f"{_id(spec)}: {reason}"), line
        return
    assert f": torch.compile failed: {reason}" in line, line
    untracked = spyre_main_untracked(spec)
    assert untracked.stdout.strip().startswith(f"refused: {reason}"), untracked.stdout + untracked.stderr[-2000:]
