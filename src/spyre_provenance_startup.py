"""Tracking switched on by the environment, at every interpreter's start-up.

The wheel (and the editable install) puts ``spyre_provenance_startup.pth`` into
site-packages; Python's ``site`` runs its one line in every process of that environment.
The line reads one variable (``SPYRE_PROVENANCE_OUT``) and imports this module only when
it is set, so a process of an environment without it pays nothing more.

A module of its own, beside the package and not in it: importing it imports nothing of
``spyre_provenance``. pytest rewrites the asserts of a ``pytest11`` plugin's package (ours:
``spyre_provenance``, for ``plugin.pytest_fixture``) and warns, ``Module already imported so
cannot be rewritten``, about one imported before it looked; a suite run with
``filterwarnings = error`` would stop there. This module holds no assert to rewrite, and says so
in the word pytest looks for in a docstring, PYTEST_DONT_REWRITE (pytest marks the top-level
modules of an installed wheel too, this one among them).

When the variable is set, ``start`` installs an import watcher and returns: no torch is
imported here, so a process that never imports torch pays a millisecond or two. The watcher
tells ``spyre_provenance.capture.attach`` when torch has been imported (the process's log
gets its handler, no file yet) and when Inductor's ``compile_fx`` has (its entry is wrapped,
and the session starts at the first compile); the package is imported then, after pytest has
marked it. Nothing here relies on torch's device-backend autoload, which vLLM's Spyre plugin
turns off (``TORCH_DEVICE_BACKEND_AUTOLOAD=0``).

vLLM's general plugin (``spyre_provenance.plugin.startup.vllm_plugin``) calls ``start`` too,
in a process whose torch may be imported already.
"""

from __future__ import annotations

import os
import sys

#: ``spyre_provenance.base.environment.OUT``, spelled here again: importing it would import the
#: package (tests/unit/test_startup_hook.py holds the two equal)
OUT = "SPYRE_PROVENANCE_OUT"
TYPE_CHECKING = False  # not typing's: this module is imported at every start-up with the variable set
if TYPE_CHECKING:
    from collections.abc import Sequence
    from importlib.machinery import ModuleSpec
    from types import ModuleType

#: The modules whose import the watcher reports, and what it calls then (``capture.attach``).
WATCHED = {"torch": "torch_imported", "torch._inductor.compile_fx": "compile_fx_imported"}


def start() -> None:
    """Switch tracking on for this process when ``SPYRE_PROVENANCE_OUT`` says where (the
    ``.pth`` line calls it only then). Never raises: a start-up hook that fails would stop
    every program of the environment."""
    try:
        _start()
    except Exception as exc:  # noqa: BLE001 - the user's program runs whatever happens here
        _say(f"tracking not started: {type(exc).__name__}: {exc}")


def _start() -> None:
    out = os.environ.get(OUT)
    if not out or any(isinstance(finder, _Watcher) for finder in sys.meta_path):
        return
    # absolute, for this process and the ones it starts, whatever folder they change to
    os.environ[OUT] = os.path.abspath(out)
    imported = [name for name in WATCHED if name in sys.modules]
    if imported:  # a late start (the vLLM plugin): report what has happened already
        for name in imported:
            _report(name, sys.modules[name])
    if len(imported) < len(WATCHED):
        sys.meta_path.insert(0, _Watcher())


def _report(name: str, module: object) -> None:
    try:
        from spyre_provenance.capture import attach

        getattr(attach, WATCHED[name])(module)
    except Exception as exc:  # noqa: BLE001 - never break the import that triggered it
        _say(f"tracking not started: {type(exc).__name__}: {exc}")


def _say(message: str) -> None:
    """One line on stderr, if there is one to write to (a daemon's may be None, or closed):
    saying why tracking is off must not break the program either."""
    try:
        if sys.stderr is not None:
            sys.stderr.write(f"spyre-provenance: {message}\n")
    except Exception:  # noqa: BLE001 - nowhere left to say it
        pass


class _Watcher:
    """A finder on ``sys.meta_path`` that finds nothing itself: for a watched module it asks
    the finders after it and hands back their spec with a loader that reports the module
    once it has run. Any other name costs one dict lookup."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname not in WATCHED or fullname in sys.modules:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _ReportingLoader(spec.loader, fullname)  # type: ignore[assignment]
                return spec
        return None


class _ReportingLoader:
    """The real loader, and a report to ``capture.attach`` after the module has run."""

    def __init__(self, loader: object, name: str) -> None:
        self._loader = loader
        self._name = name

    def create_module(self, spec: object) -> object:
        return self._loader.create_module(spec)  # type: ignore[attr-defined]

    def exec_module(self, module: object) -> None:
        self._loader.exec_module(module)  # type: ignore[attr-defined]
        _report(self._name, module)
        if all(name in sys.modules for name in WATCHED):  # nothing left to watch
            sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _Watcher)]

    def __getattr__(self, name: str) -> object:  # get_source, get_code, is_package, ...
        return getattr(self._loader, name)
