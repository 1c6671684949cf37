"""A ``make bench`` section's quick run, as its smoke test starts it: ``python -m
bench.<section> --quick`` from the checkout (``bench/`` is importable there, not installed)."""

from __future__ import annotations

import subprocess
import sys

from helpers.where import REPO


def quick_run(section: str, timeout: float = 600) -> str:
    """What ``python -m bench.<section> --quick`` printed on stdout; fails the test, with the
    end of its stderr, when it did not exit 0."""
    done = subprocess.run(
        [sys.executable, "-m", f"bench.{section}", "--quick"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout
