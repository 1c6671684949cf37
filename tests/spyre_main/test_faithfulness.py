"""The stand-in is faithful where torch-spyre itself can tell: torch-spyre's own
device-free provenance tests (handles, their ids, the kernel provenance key, the profiler
event name, the observer of its passes) run on it and must all pass."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

#: torch-spyre's tests that need no device (REFERENCE.md §4.1: 120 tests at 9a6b71e)
OWN_TESTS = (
    "tests/inductor/test_provenance.py",
    "tests/inductor/test_provenance_observer.py",
    "tests/inductor/test_kernel_provenance.py",
)


def test_torch_spyre_own_provenance_tests_pass_on_the_stand_in(torch_spyre, torch_spyre_env):
    missing = [t for t in OWN_TESTS if not (torch_spyre.source / t).is_file()]
    if missing:
        pytest.fail(f"{torch_spyre.origin} has no {', '.join(missing)}")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "spyre_main.torch_spyre_plugin",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:xdist",
            "-q",
            "-rfE",
            *OWN_TESTS,
        ],
        cwd=torch_spyre.source,
        env=torch_spyre_env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    tail = done.stdout[-4000:] + done.stderr[-2000:]
    summary = re.search(r"(?m)^=*\s*(?P<text>(?:\d+ \w+(?:, )?)+) in [0-9.]+s", done.stdout)
    assert summary is not None, tail
    counts = {word: int(n) for n, word in re.findall(r"(\d+) (\w+)", summary["text"])}
    print(f"torch-spyre {torch_spyre.commit}: {summary['text']}")
    assert done.returncode == 0, tail
    assert counts.get("passed", 0) >= 100, counts  # 120 at 9a6b71e; a newer main may add some
    assert set(counts) == {"passed"}, counts  # nothing failed, errored or skipped
