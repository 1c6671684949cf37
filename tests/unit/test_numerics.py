"""``compile.numerics``: within the tolerance the compiled output matches; past it, and only
then, a float64 run of eager judges (Dynamo's accuracy rule)."""

from __future__ import annotations

import torch

from spyre_provenance.compile import numerics


def _never() -> list:
    raise AssertionError("the float64 run is asked for only past the tolerance")


def test_within_the_tolerance_matches_without_a_float64_run():
    eager = [torch.ones(4)]
    compared = numerics.check([torch.ones(4) + 5e-5], eager, _never)
    assert compared.matches and compared.precision is None
    assert 0 < compared.max_abs_error <= numerics.TOLERANCE["float32"] and compared.output_scale == 1.0


def test_past_the_tolerance_float64_tells_rounding_from_a_bug():
    exact = torch.linspace(0, 1, 2000, dtype=torch.float64)
    eager = [(exact + 1e-3).float()]  # eager itself is 1e-3 off float64
    rounding = numerics.check([(exact - 1e-3).float()], eager, lambda: [exact])
    assert rounding.matches and rounding.precision is not None and rounding.precision.within
    bug = numerics.check([(exact + 0.5).float()], eager, lambda: [exact])
    assert not bug.matches and bug.precision is not None and not bug.precision.within


def test_without_a_float64_run_the_tolerance_stands():
    compared = numerics.check([torch.zeros(3)], [torch.ones(3)], lambda: None)
    assert not compared.matches and compared.precision is None and compared.max_abs_error == 1.0


def test_outputs_of_another_count_never_match():
    compared = numerics.check([torch.ones(2)], [torch.ones(2), torch.ones(2)], _never)
    assert not compared.matches
