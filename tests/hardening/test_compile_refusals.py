"""``compile`` refuses what it cannot do in one line and leaves ``--out`` as it found it.

Compiles: two models of tests/zoo/refused.py in the session's compile worker (one is refused
before anything compiles, the other fails after its first graph was written).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers.where import ZOO  # tests/ is on sys.path

REFUSED = ZOO / "refused.py"

pytestmark = pytest.mark.compile


def _leftovers(out: Path) -> list[str]:
    return sorted(str(p.relative_to(out)) for p in out.rglob("*"))


def test_train_with_nothing_to_differentiate_exits_2_and_writes_nothing(compile_case):
    done = compile_case(f"{REFUSED}:nothing_to_differentiate", "--backend", "reference", "--train")
    assert done.returncode == 2, done.stdout + done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert "--train needs something to differentiate" in line and "Traceback" not in done.stderr
    assert done.stdout == "" and _leftovers(done.out) == []


def test_the_same_model_compiles_in_inference(compile_case):
    done = compile_case(f"{REFUSED}:nothing_to_differentiate", "--backend", "reference", "--no-tlparse")
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert done.graph_dirs()


def test_a_compile_that_fails_midway_leaves_nothing_behind(compile_case):
    done = compile_case(f"{REFUSED}:fails_compiled", "--backend", "reference", "--no-tlparse")
    assert done.returncode == 2, done.stdout + done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    (line,) = [text for text in done.stderr.splitlines() if text.startswith("spyre-provenance")]
    assert "torch.compile failed: RuntimeError: this model refuses to be compiled" in line
    assert _leftovers(done.out) == []  # no graph folder, no half-named log, no empty trace folder


def test_a_real_mismatch_exits_1_though_the_model_draws_random_numbers(compile_case):
    """Dropout makes compiled and eager draw different numbers, so they are compared on a
    second compile that draws them as eager does: a difference the kernels make (here, a
    branch taken only when compiled) is still a MISMATCH, exit 1, artifacts kept."""
    done = compile_case(f"{REFUSED}:compiled_differs", "--backend", "reference", "--train", "--no-tlparse")
    assert done.returncode == 1, done.stdout + done.stderr[-3000:]
    assert "output vs eager: MISMATCH" in done.stdout
    assert "compared on a second compile with fallback_random" in done.stdout
    assert "aten.native_dropout.default at " in done.stdout and "refused.py:" in done.stdout
    assert done.graph_dirs()
