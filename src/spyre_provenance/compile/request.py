"""What a compile is asked to do (``CompileRequest``), and the one rule that turns such a
request into the ``compile`` command's arguments (``command_line``).

``compile --ranks N`` starts each rank as the same ``compile`` command (``compile.ranks``):
the rank's arguments are ``command_line`` of the parent's request, so every field of the
request reaches every rank. ``command_line`` spells each field of ``CompileRequest`` in one
table (``_SPELLING``); a field without a spelling fails the first call, and
``tests/unit/test_compile_request.py`` parses the arguments back into the same request, field
by field. The table is the command line's (``cli/compile_command.py``, with the options it
shares with ``audit`` in ``cli/compile_options.py``) read backwards: the two change together.

Pure: imports no torch, nothing of ``compile`` (``job`` and ``ranks`` both import this).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from spyre_provenance.backends import DEFAULT_BACKEND
from spyre_provenance.model import folders

#: The dtypes a model can be cast to (``dtype``), as ``torch`` names them: the command
#: line's ``--dtype`` choices.
DTYPES = ("float32", "float16", "bfloat16")


class CompileRequest(msgspec.Struct, frozen=True, kw_only=True):
    """What to compile, on what, and what to write. The defaults are the command line's."""

    #: a built-in example (``mlp``, ...) or ``PATH.py:FACTORY``; with ``instance``, its name
    model: str
    #: (module, example inputs) a caller already holds (the pytest fixture): compiled as is
    instance: tuple[Any, tuple[Any, ...]] | None = None
    backend: str = DEFAULT_BACKEND
    out: Path | None = None  # None: write nothing (no folders, no log, no pages)
    dtype: str | None = None  # one of DTYPES; None: float32 for a built-in model, a file model as built
    train: bool = False  # forward and backward
    tlparse: bool = True  # render the provenance pages (when tlparse is installed)
    kernel_cache: bool = False  # as torch-spyre's kernel cache (reference backend only)
    redact_paths: bool = False
    beyond_upstream: bool = False  # stock Inductor's mapping completed as on the Spyre backends
    audit: bool = False  # count the fields every stage carries; write provenance_audit.*
    audit_against: Path | None = None  # a previous provenance_audit.json to compare with (with audit)
    #: run the compiled model once more under torch.profiler; its trace annotated into
    #: ``out/profile/<model>.trace.json`` (each rank's ``out/rank<r>/profile/`` with ranks)
    profile: bool = False
    #: run ``ranks`` processes, one rank each, in a gloo group started through torchrun's
    #: launcher (``compile.ranks``): rank r compiles into ``out/rank<r>/``. In a process
    #: torchrun started (``RANK`` and ``WORLD_SIZE`` set), the request is that one rank's
    ranks: int | None = None
    #: also write the viewer's page of ``out`` (``view.html``), as the command line does
    viewer: bool = False

    @property
    def label(self) -> str:
        """The model's label: what its files are named after (``label_of``)."""
        return label_of(self.model)


class NotACommandLine(ValueError):
    """A request the ``compile`` command cannot be asked for: a model handed in as an
    object, or no out folder (the command always writes one)."""


def command_line(request: CompileRequest) -> list[str]:
    """The ``compile`` command's arguments that parse back into ``request`` (with the command
    line's own defaults: ``viewer`` on, unless ``--no-viewer``). Options first, the model
    last after ``--`` (a file model may start with ``-``). Raises ``NotACommandLine`` for a
    request no command line can make."""
    words: list[str] = []
    for name in request.__struct_fields__:
        words += _SPELLING[name](getattr(request, name))  # KeyError: a field with no spelling yet
    return [*words, "--", request.model]


def _option(flag: str) -> Callable[[Any], list[str]]:
    return lambda value: [] if value is None else [flag, str(value)]


def _flag(flag: str) -> Callable[[Any], list[str]]:
    return lambda value: [flag] if value else []


def _off(flag: str) -> Callable[[Any], list[str]]:  # on by default on the command line
    return lambda value: [] if value else [flag]


def _no_instance(value: Any) -> list[str]:
    if value is not None:
        raise NotACommandLine("a model handed in as an object cannot be passed to another process: name it")
    return []


def _out(value: Path | None) -> list[str]:
    if value is None:
        raise NotACommandLine("the compile command always writes: give the request an out folder")
    return ["--out", str(value)]


#: Each field of ``CompileRequest``: the arguments that ask for its value.
_SPELLING: dict[str, Callable[[Any], list[str]]] = {
    "model": lambda value: [],  # the positional argument, last
    "instance": _no_instance,
    "backend": _option("--backend"),
    "out": _out,
    "dtype": _option("--dtype"),
    "train": _flag("--train"),
    "tlparse": _off("--no-tlparse"),
    "kernel_cache": _flag("--kernel-cache"),
    "redact_paths": _flag("--redact-paths"),
    "beyond_upstream": _flag("--beyond-upstream"),
    "audit": _flag("--audit"),
    "audit_against": _option("--against"),
    "profile": _flag("--profile"),
    "ranks": _option("--ranks"),
    "viewer": _off("--no-viewer"),
}


def default_out(model: str) -> Path:
    """The command line's ``--out`` when none is given: ``out/<name>``, the built-in model's
    name or the model file's stem (transliterated as labels are): one folder per file, which
    the labels of its factories share."""
    if ":" not in model:
        return Path("out") / model
    return Path("out") / (folders.transliterate(Path(model.split(":", 1)[0]).stem) or "model")


def label_of(model: str) -> str:
    """The model's label, the one name derived from it: what its files are named after.
    The built-in model's name, or for ``PATH.py:FACTORY`` the file's stem and the factory
    (two factories of one file are two models). Letters, digits, ``.`` and ``-`` only."""
    if ":" in model:
        path, _, factory = model.partition(":")
        return folders.model_label(f"{Path(path).stem}-{factory}")
    return folders.model_label(model)


def resolved_model(request: CompileRequest) -> str:
    """The model as the same string from any folder: a file model's path resolved (its
    factory kept), a built-in or handed-in model's name as given. Written beside the model's
    log (``Layout.model_marker``), so two models whose labels agree never share an out
    folder's files."""
    if ":" in request.model and request.instance is None:
        path, _, factory = request.model.partition(":")
        return f"{Path(path).resolve()}:{factory}"
    return request.model
