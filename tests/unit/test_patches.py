"""``Patches``: what the hook, both backends and the bench change in torch comes back exactly."""

from __future__ import annotations

import types

import pytest

from spyre_provenance.base.patches import Patches


class Base:
    def codegen(self) -> str:
        return "base"


class Child(Base):
    pass


def test_an_inherited_method_stays_inherited() -> None:
    with Patches() as patches:
        patches.setattr(Child, "codegen", lambda self: "patched")
        assert Child().codegen() == "patched"
    assert "codegen" not in Child.__dict__
    assert Child().codegen() == "base"


def test_two_wraps_of_one_place_unwind_newest_first() -> None:
    module = types.SimpleNamespace(f=lambda: "f")
    patches = Patches()
    patches.wrap(module, "f", lambda old: lambda: f"a({old()})")
    patches.wrap(module, "f", lambda old: lambda: f"b({old()})")
    assert module.f() == "b(a(f))"
    original = module.f
    patches.undo()
    assert module.f() == "f" and module.f is not original
    assert len(patches) == 0


def test_a_function_held_by_name_is_wrapped_in_every_module_once() -> None:
    def tracing() -> str:
        return "t"

    one, two = types.SimpleNamespace(tracing=tracing), types.SimpleNamespace(tracing=tracing)
    other = types.SimpleNamespace()
    with Patches() as patches:
        assert patches.wrap_everywhere([one, two, one, other], "tracing", lambda old: lambda: old() + "!") == 2
        assert (one.tracing(), two.tracing()) == ("t!", "t!")
        assert not hasattr(other, "tracing")
    assert one.tracing is tracing and two.tracing is tracing


def test_registry_entries_come_back_or_go() -> None:
    registry = {"cpu": "stock"}
    with Patches() as patches:
        patches.setitem(registry, "cpu", "ours")
        patches.setitem(registry, "spyre", "ours")
        assert patches.keep_item(registry, "meta") is None
        registry["meta"] = "set by a torch function"  # what register_backend_for_device does
    assert registry == {"cpu": "stock"}


def test_every_step_is_undone_even_when_one_fails() -> None:
    class Frozen:
        def __setattr__(self, name: str, value: object) -> None:
            if getattr(self, "locked", False):
                raise RuntimeError("locked")
            object.__setattr__(self, name, value)

    frozen, plain = Frozen(), types.SimpleNamespace(x=1)
    frozen.x = 1
    patches = Patches()
    patches.setattr(plain, "x", 2)
    patches.setattr(frozen, "x", 2)
    patches.setattr(plain, "y", 3)
    object.__setattr__(frozen, "locked", True)
    with pytest.raises(RuntimeError, match="locked"):
        patches.undo()
    assert plain.x == 1 and not hasattr(plain, "y")  # the steps before and after the failing one ran


def test_setattr_returns_what_was_there() -> None:
    target = types.SimpleNamespace(level=0)
    with Patches() as patches:
        assert patches.setattr(target, "level", 1) == 0
        assert patches.setattr(target, "new", 1) is None
    assert target.level == 0 and not hasattr(target, "new")
