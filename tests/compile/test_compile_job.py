"""``compile.job``: the one compile path with its verdict, and the one default
backend. The command-line side of it is tests/compile/test_compile_cli.py and
tests/hardening/test_compile_refusals.py (what ``compile`` prints and exits with)."""

from __future__ import annotations

import inspect
import json

import pytest

import spyre_provenance
from spyre_provenance.backends import DEFAULT_BACKEND
from spyre_provenance.base.errors import FOUND_WANTING, OK, UNUSABLE, UnusableInput
from spyre_provenance.compile import job as compile_job
from spyre_provenance.compile.tracked import CompileReport


def test_every_entry_point_defaults_to_the_same_backend() -> None:
    from spyre_provenance.capture import tracking
    from spyre_provenance.cli import build_parser
    from spyre_provenance.plugin.pytest_fixture import ProvenanceRegression

    defaults = {
        "enable": inspect.signature(tracking.enable).parameters["backend"].default,
        "tracking": inspect.signature(tracking.tracking).parameters["backend"].default,
        "CompileRequest": compile_job.CompileRequest(model="mlp").backend,
        "provenance_regression.check": inspect.signature(ProvenanceRegression.check).parameters["backend"].default,
        "compile": build_parser().parse_args(["compile", "mlp"]).backend,
        "audit": build_parser().parse_args(["audit", "mlp"]).backend,
    }
    assert defaults == dict.fromkeys(defaults, DEFAULT_BACKEND)
    # below the request, the backend is the compile's one instance, built from the request
    from spyre_provenance.compile import tracked

    assert inspect.signature(tracked.compile_model).parameters["backend"].default is inspect.Parameter.empty


def _report(**fields) -> CompileReport:
    base = {
        "model": "mlp",
        "backend": "reference",
        "dtype": "float32",
        "train": False,
        "graphs": [],
        "matches_eager": True,
        "max_abs_error": 0.0,
    }
    return CompileReport(**{**base, **fields})


def test_a_compile_that_recorded_nothing_is_found_wanting_never_ok() -> None:
    verdict = compile_job.judge(_report())
    assert verdict.state == FOUND_WANTING and verdict.exit_code == 1
    assert verdict.reasons == ("no graph recorded: the hook saw no kernel code generation",)


def test_a_compiled_run_that_failed_is_unusable_whatever_else_was_found() -> None:
    verdict = compile_job.judge(_report(run_error="RuntimeError: peer gone", matches_eager=False))
    assert verdict.state == UNUSABLE and verdict.exit_code == 2
    assert verdict.reasons[0] == "the compiled code failed as it ran (RuntimeError: peer gone)"


def test_a_multi_rank_run_is_the_command_lines_and_a_model_handed_in_is_not_cast() -> None:
    with pytest.raises(UnusableInput, match="by its name into an out folder"):
        compile_job.compile_request(compile_job.CompileRequest(model="tensor_parallel", ranks=2))
    with pytest.raises(UnusableInput, match="compiled as built"):
        compile_job.compile_request(compile_job.CompileRequest(model="m", instance=(object(), ()), dtype="float16"))


@pytest.mark.compile
def test_the_python_api_compiles_as_the_command_line_judges(tmp_path) -> None:
    """The API's ``compile_request``, nothing written: the built-in MLP on the reference
    backend is ok, its graphs recorded and its output matching eager."""
    outcome = spyre_provenance.compile_request(spyre_provenance.CompileRequest(model="mlp", backend="reference"))
    assert outcome.verdict.state == OK and outcome.exit_code == 0, outcome.verdict.reasons
    assert outcome.report.graphs and outcome.report.matches_eager
    assert outcome.checked is None and outcome.pages == [] and outcome.out is None
    assert outcome.backend_choice == "backend reference (asked for)"


@pytest.mark.compile
def test_the_python_api_traces_a_distributed_model_on_several_ranks(tmp_path) -> None:
    """``compile_request`` with ``ranks``: one process per rank in a gloo group, each rank's
    graph folders and log in ``out/rank<r>/``, the parent's outcome their verdict."""
    from spyre_provenance.compile.ranks import RanksOutcome
    from spyre_provenance.model.layout import Layout

    request = compile_job.CompileRequest(
        model="tensor_parallel", backend="reference", out=tmp_path / "tp", ranks=2, tlparse=False
    )
    outcome = compile_job.compile_request(request)
    assert isinstance(outcome, RanksOutcome)
    assert outcome.exit_code == 0 and outcome.verdict.state == OK, outcome.problems
    layout = Layout(tmp_path / "tp", request.label)
    assert [rank for rank, _ in layout.ranks()] == [0, 1]
    for _, ranked in layout.ranks():
        assert ranked.trace_log.is_file() and ranked.graph_folders()
    assert any(line.startswith("[rank 1] compiled tensor_parallel") for line in "\n".join(outcome.lines).splitlines())


#: Run in a fresh process: a compile into an out folder points TORCH_TRACE before torch loads.
_ONE_BACKEND = """
import json, sys
from pathlib import Path
from spyre_provenance import backends
from spyre_provenance.compile import job
from spyre_provenance.model.layout import Layout

built = []
make = backends._make
def counted(*args, **kwargs):
    built.append(make(*args, **kwargs))
    return built[-1]
backends._make = counted

import torch
from torch._inductor import config
from spyre_provenance.backends.reference import backend as reference

writes = []  # each bundle write: (in the untracked fallback_random compile, with a bundle folder)
write = reference.ReferenceBackend._write_bundles
def spied(self, kernel_name, specs):
    writes.append((config.fallback_random, self.bundle_dir is not None or self.kernel_cache))
    return write(self, kernel_name, specs)
reference.ReferenceBackend._write_bundles = spied

class Noisy(torch.nn.Module):  # a linear layer, then dropout that draws in eval mode too
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(8, 8)
    def forward(self, x):
        return torch.nn.functional.dropout(self.linear(x), 0.5, training=True).relu()

torch.manual_seed(0)
out = Path(sys.argv[1])
request = job.CompileRequest(
    model="drop", instance=(Noisy(), (torch.randn(4, 8),)), backend="reference", out=out, tlparse=False
)
outcome = job.compile_request(request)
print(json.dumps({
    "reasons": list(outcome.verdict.reasons),
    "compared": outcome.report.compared,
    "built": [str(b.bundle_dir) for b in built],
    "bundles": sorted(p.name for _, p in Layout(out, "drop").bundle_folders()),
    "writes": writes,
}))
"""


@pytest.mark.compile
def test_one_compile_builds_one_backend_and_compares_on_it_writing_nothing_more(tmp_path, fresh_process) -> None:
    """A model that draws random numbers is compared with eager on a second, untracked
    compile: on the compile's own backend instance (built once, with its bundle folder), and
    that compile writes no bundle."""
    from spyre_provenance.compile.tracked import COMPARED_FALLBACK_RANDOM
    from spyre_provenance.model.layout import Layout

    # no cached graph: both compiles generate code
    done = fresh_process.run(
        tmp_path / "out", driver=_ONE_BACKEND, env={"TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "cache")}
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["reasons"] == [] and found["compared"] == COMPARED_FALLBACK_RANDOM
    assert found["built"] == [str(Layout(tmp_path / "out", "drop").bundle_root)]
    # both compiles made bundles on it; the untracked one's went nowhere
    assert found["bundles"] and [True, False] in found["writes"] and [False, True] in found["writes"]
    assert [True, True] not in found["writes"]


#: Run in a fresh process: two compiles into two out folders, and torch's own compile between.
_LOG_ENDS = """
import json, logging, sys
from pathlib import Path
from spyre_provenance.compile import job
from spyre_provenance.logs.graphs import read_log_graphs
from spyre_provenance.model.layout import Layout

first, second = Path(sys.argv[1]), Path(sys.argv[2])
job.compile_request(job.CompileRequest(model="mlp", backend="reference", out=first, tlparse=False))
log = Layout(first, "mlp").trace_log
claimed = log.read_bytes()

import torch
torch.compile(lambda x: torch.sin(x) * 2)(torch.randn(4))  # not ours: after the compile ended
for handler in logging.getLogger("torch.__trace").handlers:
    handler.flush()
after_other = log.read_bytes()

job.compile_request(job.CompileRequest(model="mlp", backend="reference", out=second, tlparse=False))
print(json.dumps({
    "unchanged": after_other == claimed and log.read_bytes() == claimed,
    "first": len(read_log_graphs(log)),
    "second": len(read_log_graphs(Layout(second, "mlp").trace_log)),
    "strays": sorted(p.name for p in Layout(first, "mlp").trace_dir.iterdir()),
}))
"""


@pytest.mark.compile
def test_a_finished_compile_s_log_holds_that_compile_whatever_the_process_compiles_next(
    tmp_path, fresh_process
) -> None:
    """After ``compile_request`` returns, its log is whole: torch's own compiles later in the
    process are not appended to it (they were: torch kept writing to the renamed file), and a
    second request logs into its own folder."""
    done = fresh_process.run(
        tmp_path / "first",
        tmp_path / "second",
        driver=_LOG_ENDS,
        env={"TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "cache")},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found == {"unchanged": True, "first": 1, "second": 1, "strays": ["mlp.log", "mlp.model"]}
