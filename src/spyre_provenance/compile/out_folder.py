"""An out folder's lifecycle for one model's compile, in one place: refused when it is a
file (``refuse_file``), prepared (``prepare``: this model's earlier output removed, a label
another model holds refused), held while the compile writes (``claimed``: a failed run's
output discarded), its log claimed under the model's name (``claim_log``); and for
``compile --ranks``, the ranks an earlier run had beyond this one's forgotten
(``forget_extra_ranks``) and a killed rank's torn log removed (``discard_torn_log``).

A run replaces only its own model's output: another model's folders and logs in the same
out folder (maybe being written right now by another run) stay untouched. Every path is the
``Layout``'s; torch's trace handler is ``capture.trace_log``'s.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator
from pathlib import Path

from spyre_provenance.base.errors import UnusableInput
from spyre_provenance.base.files import atomic_write_text, remove_stale_temporaries
from spyre_provenance.capture import trace_log
from spyre_provenance.logs.tracelog import GLOG_PREFIX
from spyre_provenance.model.layout import Layout


def refuse_file(out: Path) -> None:
    """An out folder that exists as a file: one line, exit 2."""
    if out.exists() and not out.is_dir():
        raise UnusableInput(str(out), "exists and is not a folder")


@contextlib.contextmanager
def claimed(layout: Layout | None, model: str) -> Iterator[None]:
    """``prepare`` the folder for ``model`` (``request.resolved_model``), and discard what the run wrote
    when it fails (whatever it raises): a failed run leaves no half-named log, no stale
    folder. Nothing to do for a run that writes nothing (None)."""
    if layout is None:
        yield
        return
    created = [p for p in (layout.out, layout.trace_dir) if not p.exists()]
    prepare(layout, model)
    try:
        yield
    except BaseException:
        discard(layout, created)
        raise


def prepare(layout: Layout, model: str) -> None:
    """Remove this model's output of an earlier run, and nothing else. A label ``out``
    already holds for another model is refused (exit 2) before anything is removed."""
    try:
        held = layout.model_marker.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        held = None
    if held and held != model:
        raise UnusableInput(
            str(layout.out),
            f"holds the output of {held} under the label {layout.label!r}; {model} would replace it: use another --out",
        )
    if layout.out.is_dir():
        remove_stale_temporaries(layout.out)  # a killed writer's leftovers; live writers' stay
        for folder in layout.own_folders():
            if folder.is_dir():
                shutil.rmtree(folder)
        layout.trace_log.unlink(missing_ok=True)
    layout.trace_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_text(layout.model_marker, model + "\n")


def discard(layout: Layout, created: list[Path]) -> None:
    """Remove what this run wrote: its graph folders, bundles and pages, torch's log of it
    under its temporary name, and the folders it created when they hold nothing else.
    Another model's output stays."""
    for folder in layout.own_folders():
        shutil.rmtree(folder, ignore_errors=True)
    log = claim_log(layout)
    if log is not None:
        log.unlink(missing_ok=True)
    layout.model_marker.unlink(missing_ok=True)
    for folder in [*layout.shared_folders(), *sorted(created, key=lambda p: -len(p.parts))]:
        with contextlib.suppress(OSError):
            folder.rmdir()  # only when empty


def claim_log(layout: Layout) -> Path | None:
    """This compile's TORCH_TRACE log, renamed to the model's ``trace/<label>.log``; None if
    torch wrote none."""
    return trace_log.claim(layout.trace_log)


def forget_extra_ranks(layout: Layout, ranks: int) -> None:
    """This model's output in ``rank<r>/`` folders of an earlier run with more ranks: gone,
    so validate, golden and diff see this run's ranks only. Each rank of this run clears
    its own folder itself, as any compile does."""
    for rank, ranked in layout.ranks():
        if rank < ranks:
            continue
        for own in ranked.own_folders():
            shutil.rmtree(own, ignore_errors=True)
        ranked.trace_log.unlink(missing_ok=True)
        ranked.model_marker.unlink(missing_ok=True)
        for empty in (ranked.trace_dir, *ranked.shared_folders(), ranked.out):
            with contextlib.suppress(OSError):
                empty.rmdir()


def discard_torn_log(ranked: Layout, pid: int) -> None:
    """A rank killed mid-compile leaves torch's log under its temporary name, unclaimed.
    It is this rank's when its records carry the rank's pid (every glog line does): other
    runs' logs in the same folder stay. Without a log of the label, the marker naming the
    model the label stands for marks nothing and goes too, and so do the folders it leaves
    empty."""
    for log in sorted(ranked.trace_dir.glob("dedicated_log_torch_trace_*.log")):
        with contextlib.suppress(OSError), open(log, "rb") as fh:
            match = GLOG_PREFIX.match(fh.readline())
            if match and int(match["pid"]) == pid:
                log.unlink()
    if not ranked.trace_log.exists():
        ranked.model_marker.unlink(missing_ok=True)
    for empty in (ranked.trace_dir, ranked.out):
        with contextlib.suppress(OSError):
            empty.rmdir()
