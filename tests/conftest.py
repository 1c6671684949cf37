"""Generic fixtures shared by every test module. Keep this small: module-specific fixtures
belong in their test module."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from helpers.fresh_process import FRESH, FreshProcess  # tests/ is on sys.path (imports no torch)

# Inductor's FX-graph and AOTAutograd caches off for the suite's compiles, as a user who sets
# these variables has them (tracking keeps whatever the user chose): each test's compile is
# its own, whatever the suite or an earlier run compiled, and a test that injects a fault
# into the hook leaves no entry a later test would replay. Kernel caches stay shared. The
# tests of warm starts set both to 1 for their own processes (tests/compile/test_cache.py,
# tests/attach/test_warm_runs.py, test_cached_artifacts.py, ...). Set here, before any
# torch import, and inherited by every process the suite starts.
for _variable in ("TORCHINDUCTOR_FX_GRAPH_CACHE", "TORCHINDUCTOR_AUTOGRAD_CACHE"):
    os.environ.setdefault(_variable, "0")

DATA = Path(__file__).parent / "data"
#: programs the tests run as a user would, a test suite of a user's among them: not ours to collect
collect_ignore = ["attach/programs"]
ATTACH = Path(__file__).resolve().parent / "attach"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test of ``tests/attach`` is a ``programs`` test: whole programs run as a user
    runs them, each in fresh interpreters (torchrun jobs, vLLM's loader, a peer's test
    suite). Minutes of the suite: ``make test-programs`` runs them, ``make test`` leaves them
    out, ``.ci/run`` runs both. (A marker set here: a conftest of that folder would shadow
    this one's ``from conftest import``.)"""
    for item in items:
        if ATTACH in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.programs)


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """``tests/data``: small hand-made and captured inputs."""
    return DATA


@pytest.fixture
def run_cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., tuple[int, str, str]]:
    """Run ``spyre-provenance ARGS...`` in-process: ``(exit code, stdout, stderr)``."""
    from spyre_provenance import cli

    def run(*args: str) -> tuple[int, str, str]:
        capsys.readouterr()  # drop anything printed before
        try:
            code = cli.main([str(a) for a in args])
        except SystemExit as exc:  # argparse: usage errors and --help
            code = int(exc.code or 0)
        out, err = capsys.readouterr()
        return code, out, err

    return run


class CompiledCase:
    """One ``spyre-provenance compile`` run: its output folder and what it printed."""

    def __init__(self, out: Path, returncode: int, stdout: str, stderr: str) -> None:
        self.out = out
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr

    @property
    def log(self) -> Path:
        (log,) = (self.out / "trace").glob("*.log")
        return log

    def graph_dirs(self) -> list[Path]:
        return sorted(self.out.glob("graph_*"))


class CompileServer:
    """``tests/helpers/compile_server.py`` in a subprocess: compiles run one after another in one
    interpreter (see its docstring for why). Restarted when it dies; a compile taking
    longer than ``timeout`` seconds kills it and fails that compile."""

    def __init__(self, timeout: float = 900, script: Path | None = None, env: dict[str, str] | None = None) -> None:
        self.timeout = timeout
        self.script = script or Path(__file__).parent / "helpers" / "compile_server.py"
        self.env = env  # the worker's environment (None: this process's)
        self.proc = None
        self.replies = None

    def _start(self) -> None:
        import os
        import subprocess
        import sys

        read_fd, write_fd = os.pipe()
        self.proc = subprocess.Popen(
            [sys.executable, str(self.script), str(write_fd)],
            stdin=subprocess.PIPE,
            text=True,
            pass_fds=(write_fd,),
            env=self.env,
        )
        os.close(write_fd)
        self.replies = os.fdopen(read_fd, "r")

    def run(self, args: list[str], stdout: Path, stderr: Path, env: dict[str, str] | None = None) -> int:
        import json
        import select

        if self.proc is None or self.proc.poll() is not None:
            self._start()
        request = {"args": args, "stdout": str(stdout), "stderr": str(stderr), "env": env or {}}
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.replies], [], [], self.timeout)
        line = self.replies.readline() if ready else ""
        if not line:  # died or hung: the next compile gets a fresh worker
            self.close()
            return -9
        return int(json.loads(line)["returncode"])

    def close(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.replies.close()
        self.proc = None


@pytest.fixture(scope="session")
def fresh_process() -> FreshProcess:
    """Our command in a new interpreter (``tests/helpers/fresh_process.py``): for a cold process, an
    environment of its own, a signal or two writers at once; everything else shares the
    session's compiles (``compile_case``)."""
    return FRESH


@pytest.fixture(scope="session")
def compile_server() -> CompileServer:
    server = CompileServer()
    yield server
    server.close()


@pytest.fixture(scope="session")
def compile_case(
    tmp_path_factory: pytest.TempPathFactory, compile_server: CompileServer
) -> Callable[..., CompiledCase]:
    """``compile_case("mlp", "--backend", "inductor")``: the real command, run once per
    distinct argument list per session in the session's compile worker (a compile takes
    7-20 s in a fresh process here), so every test module that needs the same compile
    shares it. Read-only for the callers."""
    done: dict[tuple[str, ...], CompiledCase] = {}

    def run(*args: str) -> CompiledCase:
        if args not in done:
            out = tmp_path_factory.mktemp("compiled")
            stdout, stderr = out.parent / f"{out.name}.stdout", out.parent / f"{out.name}.stderr"
            code = compile_server.run(["compile", *args, "--out", str(out)], stdout, stderr)
            done[args] = CompiledCase(out, code, stdout.read_text(errors="replace"), stderr.read_text(errors="replace"))
        return done[args]

    return run


class OpenedCase:
    """``spyre-provenance open --no-browser`` on a compiled case: the pages it printed."""

    def __init__(self, case: CompiledCase, out: Path, done: subprocess.CompletedProcess[str]) -> None:
        self.case = case
        self.out = out
        self.returncode = done.returncode
        self.stdout = done.stdout
        self.stderr = done.stderr
        # one line per compile folder and graph: "LABEL  PATH" (+ "  (note)" when unlinked),
        # then the viewer's page: "viewer  PATH"
        self.pages: list[tuple[str, Path]] = []
        self.viewer: Path | None = None
        for line in done.stdout.splitlines():
            label, path = line.split("  ", 1)
            if label.strip() == "viewer":
                self.viewer = Path(path.strip())
                continue
            self.pages.append((label, Path(path.strip().split("  ")[0])))


@pytest.fixture(scope="session")
def open_case(compile_case, tmp_path_factory: pytest.TempPathFactory) -> Callable[..., OpenedCase]:
    """``open_case("mlp", "--train")``: the compile of ``compile_case`` with the same
    arguments, then ``spyre-provenance open`` on its folder; once per session."""
    done: dict[tuple[str, ...], OpenedCase] = {}

    def run(*args: str) -> OpenedCase:
        if args not in done:
            case = compile_case(*args)
            out = tmp_path_factory.mktemp("opened") / "tlparse"
            completed = FRESH.run("open", case.out, "--out", out, "--no-browser", timeout=300)
            done[args] = OpenedCase(case, out, completed)
        return done[args]

    return run


@pytest.fixture(scope="session")
def golden_compile(compile_case: Callable[..., CompiledCase]) -> Callable[[str], CompiledCase]:
    """``golden_compile("mlp_fp16")``: ``compile_case`` for a golden case
    (``spyre_provenance.golden.CASES``), in the argument form the other test modules use
    (``--backend reference`` is what ``auto`` picks without torch-spyre), so the golden
    tests share their compiles instead of adding their own."""
    from spyre_provenance import golden
    from spyre_provenance.backends import spyre as spyre_backend

    def run(name: str) -> CompiledCase:
        if golden.CASES[name].needs_torch_spyre:  # compiled on torch-spyre main: tests/spyre_main
            pytest.skip(f"{name} is a torch-spyre main case (tests/spyre_main/test_spyre_golden.py)")
        args = golden.CASES[name].compile_args()
        if args[1:3] == ["--backend", "reference"] and not spyre_backend.available():
            del args[1:3]
        return compile_case(*args)

    return run


# --- fuzzing (issue 8): the `fuzz` marker's example count ---------------------------------------

FUZZ_EXAMPLES_ENV = "SPYRE_PROVENANCE_FUZZ_EXAMPLES"
FUZZ_EXAMPLES_DEFAULT = 25  # what `make test` runs: seconds, not minutes


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--fuzz-examples",
        type=int,
        default=None,
        metavar="N",
        help=f"hypothesis examples per `fuzz` test (default: ${FUZZ_EXAMPLES_ENV}, else {FUZZ_EXAMPLES_DEFAULT}); "
        "a long run: pytest -m fuzz --fuzz-examples 5000",
    )


def pytest_configure(config: pytest.Config) -> None:
    """The marker ``big``, and the hypothesis profile ``spyre-fuzz`` that `fuzz` tests take
    their settings from (never loaded globally: other hypothesis tests keep theirs)."""
    import os

    config.addinivalue_line("markers", "big: builds a ~200 MB input (seconds); deselect with -m 'not big'")

    from hypothesis import HealthCheck, settings

    examples = config.getoption("--fuzz-examples", default=None)
    if examples is None:
        examples = int(os.environ.get(FUZZ_EXAMPLES_ENV) or FUZZ_EXAMPLES_DEFAULT)
    settings.register_profile(
        "spyre-fuzz",
        max_examples=max(1, examples),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
        database=None,
    )
