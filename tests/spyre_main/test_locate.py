"""Where the suite finds torch-spyre, and what its absence means: a skip saying why, a
failure in CI, a skip on a torch it does not pin."""

from __future__ import annotations

import pytest
from _pytest.outcomes import Failed, Skipped

from spyre_main import locate


def test_a_named_folder_without_torch_spyre_is_no_source(tmp_path, monkeypatch):
    monkeypatch.setenv(locate.ENV, str(tmp_path))
    found, why = locate.find()
    assert found is None and "holds no torch_spyre/" in why


def test_absence_skips_with_the_reason_and_fails_in_ci(tmp_path, monkeypatch):
    monkeypatch.setenv(locate.ENV, str(tmp_path / "nowhere"))
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(Skipped, match="neither a torch-spyre checkout"):
        locate.require()
    monkeypatch.setenv("CI", "true")
    with pytest.raises(Failed, match="must run in CI"):
        locate.require()


def test_a_checkout_is_used_in_place(tmp_path, monkeypatch):
    (tmp_path / "torch_spyre").mkdir()
    (tmp_path / "torch_spyre" / "__init__.py").write_text("")
    monkeypatch.setenv(locate.ENV, str(tmp_path))
    found, _ = locate.find()
    assert found is not None and found.source == tmp_path.resolve()


def test_the_snapshot_is_extracted_once_keyed_by_its_content(torch_spyre):
    if torch_spyre.commit == "checkout":
        pytest.skip("a checkout is used in place")
    assert (torch_spyre.source / "torch_spyre" / "_inductor" / "scheduler.py").is_file()
    assert (torch_spyre.source.parent.parent / "DONE").is_file()
    again, _ = locate.find()
    assert again == torch_spyre


def test_torch_spyre_pins_the_torch_it_runs_on(torch_spyre):
    """The pin the skip on other torches reads; this venv's torch satisfies it."""
    assert locate.torch_pin(torch_spyre.source) is not None
    assert locate.torch_mismatch(torch_spyre.source) is None
