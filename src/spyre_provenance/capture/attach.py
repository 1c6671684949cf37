"""Tracking switched on from outside the program: one process, its own folder, the usual session.

``spyre_provenance_startup`` (the ``.pth`` start-up hook, and the vLLM plugin) calls the two functions
here when ``SPYRE_PROVENANCE_OUT=DIR`` is set:

* ``torch_imported``: the process's TORCH_TRACE log gets a handler of its own, writing
  ``DIR/<process>/trace/<program>.log`` (``model.layout.Layout.process``). It opens the file
  at torch's first structured record, so a process that never compiles makes no folder.
  torch's own handler is left as the user set it: a user's ``TORCH_TRACE`` folder still
  receives the whole log, the provenance artifacts included (tlparse on it shows the
  pages), and ``torch._logging``'s settings are not touched.
* ``compile_fx_imported``: Inductor's entry (``compile_fx.compile_fx``) and its cache hits
  (``FxGraphCache.cache_hit_post_compile``, for a process that only loads) are wrapped, and
  the first compile or hit starts the session (``tracking.attach``, ``hook.Session`` into
  the process's folder): the same session as ``enable``, not a copy of the compile door.

A process claims its folder (``_Process.claim``): it makes it itself, and a name something in
``OUT`` already has (another process's folder: pids repeat across containers sharing a
volume; a link) is passed over for the next, ``train_pid1-2``, said on stderr. So no process
appends to or replaces another's files, or writes through a link it did not make. A fork's
child gets a folder of its own (its pid), and its compiles a session of their own.
A program that enables tracking itself (``enable``, the ``compile`` command) takes over:
the attached session steps aside. At exit, a folder whose session recorded no graph is
removed again (torch may have logged a compile that reached no Inductor code: one of another
backend, ``aot_eager`` or the program's own, whose names it tells ``run``), and so are the
folders up to ``OUT`` the process made for it, when they are empty.

Every finished graph's files are written atomically when it finishes (``hook``) and the
log is flushed at every record, so a program that raises, exits, is interrupted or killed
leaves them whole; nothing here waits for the end of the process. At exit the process says
it has ended where ``run`` asked it to (``environment.ENDED``), so ``run`` writes its pages
while the interpreter tears down. Nothing here breaks the program either: a failure is one
warning, and the program goes on untracked.
"""

from __future__ import annotations

import atexit
import logging
import os
import shutil
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from spyre_provenance.base import environment

if TYPE_CHECKING:
    from spyre_provenance.model.layout import Layout

#: torch's logger of structured records (``torch._logging._internal.trace_log``)
TRACE_LOGGER = "torch.__trace"
#: how many names a process tries for its folder (``train_pid1``, ``train_pid1-2``, ...)
CLAIMS = 1000


class _Process:
    """This process's attachment: its folder, its log handler, its session."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.layout: Layout | None = None  # decided at first use, when sys.argv is the program's
        self.handler: _ProcessLog | None = None
        self.session: Any = None  # hook.Session, once the first compile started it
        self.started = False  # the session was started (or refused) for this process
        self.stepped_aside = False  # the program enabled its own tracking
        self.made: list[Path] = []  # the folders up to OUT this process made, outermost first
        #: OUT as it was when tracking started: the program may change or drop the variable
        self.out: str | None = None

    def folder(self) -> Layout:
        """This process's folder, claimed at its first use."""
        with self.lock:
            if self.layout is None:
                self.layout = self.claim()
            return self.layout

    def claim(self) -> Layout:
        """Make this process's folder in ``OUT``, a name no one has (``files.claim_folder``):
        ``train_pid1``, else ``train_pid1-2`` and on, said on stderr."""
        # imported at the first record, not with torch: torch's compile workers, and every
        # process that never compiles, import torch without ever needing them (msgspec's import
        # alone is some 30 ms a process)
        from spyre_provenance.base import files
        from spyre_provenance.model import folders
        from spyre_provenance.model.layout import Layout

        program = folders.program_label(sys.argv, getattr(sys, "orig_argv", sys.argv))
        first = folders.process_folder(program, os.getpid(), os.environ)
        names = {p.name: p for p in (first._replace(claim=n) for n in range(1, CLAIMS + 1))}
        where = self.out or os.environ.get(environment.OUT)
        if not where:
            raise OSError(f"{environment.OUT} is no longer set")
        out = Path(where)
        self.made = files.make_folders(out)
        claimed = files.claim_folder(out, list(names))
        if claimed.name != first.name:
            _tell(
                f"{out / first.name} is taken (another process's folder, or a link): this process's folder is {claimed}"
            )
        return Layout(out).process(names[claimed.name])

    def remove_made(self) -> None:
        """The folders up to ``OUT`` this process made, where it left them empty."""
        for folder in reversed(self.made):
            try:
                folder.rmdir()
            except OSError:  # another process's folder is in it, or it is gone
                return


_process = _Process()


class _ProcessLog(logging.StreamHandler):
    """The process's copy of torch's structured log, opened at the first record (in the
    process's folder, made then), written and flushed record by record."""

    def __init__(self) -> None:
        super().__init__()
        self.stream = None
        self.path: Path | None = None

    def emit(self, record: logging.LogRecord) -> None:
        try:
            if self.stream is None:
                self.path = _process.folder().trace_log
                self.path.parent.mkdir(parents=True, exist_ok=True)
                # "x": a new file in the process's own folder, never another's appended to
                self.stream = open(self.path, "x", encoding="utf-8")  # noqa: SIM115 - open for the process's life
        except Exception as exc:  # noqa: BLE001 - raised here, it would break the compile that logged
            _warn(f"cannot write the process's log: {type(exc).__name__}: {exc}")
            logging.getLogger(TRACE_LOGGER).removeHandler(self)
            return
        super().emit(record)

    def forget_stream(self) -> None:
        """After a fork: the child writes a log of its own; the parent's stream is closed
        without flushing (its buffer is the parent's to write)."""
        stream, self.stream, self.path = self.stream, None, None
        if stream is not None:
            try:
                os.close(stream.fileno())
                stream.close()
            except OSError:
                pass


def torch_imported(torch: Any = None) -> None:
    """torch has been imported: the process's log handler joins torch's trace logger
    (torch's own handler, a user's ``TORCH_TRACE``, stays as it was)."""
    from torch._logging import _internal

    with _process.lock:
        if _process.handler is not None:
            return
        _process.out = os.environ.get(environment.OUT)  # set: this is called only then
        handler = _ProcessLog()
        handler.setFormatter(_internal.TorchLogsFormatter(trace=True))
        trace_log = logging.getLogger(TRACE_LOGGER)
        trace_log.setLevel(logging.DEBUG)  # as torch sets it: structured records are DEBUG
        trace_log.addHandler(handler)
        _process.handler = handler
    atexit.register(_at_exit)
    os.register_at_fork(after_in_child=_after_fork)


def compile_fx_imported(compile_fx: Any) -> None:
    """Inductor's ``compile_fx`` module has been imported: its entry starts the session at
    the first compile (torch-spyre's wrapper, installed later, calls it as well)."""
    original = compile_fx.compile_fx
    if getattr(original, "_spyre_provenance_attached", False):
        return

    def compile_fx_entry(*args: Any, **kwargs: Any) -> Any:
        if not _process.started:
            _start_session()
            current = compile_fx.compile_fx
            if current is not compile_fx_entry:  # the session's own entry, which calls this again
                return current(*args, **kwargs)
        return original(*args, **kwargs)

    compile_fx_entry.__wrapped__ = original  # type: ignore[attr-defined]
    compile_fx_entry._spyre_provenance_attached = True  # type: ignore[attr-defined]
    compile_fx.compile_fx = compile_fx_entry
    _start_at_first_hit()


def _start_at_first_hit() -> None:
    """A process that only loads compiled graphs (vLLM's warm start: ``CompiledArtifact.load``,
    no ``compile_fx``) starts its session at the first cache hit, which every load goes
    through (``capture.graph_cache``); that hit is then replayed by the new session."""
    from torch._inductor.codecache import FxGraphCache

    name = "cache_hit_post_compile"
    original = FxGraphCache.__dict__[name].__func__

    def cache_hit_entry(*args: Any, **kwargs: Any) -> Any:
        if not _process.started:
            _start_session()
            current = FxGraphCache.__dict__[name].__func__
            if current is not cache_hit_entry:  # the session's own seam, which calls this again
                return current(*args, **kwargs)
        return original(*args, **kwargs)

    cache_hit_entry.__wrapped__ = original  # type: ignore[attr-defined]
    setattr(FxGraphCache, name, staticmethod(cache_hit_entry))


def _start_session() -> None:
    """The session of this process, into its folder, once; never raises."""
    with _process.lock:
        if _process.started:
            return
        _process.started = True
        if _process.stepped_aside:
            return
        try:
            _process.session = _attach()
        except Exception as exc:  # noqa: BLE001 - the program compiles untracked, and is told once
            _warn(f"tracking not started: {type(exc).__name__}: {exc}")


def _attach() -> Any:
    from spyre_provenance.backends import get_backend, resolve_backend
    from spyre_provenance.capture import tracking

    layout = _process.folder()
    asked = os.environ.get(environment.BACKEND) or "auto"
    name, _ = resolve_backend(asked, attached=True, loaded="torch_spyre" in sys.modules)
    return tracking.attach(
        lambda: tracking.start(get_backend(name, bundle_dir=layout.bundle_root), layout=layout),
        _step_aside,
    )


def _step_aside() -> None:
    """The program enables tracking itself: the attached session ends, and torch's log
    goes only where the program points it."""
    from spyre_provenance.capture import tracking

    _process.stepped_aside = True
    tracking.disable()
    if _process.handler is not None:
        logging.getLogger(TRACE_LOGGER).removeHandler(_process.handler)


def _after_fork() -> None:
    """In a forked child: a folder, a log and (at its first compile) a session of its own."""
    _process.lock = threading.RLock()
    _process.layout = None
    _process.made = []  # the parent's to remove, not the child's
    if _process.handler is not None:
        _process.handler.forget_stream()
    if _process.session is not None and not _process.stepped_aside:
        try:
            from spyre_provenance.capture import tracking

            tracking.disable()
        except Exception as exc:  # noqa: BLE001 - the child goes on untracked
            _warn(f"tracking not restarted in a forked process: {type(exc).__name__}: {exc}")
    _process.session = None
    _process.started = False


def _at_exit() -> None:
    """A folder whose session recorded no graph goes again: the process compiled nothing
    tracking could record (torch logged a compile that reached no Inductor code)."""
    session, handler = _process.session, _process.handler
    if session is not None and session.results:
        if handler is not None:
            handler.flush()
        _say_ended()
        return
    if handler is None or handler.path is None:
        return
    logging.getLogger(TRACE_LOGGER).removeHandler(handler)
    handler.close()
    layout = _process.folder()
    if not _process.started:  # torch logged compiles, and not one reached Inductor's entry
        _say_other_backends(layout.out.name)
    held = [p for p in layout.out.rglob("*") if p.is_file()] if layout.out.is_dir() else []
    if all(p == handler.path for p in held):  # nothing but the log of no graph
        shutil.rmtree(layout.out, ignore_errors=True)
        _process.remove_made()


def _say_ended() -> None:
    """Tell ``run`` (when it launched this process) that this process's folder is whole: a
    file named after the folder in the folder it named (``environment.ENDED``)."""
    said = os.environ.get(environment.ENDED)
    if not said:
        return
    try:
        with open(os.path.join(said, _process.folder().out.name), "w"):
            pass
    except OSError:  # run ends it after the process instead, as without the word
        pass


def _say_other_backends(folder: str) -> None:
    """Tell ``run`` (when it launched this process) which backends compiled here instead of
    Inductor: a file named after the process's folder in ``ENDED``'s ``OTHER_BACKENDS``."""
    said = os.environ.get(environment.ENDED)
    if not said:
        return
    try:
        where = os.path.join(said, environment.OTHER_BACKENDS)
        os.makedirs(where, exist_ok=True)
        with open(os.path.join(where, folder), "w", encoding="utf-8") as names:
            names.write("".join(f"{name}\n" for name in other_backends()))
    except OSError:  # run then says what it says of a process that compiled nothing
        pass


def other_backends() -> list[str]:
    """The backends other than Inductor the program handed ``torch.compile``, by name: torch
    keeps each in ``torch._dynamo.eval_frame.cached_backends`` (until ``torch._dynamo.reset``)
    as ``torch.compile``'s wrapper (its ``compiler_name``: ``aot_eager``) or the function
    itself. Nothing is imported: at exit, a process that compiled has them loaded."""
    eval_frame = sys.modules.get("torch._dynamo.eval_frame")
    try:
        backends = list(getattr(eval_frame, "cached_backends", {}).values())
    except Exception:  # noqa: BLE001 - torch's internals moved: nothing to name
        return []
    names = {
        str(getattr(b, "compiler_name", None) or getattr(b, "__name__", None) or type(b).__name__)
        for b in backends
        if b is not None  # a disabling context's (torch._dynamo.disable, run): no backend
    }
    return sorted(names - {"inductor"})


def _tell(message: str) -> None:
    """One line on stderr, where the program's user sees it (not a warning: a program that
    turns warnings into errors must not fail on it)."""
    try:
        if sys.stderr is not None:
            sys.stderr.write(f"spyre-provenance: {message}\n")
    except Exception:  # noqa: BLE001 - stderr closed or replaced: nowhere left to say it
        pass


def _warn(message: str) -> None:
    """A ``ProvenanceWarning`` that is never an exception (``base.errors.warn``): most of
    these are said from inside torch's logging call, in the middle of a compile."""
    from spyre_provenance.base import errors

    errors.warn(f"spyre-provenance: {message} (the program goes on)", stacklevel=2)
