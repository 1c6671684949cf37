"""``errors.Verdict``: the one place a conclusion becomes an exit status (0/1/2), shared by
``compile``, ``audit``, ``golden`` and the pytest fixture (through ``compile_job``)."""

from __future__ import annotations

import pytest

from spyre_provenance.base.errors import (
    EXIT_FOUND_WANTING,
    EXIT_OK,
    EXIT_UNUSABLE,
    FOUND_WANTING,
    OK,
    UNUSABLE,
    Verdict,
)


def test_unusable_outranks_wanting_which_outranks_ok() -> None:
    assert Verdict.judge() == Verdict(OK)
    assert Verdict.judge(wanting=["no graph"]) == Verdict(FOUND_WANTING, ("no graph",))
    both = Verdict.judge(wanting=["no graph"], unusable=["the run failed"])
    assert both.state == UNUSABLE and both.reasons == ("the run failed", "no graph")


@pytest.mark.parametrize(
    ("state", "code"), [(OK, EXIT_OK), (FOUND_WANTING, EXIT_FOUND_WANTING), (UNUSABLE, EXIT_UNUSABLE)]
)
def test_each_state_has_its_exit_status_and_reads_back_from_it(state: str, code: int) -> None:
    assert Verdict(state).exit_code == code
    assert Verdict.of_exit(code, "last line").state == state
    assert Verdict(state).ok == (state == OK)


@pytest.mark.parametrize("code", [3, -9, 141])
def test_a_crash_or_a_signal_is_no_verdict_on_the_input_but_unusable(code: int) -> None:
    read = Verdict.of_exit(code)
    assert read.state == UNUSABLE and read.reasons == (f"exit {code}",)
