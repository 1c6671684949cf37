"""What a compile wrote, re-read and checked: every artifact validated, the coverage of
each graph judged on the TORCH_TRACE log.

Everything here reads files (the log, the ``--out`` artifacts), not the hook's memory: the
verdict (``compile_job``) and the summary (``compile.summary``) are on what tlparse and a CI job
will actually see. Coverage comes from ``coverage.judge`` on the log, the function the hook
judged the same graph with for its diagnostics artifact; where the two disagree, that is
said and the compile is found wanting. No torch import.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import msgspec

from spyre_provenance.links import pairing
from spyre_provenance.model.records import GraphResult
from spyre_provenance.validate import coverage
from spyre_provenance.validate.paths import validate_paths


class GraphCheck(msgspec.Struct):
    compile_id: str
    coverage: coverage.GraphCoverage | None
    #: what the graph's logged diagnostics say, where it disagrees with the log's coverage
    inconsistent: list[str] = []
    #: whether torch-spyre logged its own provenance (PR #3449's sidecar) for this graph, and
    #: where the hook's OpSpec handles disagree with it (``validate.spyre_sidecar.cross_check``)
    spyre_provenance: bool = False
    spyre_disagreements: list[str] = []
    #: whether the log holds the hook's diagnostics for the graph: a graph it recorded
    tracked: bool = False

    @property
    def complete(self) -> bool:
        return self.coverage is not None and self.coverage.complete and not self.inconsistent


class OutputCheck(msgspec.Struct):
    """What validate and coverage say about a compile's outputs."""

    artifacts: int
    invalid: list[str]  # "location: first problem"
    graphs: list[GraphCheck]
    #: for each graph the hook recorded, in order, the log's graph of the same compile (None:
    #: the log holds no code for it); paired once here, read by the verdict and the summary
    paired: list[GraphCheck | None] = []

    @property
    def all_valid(self) -> bool:
        return not self.invalid

    @property
    def all_complete(self) -> bool:
        return all(g.complete for g in self.graphs)


def check_outputs(paths: Path | list[Path], log: Path | None, recorded: Sequence[GraphResult] = ()) -> OutputCheck:
    """Validate every artifact in ``paths`` (a folder, or this run's graph folders) and in
    ``log``, judge the coverage of each graph the log holds, and pair each graph the hook
    ``recorded`` with the log's.

    A compile names only its own folders and log: another run may be writing into the
    same ``--out`` at the same time, and its half-written files are not this run's verdict.
    """
    from spyre_provenance.logs.graphs import read_log_graphs
    from spyre_provenance.validate.coverage import judge_logged

    targets = [paths] if isinstance(paths, Path) else list(paths)
    targets += [log] if log is not None and log not in targets else []
    results = validate_paths(targets) if targets else []
    invalid = [f"{r.location}: {r.problems[0]}" for r in results if not r.ok]
    graphs: list[GraphCheck] = []
    if log is not None:
        for graph in read_log_graphs(log):
            if graph.output_code is None:
                continue  # a graph Inductor did not finish: no code, nothing to judge
            judged = judge_logged(graph)
            check = GraphCheck(
                graph.compile_id,
                judged,
                _disagreements(judged, graph.diagnostics),
                tracked=graph.diagnostics is not None,
            )
            if graph.spyre_provenance is not None:  # absent: nothing changes
                check.spyre_provenance = True
                check.spyre_disagreements = against_spyre_provenance(graph.opspec_handles, graph.spyre_provenance)
            graphs.append(check)
    return OutputCheck(artifacts=len(results), invalid=invalid, graphs=graphs, paired=pair_graphs(recorded, graphs))


def against_spyre_provenance(opspecs: dict | None, sidecar: dict) -> list[str]:
    """The hook's OpSpec handles against torch-spyre's own provenance: one line per
    disagreement; none when either is missing or the sidecar is not valid (validate says so)."""
    from spyre_provenance.model.names import SPYRE_SIDECAR
    from spyre_provenance.validate import schemas, spyre_sidecar

    if opspecs is None or not schemas.validate(sidecar, SPYRE_SIDECAR).ok:
        return []
    return spyre_sidecar.cross_check(opspecs, sidecar)


def _disagreements(judged: coverage.GraphCoverage, diagnostics: dict | None) -> list[str]:
    """Where the hook's judgement (its diagnostics) and the log's differ: one of the two
    saw something else than tlparse will."""
    if diagnostics is None or diagnostics.get("version") == 1:
        return []
    logged = diagnostics.get("coverage")
    mine = msgspec.to_builtins(judged.counts)
    if isinstance(logged, dict):  # an older version counted fewer things: compare what it counted
        mine = {k: v for k, v in mine.items() if k in logged}
    found = []
    if logged != mine:
        found.append(f"diagnostics counted {logged}, the log shows {mine}")
    logged_complete = bool(diagnostics.get("complete"))
    if logged_complete and not judged.complete:
        found.append("diagnostics say complete, the log's coverage is not")
    return found


def pair_graphs(graphs: Sequence[GraphResult], logged: list[GraphCheck]) -> list[GraphCheck | None]:
    """For each graph the hook recorded, the log's graph of the same compile id (the n-th
    of that id for the n-th), or None when the log has no such graph. The log's graphs
    carrying the hook's diagnostics come first within an id: a graph compiled outside
    tracking may share the id (``torch._dynamo.reset`` starts compile ids again), and is
    never taken for one the hook recorded while one of those is left."""
    order = sorted(range(len(logged)), key=lambda i: not logged[i].tracked)  # stable: log order within each
    pairs = pairing.pair_graphs(
        [(g.compile_id, i) for i, g in enumerate(graphs)],
        [(logged[i].compile_id.strip("[]"), i) for i in order],
        lambda g: g[0],
        by_position=False,
    )
    return [logged[theirs[1]] if theirs is not None else None for mine, theirs in pairs if mine is not None]
