"""A kernel named by the modules its nodes ran in (``nn_module_stack``), where no frame of its
stack traces is the user's: the one rule ``lookup``, the time summary, ``compare`` and the
viewer name such kernels by.

A model built of torch's own modules (an ``nn.Sequential`` of ``nn.Linear`` wrapped in DDP,
``nn.TransformerEncoderLayer``) has no user frame inside the compiled region: every frame
of its stack traces is torch's, and the innermost one (``model.frames.user_frame``'s
fallback) is a line of ``torch/nn``, the same for every layer. Its post-grad nodes still
carry Dynamo's ``nn_module_stack``, which the hook records per call site (the diagnostics'
``module_stacks``): ``encoder.layers.3.self_attn: MultiheadAttention`` names the code
where no line can. Such a name is module evidence, never a source line: it has no file
and no line number, and every reader says which it is.

Pure: no torch. The class is kept as recorded (its qualified name); the name shows its
last part.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any, NamedTuple

from spyre_provenance.model import names
from spyre_provenance.model.frames import frames, is_user_frame

#: what a reader calls a place named by its module, beside "source line"
MODULE_EVIDENCE = "module"
#: the file a place named by a module gives where a reader's row has a file and a line (the
#: time summary's rows): no file, line 0, the module's name for code
MODULE_FILE = "(module)"
#: how a full text form marks a place named by its module (the time summary's rows, compare's)
MODULE_MARK = "[module path: no frame is the user's]"

# Dynamo names a module by the source it read it from: the root is the compiled callable's
# argument (``L['self']``, ``L['fn']``, ``L['mod']``; a global ``G['model']``), a child an
# attribute (``.layers``) or an index (``[0]``, ``['key']``; torch 2.13 writes ``.0``)
_ROOT = re.compile(r"""^[LG]\[(?:'[^']*'|"[^"]*")\]""")
_INDEX = re.compile(r"""\[(?:'([^']*)'|"([^"]*)"|(\d+))\]""")


class ModuleCall(NamedTuple):
    """One module of a node's ``nn_module_stack``: its path from the compiled module (``""``
    for that module itself) and its class, as recorded (``torch.nn.modules.linear.Linear``)."""

    path: str
    cls: str

    @property
    def name(self) -> str:
        """``0: Linear``, ``encoder.layers.3.self_attn: MultiheadAttention``; the compiled
        module itself by its class alone."""
        short = self.cls.rsplit(".", 1)[-1]
        return f"{self.path}: {short}" if self.path else short


def module_text(name: str) -> str:
    """A module's name as a full text form prints a place: marked as module evidence."""
    return f"{MODULE_EVIDENCE} {name}  {MODULE_MARK}"


def path_of(name: str) -> str:
    """The module path of a module's name (``ModuleCall.name``'s inverse): ``0: Linear`` ->
    ``0``; the compiled module itself, its class alone, -> ``""``."""
    path, colon, _ = name.rpartition(": ")
    return path if colon else ""


def module_path(fqn: str) -> str:
    """A module's path from the compiled module, read from Dynamo's name for it:
    ``L['fn'].layers.0.self_attn`` -> ``layers.0.self_attn``, ``L['self']`` -> ``""``."""
    path = _ROOT.sub("", fqn.strip(), count=1)
    path = _INDEX.sub(lambda m: "." + next(g for g in m.groups() if g is not None), path)
    return path.lstrip(".")


def class_name(cls: Any) -> str:
    """A module class as recorded: its qualified name (a class object, or the text Dynamo
    keeps where it has no class: ``"<class 'torch.nn.modules.linear.Linear'>"``). A class of
    a model file the compile loaded (``PATH.py:FACTORY``) is named by the file's stem, not by
    the module name it was loaded under, which spells the file's whole path."""
    if isinstance(cls, type):
        return f"{_module_name(cls.__module__)}.{cls.__qualname__}"
    text = str(cls)
    quoted = re.fullmatch(r"<class '([^']+)'>", text)
    if not quoted:
        return text
    module, dot, rest = quoted[1].partition(".")
    return f"{_module_name(module)}{dot}{rest}" if module.startswith(names.FILE_MODEL_MODULE) else quoted[1]


def _module_name(module: str) -> str:
    if not module.startswith(names.FILE_MODEL_MODULE):
        return module
    file = getattr(sys.modules.get(module), "__file__", None)
    return Path(file).stem if file else "model"


def recorded_stack(meta_stack: Any) -> list[list[str]]:
    """A node's ``nn_module_stack`` (Dynamo's ``{key: (fqn, class)}``, outermost first) as the
    diagnostics record it: ``[[path, class], ...]``; empty for anything else."""
    if not isinstance(meta_stack, dict):
        return []
    found = []
    for value in meta_stack.values():
        if isinstance(value, (tuple, list)) and len(value) == 2 and isinstance(value[0], str):
            found.append([module_path(value[0]), class_name(value[1])])
    return found


def read_module_stacks(diagnostics: Any) -> dict[str, list[list[ModuleCall]]]:
    """A diagnostics document's ``module_stacks`` (call site -> its nodes' distinct stacks),
    as written; a document without them (an older version, upstream's) gives none."""
    table = diagnostics.get("module_stacks") if isinstance(diagnostics, dict) else None
    if not isinstance(table, dict):
        return {}
    found: dict[str, list[list[ModuleCall]]] = {}
    for key, stacks in table.items():
        if not isinstance(stacks, list):
            continue
        found[key] = [
            [
                ModuleCall(m[0], m[1])
                for m in stack
                if isinstance(m, list) and len(m) == 2 and all(isinstance(x, str) for x in m)
            ]
            for stack in stacks
            if isinstance(stack, list)
        ]
    return found


class ModuleNames(NamedTuple):
    """A call site named by its modules: ``own``, the innermost module of each of its nodes'
    stacks (what ran the kernel's ops), in recorded order; ``enclosing``, the modules around
    them, innermost first (the calls that led there)."""

    own: list[ModuleCall]
    enclosing: list[ModuleCall]


def has_user_frame(stack_traces: Iterable[Any]) -> bool:
    """Does any frame of a call site's stack traces belong to the user (``model.frames``)?"""
    return any(is_user_frame(f.file) for t in stack_traces if isinstance(t, str) for f in frames(t))


def module_names(stack_traces: Iterable[Any], stacks: list[list[ModuleCall]] | None) -> ModuleNames | None:
    """The one rule: a call site is named by its modules exactly when no frame of its stack
    traces is the user's and its nodes' module stacks were recorded; else None (its lines
    name it, or nothing recorded does)."""
    if not stacks or has_user_frame(stack_traces):
        return None
    own: dict[ModuleCall, None] = {}
    enclosing: dict[ModuleCall, None] = {}
    for stack in stacks:
        if stack:
            own[stack[-1]] = None
    for stack in stacks:
        for module in reversed(stack[:-1]):
            if module not in own:
                enclosing[module] = None
    return ModuleNames(list(own), list(enclosing)) if own else None
