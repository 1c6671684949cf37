"""``spyre-provenance compile MODEL --ranks N``: one process per rank, a gloo group.

The parent hosts the rendezvous store (a ``TCPStore`` on a port the system picks, so no
port can be taken in between) and starts ``spyre-provenance compile MODEL ... --rank r``
N times with torch's usual variables. Each rank joins the group
(``compile.process_group``), does its own tracked compile and writes ``OUT/rank<r>/`` exactly as a
single ``compile --out OUT/rank<r>`` would (graph folders, ``trace/<model>.log``, bundles).
When they are done the parent prints each rank's summary under a ``[rank r]`` prefix and
renders tlparse's multi-rank report of all of them into ``OUT/tlparse/<model>/``.

A rank failing must not take the others' artifacts with it nor hang the run:

- the artifacts are written during the compile (atomically), before the compiled code
  runs its collectives; a rank whose collective then fails (its peer is gone: gloo sees
  the closed connection at once) keeps them, says ``NOT CHECKED`` and exits 2;
- a hung peer is bounded by the group's timeout (``compile.process_group``); the parent gives the
  other ranks that long (plus a margin) after the first one failed, then stops them;
- the parent prints exactly one line on stderr, naming the rank that failed first: the
  one killed by a signal, or exiting 2 or 3, or that had to be stopped because it hung.

Exit status: 0 every rank ok; 1 a rank found wanting (its summary says why) or a rank
killed (its artifacts are missing); else the failed rank's own 2 (model unusable on that
rank) or 3 (internal error).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from spyre_provenance.base.errors import EXIT_FOUND_WANTING, UnusableInput, Verdict
from spyre_provenance.compile import process_group
from spyre_provenance.logs.tlparse_run import TlparseError, render_all_ranks, tlparse_binary
from spyre_provenance.logs.tracelog import GLOG_PREFIX
from spyre_provenance.model.layout import Layout
from spyre_provenance.viewer import page as viewer_page

if TYPE_CHECKING:
    from spyre_provenance.compile.job import CompileRequest

POLL_S = 0.05
MARGIN_S = 30.0  # beyond the group's timeout, before the parent stops a rank that hangs
STOP_S = 5.0  # between SIGTERM and SIGKILL


@dataclass
class Rank:
    rank: int
    process: subprocess.Popen
    output: Path  # its stdout and stderr, merged
    text: str = ""  # what it printed, read once it ended
    ended_at: float | None = None
    stopped: bool = False  # the parent had to stop it: it hung

    @property
    def failed(self) -> bool:
        code = self.process.returncode
        return self.stopped or code is None or code < 0 or code >= 2

    def why(self) -> str:
        code = self.process.returncode
        if self.stopped:
            return "did not finish after another rank failed (stopped)"
        if code is not None and code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            return f"killed by {name}"
        last = _last_line(self.text).removeprefix("spyre-provenance compile: error: ")
        return f"exit {code}" + (f": {last}" if last else "")


class RanksOutcome(msgspec.Struct):
    """A ``compile --ranks N`` run as its parent saw it: what to print, in order (``lines``
    on stdout, ``problems`` on stderr), and the exit status."""

    out: Path
    lines: list[str]
    problems: list[str]
    exit_code: int

    @property
    def verdict(self) -> Verdict:
        return Verdict.of_exit(self.exit_code, self.problems[-1] if self.problems else "")


def run(request: CompileRequest, layout: Layout) -> RanksOutcome:
    """Start ``request.ranks`` processes, each ``compile`` of one rank into ``layout.rank(r)``,
    wait for them, and render tlparse's multi-rank report and the viewer's page."""
    assert request.ranks is not None
    out = layout.out
    if request.ranks < 1:
        raise UnusableInput("--ranks", f"{request.ranks}: needs at least 1 rank")
    if out.exists() and not out.is_dir():
        raise UnusableInput(str(out), "exists and is not a folder")
    out.mkdir(parents=True, exist_ok=True)
    _forget_extra_ranks(layout, request.ranks)

    import torch.distributed as dist

    lines: list[str] = []
    problems: list[str] = []
    timeout = process_group.timeout_seconds()
    store = dist.TCPStore("127.0.0.1", 0, request.ranks, is_master=True, wait_for_workers=False)
    with tempfile.TemporaryDirectory(prefix="spyre-provenance-ranks-") as work:
        ranks = _start(request, out, store.port, Path(work))
        try:
            _wait(ranks, grace=timeout + MARGIN_S)
        except BaseException:  # interrupted: leave no rank running
            for r in ranks:
                _stop(r)
            raise
        for r in ranks:
            r.text = r.output.read_text(errors="replace")
            lines.append("\n".join(f"[rank {r.rank}] {line}" for line in r.text.rstrip("\n").splitlines()))
    del store
    for r in ranks:
        code = r.process.returncode
        if r.stopped or (code is not None and code < 0):
            _discard_torn_log(layout.rank(r.rank), r.process.pid)

    logs = {r.rank: log for r in ranks if (log := layout.rank(r.rank).trace_log).is_file()}
    tlparse = tlparse_binary()
    if logs and request.tlparse and tlparse:
        try:
            report = render_all_ranks(tlparse, logs, layout.pages)
        except TlparseError as exc:
            problems.append(str(exc))
        else:
            lines.append(f"multi-rank report: {report.landing}")
            width = max((len(page.label) for page in report.pages), default=0)
            lines += [f"  {page.label.ljust(width)}  {page.page}" for page in report.pages]

    if logs:  # one page for every rank's graphs
        lines.append(viewer_page.beside(out))

    failed = sorted((r for r in ranks if r.failed), key=lambda r: (not r.stopped, r.ended_at or 0.0, r.rank))
    if not failed:
        return RanksOutcome(out, lines, problems, max(r.process.returncode for r in ranks))
    first = failed[0]
    kept = [r.rank for r in ranks if r is not first and layout.rank(r.rank).graph_folders()]
    others = (
        f"; artifacts kept: {', '.join(str(layout.rank(k).out) for k in kept)}"
        if kept
        else "; no other rank wrote artifacts"
        if request.ranks > 1
        else ""
    )
    problems.append(
        f"spyre-provenance compile: error: rank {first.rank} of {request.ranks} failed: {first.why()}{others}"
    )
    code = first.process.returncode
    return RanksOutcome(
        out, lines, problems, code if code is not None and code >= 2 and not first.stopped else EXIT_FOUND_WANTING
    )


def _forget_extra_ranks(layout: Layout, ranks: int) -> None:
    """This model's output in ``rank<r>/`` folders of an earlier run with more ranks: gone,
    so validate, golden and diff see this run's ranks only. Each rank of this run clears
    its own folder itself, as any compile does."""
    import shutil

    for rank, ranked in layout.ranks():
        if rank < ranks:
            continue
        for own in ranked.own_folders():
            shutil.rmtree(own, ignore_errors=True)
        ranked.trace_log.unlink(missing_ok=True)
        ranked.origin_marker.unlink(missing_ok=True)
        for empty in (ranked.trace_dir, *ranked.shared_folders(), ranked.out):
            with contextlib.suppress(OSError):
                empty.rmdir()


def _discard_torn_log(ranked: Layout, pid: int) -> None:
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
        ranked.origin_marker.unlink(missing_ok=True)
    for empty in (ranked.trace_dir, ranked.out):
        with contextlib.suppress(OSError):
            empty.rmdir()


def _rank_args(request: CompileRequest, out: Path, rank: int) -> list[str]:
    """The command line of one rank: this one's, with the rank, and no tlparse (the parent
    renders all ranks at once)."""
    assert request.ranks is not None
    command = [
        request.model,
        "--backend",
        request.backend,
        "--out",
        str(out),
        "--no-tlparse",
        "--ranks",
        str(request.ranks),
        "--rank",
        str(rank),
    ]
    if request.dtype:
        command += ["--dtype", request.dtype]
    for flag in ("train", "redact_paths", "kernel_cache", "audit"):  # each rank audits its own compile
        if getattr(request, flag):
            command.append("--" + flag.replace("_", "-"))
    return command


def _start(request: CompileRequest, out: Path, port: int, work: Path) -> list[Rank]:
    assert request.ranks is not None
    ranks = []
    base = {k: v for k, v in os.environ.items() if k != "TORCH_TRACE"}  # each rank sets its own
    for rank in range(request.ranks):
        env = {
            **base,
            "RANK": str(rank),
            "LOCAL_RANK": str(rank),
            "WORLD_SIZE": str(request.ranks),
            "LOCAL_WORLD_SIZE": str(request.ranks),
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(port),
        }
        output = work / f"rank{rank}.txt"
        with open(output, "wb") as sink:
            process = subprocess.Popen(
                [sys.executable, "-m", "spyre_provenance", "compile", *_rank_args(request, out, rank)],
                stdin=subprocess.DEVNULL,
                stdout=sink,
                stderr=subprocess.STDOUT,
                env=env,
            )
        ranks.append(Rank(rank, process, output))
    return ranks


def _wait(ranks: list[Rank], grace: float) -> None:
    """Until every rank ended; once one failed, the others get ``grace`` seconds."""
    deadline = None
    while True:
        now = time.monotonic()
        for r in ranks:
            if r.ended_at is None and r.process.poll() is not None:
                r.ended_at = now
        running = [r for r in ranks if r.ended_at is None]
        if not running:
            return
        if deadline is None and any(r.failed for r in ranks if r.ended_at is not None):
            deadline = now + grace
        if deadline is not None and now > deadline:
            for r in running:
                r.stopped = True
                _stop(r)
                r.ended_at = time.monotonic()
            return
        time.sleep(POLL_S)


def _stop(r: Rank) -> None:
    if r.process.poll() is not None:
        return
    r.process.terminate()
    try:
        r.process.wait(STOP_S)
    except subprocess.TimeoutExpired:
        r.process.kill()
        r.process.wait()


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""
