"""What ``auto`` stands for in a program tracked from outside (``run``, ``SPYRE_PROVENANCE_OUT``):
never a backend that changes what the program compiles to (``backends.resolve_attached``).
That a program which loaded torch-spyre is tracked on it is shown on torch-spyre main
(``tests/spyre_main/test_spyre_run.py``)."""

from __future__ import annotations

import importlib.util

import pytest

from spyre_provenance.backends import BACKEND_NAMES, resolve_attached


def test_auto_is_stock_inductor_when_the_program_did_not_load_torch_spyre():
    assert resolve_attached("auto", loaded=False) == ("inductor", "auto: the program did not load torch_spyre")


@pytest.mark.skipif(importlib.util.find_spec("torch_spyre") is not None, reason="torch-spyre is installed here")
def test_auto_stays_on_stock_inductor_where_the_adapter_cannot_install():
    # the adapter cannot install (here torch-spyre does not even import): the program compiles
    # with Inductor's own kernels, and auto tracks those, never the reference backend's
    name, why = resolve_attached("auto", loaded=True)
    assert name == "inductor" and why.startswith("auto: ")


@pytest.mark.parametrize("name", [n for n in BACKEND_NAMES if n != "auto"])
def test_a_named_backend_is_itself(name):
    assert resolve_attached(name, loaded=False) == (name, "asked for")


def test_an_unknown_name_is_refused():
    with pytest.raises(ValueError, match="unknown backend 'cuda'"):
        resolve_attached("cuda", loaded=True)
