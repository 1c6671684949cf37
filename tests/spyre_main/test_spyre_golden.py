"""The golden cases made on torch-spyre main (``spyre_main_<commit>_*``, made with
``golden update`` through ``run_booted.py``): this session's compile of each, on torch-spyre
main through the route, is compared with ``golden/<case>/`` by the ``provenance_regression``
fixture, as tests/compile/test_golden.py does for the other cases; and ``golden check``
run booted passes on them."""

from __future__ import annotations

import subprocess
import sys

import pytest

from helpers.where import GOLDEN, REPO
from spyre_provenance import golden
from spyre_provenance.golden.cases import TORCH_SPYRE_MAIN

pytestmark = pytest.mark.compile

SPYRE_CASES = [name for name, case in golden.CASES.items() if case.needs_torch_spyre]


def test_the_cases_name_the_commit_they_were_made_on(torch_spyre):
    assert SPYRE_CASES and all(name.startswith(f"spyre_main_{TORCH_SPYRE_MAIN}_") for name in SPYRE_CASES)
    if torch_spyre.commit != "checkout":
        assert torch_spyre.commit == TORCH_SPYRE_MAIN, "a new torch-spyre main: remake and rename the cases"


@pytest.mark.parametrize("name", SPYRE_CASES)
def test_spyre_golden_case(name, spyre_main_case, provenance_regression):
    case = golden.CASES[name]
    assert case.compile_args()[1:] == ["--backend", "spyre", "--dtype", "float16"]  # what spyre_main_case runs
    compiled = spyre_main_case(case.model)
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr[-3000:]
    provenance_regression.check_provenance(golden.fresh_case(case, compiled.out), GOLDEN / name)


def test_golden_check_passes_booted(torch_spyre_env):
    done = subprocess.run(
        [sys.executable, str(REPO / "tests" / "spyre_main" / "run_booted.py"), "golden", "check", *SPYRE_CASES],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert [line for line in done.stdout.splitlines() if line.startswith("golden ")] == [
        f"golden {name}: ok" for name in SPYRE_CASES
    ]


def test_golden_check_skips_them_without_torch_spyre():
    done = subprocess.run(
        [sys.executable, "-m", "spyre_provenance", "golden", "check", *SPYRE_CASES],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert all(f"golden/{name}: skipped: a torch-spyre case, and torch_spyre" in done.stdout for name in SPYRE_CASES)
