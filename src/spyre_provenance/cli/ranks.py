"""``spyre-provenance compile MODEL --ranks N``: one process per rank, a gloo group.

The parent hosts the rendezvous store (a ``TCPStore`` on a port the system picks, so no
port can be taken in between) and starts ``spyre-provenance compile MODEL ... --rank r``
N times with torch's usual variables. Each rank joins the group
(``capture.ranks``), does its own tracked compile and writes ``OUT/rank<r>/`` exactly as a
single ``compile --out OUT/rank<r>`` would (graph folders, ``trace/<model>.log``, bundles).
When they are done the parent prints each rank's summary under a ``[rank r]`` prefix and
renders tlparse's multi-rank report of all of them into ``OUT/tlparse/<model>/``.

A rank failing must not take the others' artifacts with it nor hang the run:

- the artifacts are written during the compile (atomically), before the compiled code
  runs its collectives; a rank whose collective then fails (its peer is gone: gloo sees
  the closed connection at once) keeps them, says ``NOT CHECKED`` and exits 2;
- a hung peer is bounded by the group's timeout (``capture.ranks``); the parent gives the
  other ranks that long (plus a margin) after the first one failed, then stops them;
- the parent prints exactly one line on stderr, naming the rank that failed first: the
  one killed by a signal, or exiting 2 or 3, or that had to be stopped because it hung.

Exit status: 0 every rank ok; 1 a rank found wanting (its summary says why) or a rank
killed (its artifacts are missing); else the failed rank's own 2 (model unusable on that
rank) or 3 (internal error).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from spyre_provenance.capture import ranks as process_group
from spyre_provenance.capture.compile_job import ORIGIN_SUFFIX
from spyre_provenance.errors import EXIT_FOUND_WANTING, UnusableInput
from spyre_provenance.logs.tlparse_run import TlparseError, render_all_ranks, tlparse_binary
from spyre_provenance.logs.tracelog import GLOG_PREFIX
from spyre_provenance.model import folders

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


def run(args: argparse.Namespace, out: Path, label: str, own_folders) -> int:
    """``out`` and ``label`` as ``cli.compile`` names them; ``own_folders(folder, label)``:
    what a compile of ``label`` writes into ``folder`` besides its log (``compile_job``'s,
    handed in by ``cli.compile``)."""
    if args.ranks < 1:
        raise UnusableInput("--ranks", f"{args.ranks}: needs at least 1 rank")
    if out.exists() and not out.is_dir():
        raise UnusableInput(str(out), "exists and is not a folder")
    out.mkdir(parents=True, exist_ok=True)
    _forget_extra_ranks(out, label, args.ranks, own_folders)

    import torch.distributed as dist

    timeout = process_group.timeout_seconds()
    store = dist.TCPStore("127.0.0.1", 0, args.ranks, is_master=True, wait_for_workers=False)
    with tempfile.TemporaryDirectory(prefix="spyre-provenance-ranks-") as work:
        ranks = _start(args, out, store.port, Path(work))
        try:
            _wait(ranks, grace=timeout + MARGIN_S)
        except BaseException:  # interrupted: leave no rank running
            for r in ranks:
                _stop(r)
            raise
        for r in ranks:
            r.text = r.output.read_text(errors="replace")
            print("\n".join(f"[rank {r.rank}] {line}" for line in r.text.rstrip("\n").splitlines()), flush=True)
    del store
    for r in ranks:
        code = r.process.returncode
        if r.stopped or (code is not None and code < 0):
            _discard_torn_log(out / folders.rank_folder(r.rank), r.process.pid, label)

    logs = {
        r.rank: log for r in ranks if (log := out / folders.rank_folder(r.rank) / "trace" / f"{label}.log").is_file()
    }
    tlparse = tlparse_binary()
    if logs and not args.no_tlparse and tlparse:
        try:
            report = render_all_ranks(tlparse, logs, out / "tlparse" / label)
        except TlparseError as exc:
            print(str(exc), file=sys.stderr)
        else:
            print(f"multi-rank report: {report.landing}")
            width = max((len(page.label) for page in report.pages), default=0)
            for page in report.pages:
                print(f"  {page.label.ljust(width)}  {page.page}")

    if logs:  # one page for every rank's graphs
        from spyre_provenance.cli import view

        print(view.beside(out))

    failed = sorted((r for r in ranks if r.failed), key=lambda r: (not r.stopped, r.ended_at or 0.0, r.rank))
    if not failed:
        return max(r.process.returncode for r in ranks)
    first = failed[0]
    kept = [
        r.rank
        for r in ranks
        if r is not first
        and any(
            folders.is_graph_folder_of(p.name, label)
            for p in (out / folders.rank_folder(r.rank)).glob(folders.GRAPH_PREFIX + "*")
        )
    ]
    others = (
        f"; artifacts kept: {', '.join(str(out / folders.rank_folder(k)) for k in kept)}"
        if kept
        else "; no other rank wrote artifacts"
        if args.ranks > 1
        else ""
    )
    print(
        f"spyre-provenance compile: error: rank {first.rank} of {args.ranks} failed: {first.why()}{others}",
        file=sys.stderr,
    )
    code = first.process.returncode
    return code if code is not None and code >= 2 and not first.stopped else EXIT_FOUND_WANTING


def _forget_extra_ranks(out: Path, label: str, ranks: int, own_folders) -> None:
    """This model's output in ``rank<r>/`` folders of an earlier run with more ranks: gone,
    so validate, golden and diff see this run's ranks only. Each rank of this run clears
    its own folder itself, as any compile does."""
    import shutil

    for folder in sorted(out.glob(folders.RANK_PREFIX + "*")):
        rank = folders.rank_of_folder(folder.name)
        if rank is None or rank < ranks or not folder.is_dir():
            continue
        for own in own_folders(folder, label):
            shutil.rmtree(own, ignore_errors=True)
        (folder / "trace" / f"{label}.log").unlink(missing_ok=True)
        (folder / "trace" / f"{label}{ORIGIN_SUFFIX}").unlink(missing_ok=True)
        for empty in (folder / "trace", folder / "sdsc", folder / "tlparse", folder):
            with contextlib.suppress(OSError):
                empty.rmdir()


def _discard_torn_log(folder: Path, pid: int, label: str) -> None:
    """A rank killed mid-compile leaves torch's log under its temporary name, unclaimed.
    It is this rank's when its records carry the rank's pid (every glog line does): other
    runs' logs in the same folder stay. Without a log of the label, the marker naming the
    model the label stands for marks nothing and goes too, and so do the folders it leaves
    empty."""
    for log in sorted((folder / "trace").glob("dedicated_log_torch_trace_*.log")):
        with contextlib.suppress(OSError), open(log, "rb") as fh:
            match = GLOG_PREFIX.match(fh.readline())
            if match and int(match["pid"]) == pid:
                log.unlink()
    if not (folder / "trace" / f"{label}.log").exists():
        (folder / "trace" / f"{label}{ORIGIN_SUFFIX}").unlink(missing_ok=True)
    for empty in (folder / "trace", folder):
        with contextlib.suppress(OSError):
            empty.rmdir()


def _rank_args(args: argparse.Namespace, out: Path, rank: int) -> list[str]:
    """The command line of one rank: this one's, with the rank, and no tlparse (the parent
    renders all ranks at once)."""
    command = [
        args.model,
        "--backend",
        args.backend,
        "--out",
        str(out),
        "--no-tlparse",
        "--ranks",
        str(args.ranks),
        "--rank",
        str(rank),
    ]
    if args.dtype:
        command += ["--dtype", args.dtype]
    for flag in ("train", "redact_paths", "kernel_cache", "audit"):  # each rank audits its own compile
        if getattr(args, flag):
            command.append("--" + flag.replace("_", "-"))
    return command


def _start(args: argparse.Namespace, out: Path, port: int, work: Path) -> list[Rank]:
    ranks = []
    base = {k: v for k, v in os.environ.items() if k != "TORCH_TRACE"}  # each rank sets its own
    for rank in range(args.ranks):
        env = {
            **base,
            "RANK": str(rank),
            "LOCAL_RANK": str(rank),
            "WORLD_SIZE": str(args.ranks),
            "LOCAL_WORLD_SIZE": str(args.ranks),
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(port),
        }
        output = work / f"rank{rank}.txt"
        with open(output, "wb") as sink:
            process = subprocess.Popen(
                [sys.executable, "-m", "spyre_provenance", "compile", *_rank_args(args, out, rank)],
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
