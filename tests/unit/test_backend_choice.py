"""What ``auto`` stands for (``backends.resolve_backend``, one rule on every entry point):
torch-spyre when the compiled code reaches it and the adapter installs, else the backend
that compiles the code as it would be compiled anyway: the reference backend for this
tool's own compile, stock Inductor in a program tracked from outside (``run``,
``SPYRE_PROVENANCE_OUT``), never a backend that changes what the program compiles to.
That a program which loaded torch-spyre is tracked on it is shown on torch-spyre main
(``tests/spyre_main/test_spyre_run.py``), and ``compile``'s choice in
``tests/compile/test_torch_spyre_adapter.py``."""

from __future__ import annotations

import importlib.util

import pytest

from spyre_provenance.backends import BACKEND_NAMES, resolve_backend


def test_auto_is_stock_inductor_when_the_program_did_not_load_torch_spyre():
    assert resolve_backend("auto", attached=True, loaded=False) == (
        "inductor",
        "auto: the program did not load torch_spyre",
    )


@pytest.mark.skipif(importlib.util.find_spec("torch_spyre") is not None, reason="torch-spyre is installed here")
def test_auto_stays_on_stock_inductor_where_the_adapter_cannot_install():
    # the adapter cannot install (here torch-spyre does not even import): the program compiles
    # with Inductor's own kernels, and auto tracks those, never the reference backend's
    name, why = resolve_backend("auto", attached=True, loaded=True)
    assert name == "inductor" and why.startswith("auto: ")


@pytest.mark.parametrize("name", [n for n in BACKEND_NAMES if n != "auto"])
def test_a_named_backend_is_itself(name):
    assert resolve_backend(name) == resolve_backend(name, attached=True, loaded=False) == (name, "asked for")


def test_an_unknown_name_is_refused():
    with pytest.raises(ValueError, match="unknown backend 'cuda'"):
        resolve_backend("cuda")


@pytest.mark.skipif(importlib.util.find_spec("torch_spyre") is not None, reason="torch-spyre is installed here")
def test_auto_falls_back_to_the_reference_backend_for_this_tools_own_compile():
    # the same probe as above says why; only what compiles the code otherwise differs
    name, why = resolve_backend("auto")
    assert (name, why) == ("reference", resolve_backend("auto", attached=True)[1])
