"""The hook's one way to warn (``base.errors.warn``): a ``ProvenanceWarning`` where warnings
are shown, and never an exception, since it is said in the middle of a compile or of a call
of the user's model: under filters that make warnings errors (a strict suite) the line goes
to stderr instead, and with stderr gone too, nowhere."""

from __future__ import annotations

import sys
import warnings

import pytest

from spyre_provenance.base import errors


def _caller() -> None:
    errors.warn("spyre-provenance: something was lost", stacklevel=2)


def test_a_warning_where_warnings_are_shown_pointing_at_the_callers_caller():
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        _caller()
    (warning,) = seen
    assert (
        warning.category is errors.ProvenanceWarning and str(warning.message) == "spyre-provenance: something was lost"
    )
    assert warning.filename == __file__  # stacklevel as the caller's own warnings.warn takes it


def test_filters_that_make_warnings_errors_get_a_line_on_stderr(capsys):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _caller()
    assert capsys.readouterr().err == "spyre-provenance: something was lost\n"


def test_with_stderr_gone_too_nothing_is_raised(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(sys, "stderr", None)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _caller()
