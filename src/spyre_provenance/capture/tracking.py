"""The Python API of tracking: ``enable``, ``disable``, ``tracking``; one session at a time.

``enable`` checks the installed torch for every seam the hook patches (``missing_seams``)
before anything is patched, builds the session (``hook.Session``) with the backend asked
for, and installs it; ``disable`` undoes it. The package's top level re-exports these
(``spyre_provenance.enable`` ...): their out folder is ``out_dir`` and ``label``. ``start``
and ``started`` are ``enable`` and ``tracking`` for the compile door and an attached
process, which hold it as one ``Layout``, and for tests, which hand in an ``Inductor``.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

from spyre_provenance.backends import DEFAULT_BACKEND, get_backend
from spyre_provenance.backends.base import TRACING_FUNCTION, Backend
from spyre_provenance.base.errors import TorchNotInstalled, UnsupportedTorch
from spyre_provenance.base.process import torch_missing
from spyre_provenance.capture.hook import DUMP_FUNCTION, Session
from spyre_provenance.capture.inductor import Inductor
from spyre_provenance.model.layout import Layout

#: The torch releases the test suite runs on (``make test``, ``make test-torch-next``).
TESTED_TORCH = "2.13.0, 2.14.1 and 2.15.0"


_lock = threading.RLock()


_session: Session | None = None
#: Set while the session is one attached from outside the program (``capture.attach``):
#: what makes it step aside when the program enables its own (``enable``).
_step_aside: Callable[[], None] | None = None


def missing_seams() -> list[str]:
    """What the installed torch lacks of the seams ``install`` patches or sets, by full name
    (empty: tracking can be enabled). Never raises: a module that does not import is missing."""
    import importlib

    wanted = (
        ("torch._inductor.debug", TRACING_FUNCTION),
        ("torch._inductor.debug", DUMP_FUNCTION),
        ("torch._inductor.config", "trace.provenance_tracking_level"),
    )
    missing = []
    for module_name, attr in wanted:
        try:
            owner: Any = importlib.import_module(module_name)
            for part in attr.split("."):
                owner = getattr(owner, part)
        except Exception:  # noqa: BLE001 - ImportError, AttributeError, whatever a broken torch raises
            missing.append(f"{module_name}.{attr}")
            continue
        if attr in (TRACING_FUNCTION, DUMP_FUNCTION) and not callable(owner):
            missing.append(f"{module_name}.{attr}")
    return missing


def _refuse_unsupported_torch() -> None:
    if torch_missing():
        raise TorchNotInstalled()
    missing = missing_seams()
    if missing:
        import importlib.metadata

        try:
            version = importlib.metadata.version("torch")
        except importlib.metadata.PackageNotFoundError:
            version = "(not installed)"
        raise UnsupportedTorch(version, missing, TESTED_TORCH)


def enable(
    backend: str | Backend = DEFAULT_BACKEND,
    *,
    out_dir: str | Path | None = None,
    label: str | None = None,
    redact_paths: bool | str | Path = False,
    audit: bool = False,
    beyond_upstream: bool = False,
    **deprecated: object,
) -> Session:
    """Start tracking every compile in this process; returns the session (its results).

    ``backend``: ``"auto"`` (the default, as on the command line: torch-spyre when the
    adapter can install on it, else the reference backend), ``"reference"``, ``"spyre"``,
    ``"inductor"`` (stock Inductor), or a ``Backend`` (``spyre_provenance.types``).
    ``out_dir``: also write each graph's artifacts into ``out_dir/graph_.../`` (None: they
    are logged, and written into Inductor's debug folder when its trace is on).
    ``label`` names the graph folders written into ``out_dir`` (``graph_<label>_00_...``),
    so runs of different models can share one ``out_dir``; None: ``graph_00_...``.
    ``redact_paths``: absolute paths in the stack traces, handle sources and fault messages
    of the artifacts written and logged become ``<project>/...``, ``<site-packages>/...``,
    ``~/...``; the KernelRecords keep them. True: the project is found from the current
    folder; a path: from that folder (the model's file's).
    ``audit``: also count which provenance fields every stage carries (each graph's
    ``GraphResult.audit``).
    ``beyond_upstream``: on stock Inductor, complete the mapping as the Spyre backends do
    instead of logging torch's own.
    ``deprecated``: ``layout`` and ``inductor``, internal seams, still work for one release
    with a ``DeprecationWarning``.

    Raises ``UnsupportedTorch`` (a RuntimeError, one line) when the installed torch lacks a
    seam the hook patches, and ``TorchNotInstalled`` (an ImportError, one line naming the
    ``[compile]`` extra) without torch, before anything is patched.
    """
    layout, inductor = _old_keywords("enable", deprecated, out_dir, label, stacklevel=3)
    return start(
        backend,
        layout=layout,
        label=label,
        redact_paths=redact_paths,
        inductor=inductor,
        audit=audit,
        beyond_upstream=beyond_upstream,
    )


def start(
    backend: str | Backend = DEFAULT_BACKEND,
    *,
    layout: Layout | None = None,
    label: str | None = None,
    redact_paths: bool | str | Path = False,
    inductor: Inductor | None = None,
    audit: bool = False,
    beyond_upstream: bool = False,
) -> Session:
    """``enable`` as the compile door and an attached process call it: the out folder as the
    one ``Layout`` they hold (``label`` names the graph folders when there is none), and
    ``inductor``, what the session reads Inductor through (default ``Inductor()``; a test
    makes one step fail with a subclass)."""
    global _session
    with _lock:
        if _session is not None and _step_aside is not None:
            _step_aside()  # the program's own tracking wins over one attached from outside
        if _session is not None:
            raise RuntimeError("spyre-provenance tracking is already enabled; call disable() first")
        _refuse_unsupported_torch()
        chosen = get_backend(backend, beyond_upstream=beyond_upstream) if isinstance(backend, str) else backend
        redactor: Redactor | None = None
        if redact_paths:
            from spyre_provenance.links.redact import Redactor, find_project

            project_at = Path.cwd() if redact_paths is True else Path(redact_paths)
            redactor = Redactor.default(find_project(project_at, Path.home()))
        session = Session(chosen, layout, label, redactor, inductor, audit)
        chosen.path_redactor = redactor  # files the backend writes itself (SuperDSC bundles)
        session.install()
        _session = session
        return session


def _old_keywords(
    caller: str, given: dict[str, object], out_dir: str | Path | None, label: str | None, *, stacklevel: int
) -> tuple[Layout | None, Inductor | None]:
    """``enable``'s out folder as one ``Layout``, and its ``Inductor``: built from ``out_dir``
    and ``label``, or taken, with a DeprecationWarning, from the old keywords ``layout`` and
    ``inductor`` (internal seams, out of the public signature)."""
    import warnings

    unknown = sorted(set(given) - {"layout", "inductor"})
    if unknown:
        raise TypeError(f"{caller}() got an unexpected keyword argument {unknown[0]!r}")
    for old, new in (("layout", "out_dir=... and label=..."), ("inductor", "nothing: the Inductor seam is internal")):
        if old in given:
            message = f"spyre_provenance.{caller}({old}=...) is deprecated: use {new}"
            warnings.warn(message, DeprecationWarning, stacklevel=stacklevel)
    layout, inductor = cast("Layout | None", given.get("layout")), cast("Inductor | None", given.get("inductor"))
    if layout is None:
        return (Layout(Path(out_dir), label) if out_dir is not None else None), inductor
    if out_dir is not None or label is not None:
        raise ValueError(f"give {caller}() a layout or an out_dir and label, not both")
    return layout, inductor


def current() -> Session | None:
    """The session tracking now, if any."""
    return _session


def attach(session_of: Callable[[], Session], step_aside: Callable[[], None]) -> Session | None:
    """Enable the session ``session_of`` builds (``capture.attach``: tracking switched on
    from outside the program), unless the program tracks already (None then).
    ``step_aside`` is called, under the lock, when the program enables its own tracking
    later: it disables the attached session (``disable``)."""
    global _session, _step_aside
    with _lock:
        if _session is not None:
            return None
        session = session_of()
        _session, _step_aside = session, step_aside
        return session


def disable() -> Session | None:
    """Stop tracking and undo every patch; returns the finished session."""
    global _session, _step_aside
    with _lock:
        session, _session, _step_aside = _session, None, None
        if session is not None:
            session.uninstall()
        return session


# enable's keywords spelled out again (not **kwargs): the API page and type checkers show them
@contextlib.contextmanager
def tracking(
    backend: str | Backend = DEFAULT_BACKEND,
    *,
    out_dir: str | Path | None = None,
    label: str | None = None,
    redact_paths: bool | str | Path = False,
    audit: bool = False,
    beyond_upstream: bool = False,
    **deprecated: object,
) -> Iterator[Session]:
    """``with tracking(...) as session: torch.compile(model)(x)``: ``enable`` for the block,
    ``disable`` when it ends (also on an exception). Takes ``enable``'s arguments and yields
    its ``Session``; ``session.results`` holds one ``GraphResult`` per compiled graph."""
    layout, inductor = _old_keywords("tracking", deprecated, out_dir, label, stacklevel=4)
    session = start(
        backend,
        layout=layout,
        label=label,
        redact_paths=redact_paths,
        inductor=inductor,
        audit=audit,
        beyond_upstream=beyond_upstream,
    )
    with until_disabled(session):
        yield session


@contextlib.contextmanager
def until_disabled(session: Session) -> Iterator[Session]:
    """``session`` (``start``'s) for a block, ``disable`` when it ends (also on an
    exception): ``tracking``, and the compile door's ``with until_disabled(start(...))``."""
    try:
        yield session
    finally:
        disable()
