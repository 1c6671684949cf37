"""``make bench-spyre-main`` runs: one pair on the seed MLP, its table's shape (no timed
assertion: the figures are the bench's to report)."""

from __future__ import annotations

import re
import subprocess
import sys

from helpers.where import REPO


def test_the_torch_spyre_bench_measures_both_arms(torch_spyre):
    done = subprocess.run(
        [
            sys.executable,
            str(REPO / "tests" / "spyre_main" / "run_booted.py"),
            "-m",
            "bench.torch_spyre_overhead",
            "--pairs",
            "1",
            "mlp",
        ],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    (row,) = [line for line in done.stdout.splitlines() if line.startswith("| mlp |")]
    ratio = r"[0-9.]+x \([0-9.]+-[0-9.]+\)"
    assert re.fullmatch(rf"\| mlp \| [1-9]\d* \| {ratio} \| {ratio} \| {ratio} \| [0-9.]+ \|", row), row


def test_without_torch_spyre_it_says_so():
    done = subprocess.run(
        [sys.executable, "-m", "bench.torch_spyre_overhead", "mlp"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
    )
    assert done.returncode == 0 and "not measured: torch_spyre is not installed" in done.stdout, done.stdout
