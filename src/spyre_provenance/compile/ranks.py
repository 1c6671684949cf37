"""``spyre-provenance compile MODEL --ranks N``: one process per rank, started by torchrun.

The parent starts the ranks through torchrun's own launcher (``torch.distributed.launcher``'s
``elastic_launch``, as ``torchrun --standalone --nproc-per-node N`` does: a c10d rendezvous on
a loopback port the system picks, its store hosted here), each rank running
``spyre-provenance compile`` with the parent's arguments (``compile.request.command_line``:
every field of the request, the pages left to the parent). torchrun sets ``RANK``,
``LOCAL_RANK``, ``WORLD_SIZE``; a ``compile --ranks N`` that finds them is that rank
(``compile.process_group``): it joins the gloo group, does its own tracked compile and writes
``OUT/rank<r>/`` exactly as a single ``compile --out OUT/rank<r>`` would (graph folders,
``trace/<model>.log``, bundles, its profile). When they are done the parent prints each rank's
output under a ``[rank r]`` prefix and renders tlparse's multi-rank report of all of them into
``OUT/tlparse/<model>/``.

A rank failing must not take the others' artifacts with it nor hang the run:

- once a rank fails, torchrun stops the others (SIGTERM, then SIGKILL 30 s later); a rank
  ignores the SIGTERM and finishes what it is doing (``process_group.finish_when_stopped``):
  its artifacts are written during the compile (atomically), before the compiled code runs
  its collectives, and a rank whose collective then fails (its peer is gone: gloo sees the
  closed connection at once) keeps them, says ``NOT CHECKED`` and exits 2;
- a hung rank is bounded by torchrun's SIGKILL, 30 s after the first failure (and a
  collective waiting on a hung peer by the group's timeout, ``compile.process_group``);
- the parent prints exactly one line on stderr, naming the rank that failed: one torchrun
  had to kill (it hung), else the first to fail (killed by a signal, or exiting 2 or 3).

Exit status: 0 every rank ok; 1 a rank found wanting (its output says why) or a rank
killed or stopped (its artifacts are missing); else the failed rank's own 2 (model unusable
on that rank) or 3 (internal error).
"""

from __future__ import annotations

import contextlib
import logging
import signal
import sys
import tempfile
import uuid
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import msgspec

from spyre_provenance.base.errors import EXIT_FOUND_WANTING, UnusableInput, Verdict
from spyre_provenance.compile import out_folder, process_group
from spyre_provenance.compile.request import CompileRequest, command_line
from spyre_provenance.logs.tlparse_render import tlparse_binary
from spyre_provenance.model.layout import Layout
from spyre_provenance.viewer.pages import Page
from spyre_provenance.viewer.pages import write as write_pages

if TYPE_CHECKING:
    from torch.distributed.elastic.multiprocessing import LogsSpecs

#: torchrun's signals: the ones its agent turns into an interrupt of the parent
_FAILED_AT = "rank{rank}.failed_at"  # in the work folder: the moment a rank noted it failed
_TORCHRUN_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)


class RankResult(msgspec.Struct, frozen=True):
    """One rank of a ``compile --ranks N`` run, as it ended."""

    rank: int
    out: Path  # its folder, OUT/rank<r>
    exit_code: int  # its exit status; -N: ended by signal N
    stopped: bool  # torchrun stopped it (a signal) after another rank failed; ``hung``: killed
    output: list[str]  # what it printed, its stdout's lines then its stderr's
    wrote: bool  # its folder holds graph folders: its artifacts are there

    @property
    def failed(self) -> bool:
        return self.stopped or self.exit_code < 0 or self.exit_code >= 2

    @property
    def hung(self) -> bool:
        """torchrun had to kill it: it ignores the SIGTERM that stops it and was still busy
        when the SIGKILL came, 30 s later. (Stopped by SIGTERM, it was only starting.)"""
        return self.stopped and self.exit_code == -signal.SIGKILL

    def why(self) -> str:
        """How it failed, in a few words."""
        if self.hung:
            return "did not finish after another rank failed (stopped)"
        if self.stopped:
            return "stopped as it started, after another rank failed"
        if self.exit_code < 0:
            try:
                name = signal.Signals(-self.exit_code).name
            except ValueError:
                name = f"signal {-self.exit_code}"
            return f"killed by {name}"
        lines = [line.strip() for line in self.output if line.strip()]
        last = lines[-1][:300].removeprefix("spyre-provenance compile: error: ") if lines else ""
        return f"exit {self.exit_code}" + (f": {last}" if last else "")


class _Ended(NamedTuple):
    """How torchrun saw a rank end."""

    code: int  # its exit status; -N: ended by signal N
    stopped: bool  # ended by a signal after another rank failed: torchrun stopped it
    order: int  # when it failed, among the ranks that did (0: first); the ranks that did not: last
    pid: int | None  # its process, when it failed


class RankPage(msgspec.Struct, frozen=True):
    """One page of tlparse's multi-rank report: a rank's graph (``label``) and its page."""

    label: str  # ``rank r [0/0] inference``
    page: Path


class RanksOutcome(msgspec.Struct):
    """A ``compile --ranks N`` run as its parent saw it: every rank as it ended, the pages
    made of all of them, the rank named as failing (None: none failed) and the exit status.
    ``lines`` (stdout) and ``problems`` (stderr) are what the command prints, made from these."""

    out: Path
    ranks: list[RankResult]
    report: Path | None  # tlparse's multi-rank landing page
    pages: list[RankPage]  # each rank's provenance page per graph
    viewer: Path | None  # the viewer's page of every rank's graphs; None: not written
    failed: RankResult | None
    problems: list[str]  # tlparse's failure, and the one line naming ``failed``
    exit_code: int
    viewer_problem: str | None = None  # why the viewer's page could not be written

    @property
    def lines(self) -> list[str]:
        lines = ["\n".join(f"[rank {r.rank}] {line}" for line in r.output) for r in self.ranks]
        if self.report is not None:
            lines.append(f"multi-rank report: {self.report}")
            width = max((len(page.label) for page in self.pages), default=0)
            lines += [f"  {page.label.ljust(width)}  {page.page}" for page in self.pages]
        written = self.viewer is not None or self.viewer_problem is not None
        return lines + ([f"viewer page: {Page(self.viewer, self.viewer_problem).shown}"] if written else [])

    @property
    def verdict(self) -> Verdict:
        return Verdict.of_exit(self.exit_code, self.problems[-1] if self.problems else "")


def compile_ranks(request: CompileRequest, layout: Layout) -> RanksOutcome:
    """Start ``request.ranks`` processes through torchrun's launcher, each the ``compile`` of
    one rank into ``layout.rank(r)``, wait for them, and render tlparse's multi-rank report
    and the viewer's page."""
    assert request.ranks is not None
    out = layout.out
    if request.ranks < 1:
        raise UnusableInput("--ranks", f"{request.ranks}: needs at least 1 rank")
    out_folder.refuse_file(out)
    arguments = command_line(msgspec.structs.replace(request, tlparse=False))  # the parent renders the pages
    out.mkdir(parents=True, exist_ok=True)
    out_folder.forget_extra_ranks(layout, request.ranks)
    with tempfile.TemporaryDirectory(prefix="spyre-provenance-ranks-") as work:
        ended = _launch(request.ranks, arguments, Path(work))
        ranks = [_result(layout, r, end, Path(work)) for r, end in sorted(ended.items())]
    for r, end in ended.items():
        if end.code < 0 and end.pid is not None:
            out_folder.discard_torn_log(layout.rank(r), end.pid)

    logs = {r.rank: log for r in ranks if (log := layout.rank(r.rank).trace_log).is_file()}
    # one multi-rank report, and one viewer page for every rank's graphs
    written = write_pages(
        out,
        layout.pages,
        tlparse=tlparse_binary() if logs and request.tlparse else None,
        viewer=bool(logs) and request.viewer,
        rank_logs={out.name: logs},
    )
    problems = [written.tlparse_problem.what] if written.tlparse_problem is not None else []
    report = written.landings[0][1] if written.landings else None
    pages = [RankPage(p.label, p.page) for _, p in written.graphs]
    viewer = written.viewer.path if written.viewer is not None else None
    viewer_problem = written.viewer.problem if written.viewer is not None else None

    failed = sorted((r for r in ranks if r.failed), key=lambda r: (not r.hung, ended[r.rank].order, r.rank))
    first = failed[0] if failed else None
    if first is None:
        code = max(r.exit_code for r in ranks)
        return RanksOutcome(out, ranks, report, pages, viewer, None, problems, code, viewer_problem)
    problems.append(_failure_line(first, ranks, request.ranks))
    code = first.exit_code if first.exit_code >= 2 and not first.stopped else EXIT_FOUND_WANTING
    return RanksOutcome(out, ranks, report, pages, viewer, first, problems, code, viewer_problem)


def _failure_line(first: RankResult, ranks: list[RankResult], of: int) -> str:
    kept = [r for r in ranks if r is not first and r.wrote]
    others = (
        f"; artifacts kept: {', '.join(str(k.out) for k in kept)}"
        if kept
        else "; no other rank wrote artifacts"
        if of > 1
        else ""
    )
    return f"spyre-provenance compile: error: rank {first.rank} of {of} failed: {first.why()}{others}"


def _result(layout: Layout, rank: int, end: _Ended, work: Path) -> RankResult:
    output = []
    for stream in ("out", "err"):
        with contextlib.suppress(OSError):
            output += (work / f"rank{rank}.{stream}").read_text(errors="replace").rstrip("\n").splitlines()
    ranked = layout.rank(rank)
    return RankResult(rank, ranked.out, end.code, end.stopped, output, bool(ranked.graph_folders()))


def _rank_files(work: Path) -> LogsSpecs:
    """Where torchrun's agent sends each rank's stdout and stderr: ``work/rank<r>.out`` and
    ``.err``, read once the ranks ended (torch's own ``DefaultLogsSpecs`` nests them in
    folders per run and attempt)."""
    from torch.distributed.elastic.multiprocessing import LogsDest, LogsSpecs

    class RankFiles(LogsSpecs):
        @property
        def root_log_dir(self) -> str:
            return str(work)

        def reify(self, envs: dict[int, dict[str, str]]) -> LogsDest:
            errors = {r: str(work / f"rank{r}.error.json") for r in envs}
            for r, env in envs.items():
                env["TORCHELASTIC_ERROR_FILE"] = errors[r]  # where a rank would report its error
                env[process_group.ENV_FAILED_AT] = str(work / _FAILED_AT.format(rank=r))
            return LogsDest(
                stdouts={r: str(work / f"rank{r}.out") for r in envs},
                stderrs={r: str(work / f"rank{r}.err") for r in envs},
                error_files=errors,
            )

    return RankFiles()


def _launch(ranks: int, arguments: list[str], work: Path) -> dict[int, _Ended]:
    """Run ``compile ARGUMENTS`` on ``ranks`` ranks through torchrun's launcher; how each
    rank ended. torchrun stops every other rank once one failed; a rank that ended by a
    signal after another failed is one it stopped. Its agent's log lines stay out of this
    command's output, and its signal handlers are this process's again afterwards.
    Interrupted (Ctrl-C; SIGTERM, which the ranks ignore until torchrun kills them 30 s
    later): KeyboardInterrupt, no rank left running."""
    from torch.distributed.elastic.multiprocessing import SignalException
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.launcher.api import LaunchConfig, elastic_launch

    config = LaunchConfig(
        min_nodes=1,
        max_nodes=1,
        nproc_per_node=ranks,
        run_id=f"spyre-provenance-{uuid.uuid4().hex}",
        rdzv_backend="c10d",
        rdzv_endpoint="127.0.0.1:0",
        max_restarts=0,
        logs_specs=_rank_files(work),
    )
    command = ["-m", "spyre_provenance", "compile", *arguments]
    with _torchrun_quiet(), _own_signal_handlers():
        try:
            elastic_launch(config, sys.executable)(*command)
        except ChildFailedError as exc:
            failures = exc.failures
        except SignalException as exc:
            raise KeyboardInterrupt(exc.sigval.name) from None
        else:
            return {r: _Ended(0, False, 0, None) for r in range(ranks)}
    seen = [(r, failures[r].timestamp) for r in failures]
    order = {r: i for i, r in enumerate(failure_order(seen, _failed_at(work, failures)))}
    ended = {r: _Ended(0, False, len(order), None) for r in range(ranks)}
    for r, failure in failures.items():
        stopped = order[r] > 0 and failure.exitcode < 0
        ended[r] = _Ended(failure.exitcode, stopped, order[r], failure.pid)
    return ended


def failure_order(seen: list[tuple[int, int]], failed_at: Mapping[int, int]) -> list[int]:
    """The failed ranks, first to fail first. ``seen``: each rank and the second torchrun
    saw it fail, in the order it recorded them (the failures it saw first, then those of
    the ranks it stopped); ``failed_at``: the moment (ns) a rank noted it failed, for the
    ranks that did. Sorted by the second, torchrun's order stays, except among the ranks of
    one second that noted a moment: they take their places in the order of their moments.
    torchrun sees the rank that failed on its own and the peer that failed because of it in
    one look as often as not, and then records them by rank."""
    order = [r for r, _ in sorted(seen, key=lambda item: item[1])]
    second = dict(seen)
    for moment in sorted(set(second.values())):
        places = [at for at, r in enumerate(order) if second[r] == moment and r in failed_at]
        for at, r in zip(places, sorted((order[at] for at in places), key=failed_at.__getitem__), strict=True):
            order[at] = r
    return order


def _failed_at(work: Path, ranks: Iterable[int]) -> dict[int, int]:
    """The moments the failed ranks noted (``process_group.note_failure``), of those that did."""
    noted = {}
    for r in ranks:
        with contextlib.suppress(OSError, ValueError):
            noted[r] = int((work / _FAILED_AT.format(rank=r)).read_text(encoding="ascii"))
    return noted


@contextlib.contextmanager
def _torchrun_quiet() -> Iterator[None]:
    """torchrun's agent logs each step and each rank it stops on stderr; the command says
    what failed in its own one line."""
    elastic = logging.getLogger("torch.distributed.elastic")
    saved = elastic.propagate, list(elastic.handlers)
    elastic.propagate = False
    elastic.handlers = [logging.NullHandler()]
    try:
        yield
    finally:
        elastic.propagate, elastic.handlers = saved[0], saved[1]


@contextlib.contextmanager
def _own_signal_handlers() -> Iterator[None]:
    """torchrun's agent installs its handlers for these signals (and says so in the
    environment); a Python caller gets its own back."""
    import os

    saved = {s: signal.getsignal(s) for s in _TORCHRUN_SIGNALS}
    env = os.environ.get("TORCHELASTIC_SIGNALS_TO_HANDLE")
    try:
        yield
    finally:
        for s, handler in saved.items():
            with contextlib.suppress(ValueError, TypeError):  # not the main thread, or not Python's
                signal.signal(s, handler if handler is not None else signal.SIG_DFL)
        if env is None:
            os.environ.pop("TORCHELASTIC_SIGNALS_TO_HANDLE", None)
        else:
            os.environ["TORCHELASTIC_SIGNALS_TO_HANDLE"] = env
