"""``enable()`` refuses, in one line and before patching anything, a torch that lacks an
Inductor seam the hook needs (issue 14: a torch outside the tested range). The missing seam
is faked by deleting torch's own module attribute for the test."""

from __future__ import annotations

import sys
import types

import pytest
import torch._inductor.config as inductor_config
import torch._inductor.debug as inductor_debug

import spyre_provenance
from spyre_provenance.base.errors import UnsupportedTorch
from spyre_provenance.capture import hook, tracking


def test_the_installed_torch_has_every_seam():
    assert tracking.missing_seams() == []


@pytest.mark.parametrize("name", [hook.TRACING_FUNCTION, hook.DUMP_FUNCTION])
def test_enable_refuses_a_torch_without_a_patched_function(monkeypatch, name):
    monkeypatch.delattr(inductor_debug, name)
    with pytest.raises(RuntimeError) as info:
        spyre_provenance.enable("inductor")
    assert isinstance(info.value, UnsupportedTorch)
    line = str(info.value)
    assert "\n" not in line
    assert line.startswith(f"torch {torch_version()}: lacks torch._inductor.debug.{name}, ")
    assert f"(tested with torch {tracking.TESTED_TORCH})" in line
    assert tracking._session is None  # nothing enabled, so a later enable() works


def test_refusal_patches_nothing(monkeypatch):
    before = (inductor_debug.set_kernel_post_grad_provenance_tracing, inductor_config.trace.provenance_tracking_level)
    monkeypatch.delattr(inductor_debug, hook.DUMP_FUNCTION)
    with pytest.raises(UnsupportedTorch), spyre_provenance.tracking("reference"):
        pytest.fail("tracking() entered its block on a torch it refused")
    after = (inductor_debug.set_kernel_post_grad_provenance_tracing, inductor_config.trace.provenance_tracking_level)
    assert after == before


def test_a_missing_config_option_is_named(monkeypatch):
    # torch's config module refuses unknown assignments: a stand-in whose trace lacks the level
    monkeypatch.setitem(sys.modules, "torch._inductor.config", types.SimpleNamespace(trace=types.SimpleNamespace()))
    assert tracking.missing_seams() == ["torch._inductor.config.trace.provenance_tracking_level"]


def test_enable_works_again_once_the_seam_is_back(monkeypatch):
    monkeypatch.delattr(inductor_debug, hook.TRACING_FUNCTION)
    with pytest.raises(UnsupportedTorch):
        spyre_provenance.enable()
    monkeypatch.undo()
    with spyre_provenance.tracking() as session:
        assert session is tracking._session


def torch_version() -> str:
    import importlib.metadata

    return importlib.metadata.version("torch")
