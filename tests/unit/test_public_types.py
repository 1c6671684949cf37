"""The public surface states its types: every type a caller meets in the public functions'
signatures, and in the fields of a compile's outcome, is importable from ``spyre_provenance``
or, a record type, from ``spyre_provenance.types`` (the one module of them), and none is
``Any``. No internal seam (``Layout``, ``Inductor``) is among them.

The annotations are resolved as a type checker reads them: against the names of the
``if TYPE_CHECKING:`` blocks of ``spyre_provenance/__init__.py`` and ``types.py`` (the
public names and the ``StrPath`` alias), so an internal type named in a signature fails to
resolve. The
runtime answers' nested records (``LookupDocument.answers``, ``Comparison.lines``, ...) are
wire documents, each described by its JSON schema (``schemas/``); a compile's outcome is
read field by field (``CompileOutcome.report.graphs``), so its fields are walked too.
"""

from __future__ import annotations

import ast
import builtins
import collections.abc
import inspect
import os
import pathlib
import types
import typing

import pytest

import spyre_provenance
import spyre_provenance.types
from helpers.where import PACKAGE

PUBLIC = {
    name: getattr(module, name)
    for module in (spyre_provenance, spyre_provenance.types)
    for name in module.__all__
    if name != "__version__"
}
FUNCTIONS = {name: value for name, value in PUBLIC.items() if inspect.isfunction(value)}
#: the outcomes a caller reads field by field
OUTCOMES = ("CompileOutcome", "RanksOutcome")
#: modules whose types a signature may name besides the public ones
STANDARD = {"builtins", "pathlib", "os", "collections.abc", "typing", "types"}


def _static_names() -> dict[str, object]:
    """What a type checker sees in the public modules: their ``if TYPE_CHECKING:`` blocks, run."""
    names: dict[str, object] = {**vars(spyre_provenance), "__builtins__": builtins}
    for file in ("__init__.py", "types.py"):
        tree = ast.parse((PACKAGE / file).read_text(encoding="utf-8"))
        (block,) = [n for n in tree.body if isinstance(n, ast.If) and "TYPE_CHECKING" in ast.unparse(n.test)]
        exec(compile(ast.Module(body=block.body, type_ignores=[]), f"{file} TYPE_CHECKING", "exec"), names)
    return names


NAMES = _static_names()


def _hints(obj: object) -> dict[str, object]:
    module = vars(inspect.getmodule(obj)) if inspect.getmodule(obj) else {}
    return typing.get_type_hints(obj, globalns={**module, **NAMES})


def _types(hint: object) -> typing.Iterator[object]:
    """Every type named in ``hint``: ``list[X] | None`` names list, X and None."""
    origin = typing.get_origin(hint)
    if origin is typing.Literal:
        return
    if origin is None:
        yield hint
        return
    yield origin
    for arg in typing.get_args(hint):
        for one in arg if isinstance(arg, list) else [arg]:  # Callable[[X, Y], Z]: its [X, Y]
            yield from ([] if one is Ellipsis else _types(one))


def _refused(where: str, hint: object) -> list[str]:
    wrong = []
    for t in _types(hint):
        if t is typing.Any:
            wrong.append(f"{where}: Any")
        elif t is None or t is type(None) or t in (typing.Union, types.UnionType):
            continue
        elif not isinstance(t, type):
            wrong.append(f"{where}: {t!r} is no type")
        elif t.__module__ in STANDARD or t.__module__ == "builtins":
            continue
        elif not any(t is value for value in PUBLIC.values()):
            wrong.append(f"{where}: {t.__module__}.{t.__qualname__} is not public (spyre_provenance[.types])")
    return wrong


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_a_public_functions_signature_names_only_public_types(name):
    function = FUNCTIONS[name]
    hints = _hints(function)
    assert "return" in hints, f"{name} states no return type"
    assert [w for key, hint in hints.items() for w in _refused(f"{name}({key})", hint)] == []


@pytest.mark.parametrize("name", OUTCOMES)
def test_a_compiles_outcome_holds_only_public_types(name):
    hints = _hints(PUBLIC[name])
    assert [w for key, hint in hints.items() for w in _refused(f"{name}.{key}", hint)] == []


def test_the_walk_refuses_any_and_an_internal_type():
    from spyre_provenance.runtime.index import KernelIndex

    assert _refused("f(x)", typing.Any) == ["f(x): Any"]
    assert _refused("f(x)", list[KernelIndex] | None) == [
        "f(x): spyre_provenance.runtime.index.KernelIndex is not public (spyre_provenance[.types])"
    ]
    assert _refused("f(x)", dict[str, pathlib.Path] | os.PathLike[str] | collections.abc.Iterable[int]) == []


def test_every_parameter_is_typed():
    missing = [
        f"{name}({p})"
        for name, function in FUNCTIONS.items()
        for p in inspect.signature(function).parameters
        if p not in _hints(function)
    ]
    assert missing == []


def test_no_internal_seam_is_public():
    from spyre_provenance.capture.inductor import Inductor
    from spyre_provenance.model.layout import Layout

    assert not any(value is Layout or value is Inductor for value in PUBLIC.values())
    assert _refused("enable(layout)", Layout | None) == [
        "enable(layout): spyre_provenance.model.layout.Layout is not public (spyre_provenance[.types])"
    ]
