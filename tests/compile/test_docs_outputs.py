"""The command outputs the docs show (``docs/outputs/*.txt``) are what the commands print now.

Each file is compared, after ``regen_outputs.normalize`` (the float error against eager,
record line numbers in torch's log, a run's process ids), with a fresh run of its command.
The compiles the suite already makes are reused: ``compile mlp`` and ``compile mlp --train``
are the session's ``compile_case`` runs (their output folder stands in for ``out/demo`` and
``out/train``), ``open`` is ``open_case``'s; the other commands run for real in the
script's scratch folder, where ``out/demo`` links to the session's compile (``run`` tracks
``your_script.py`` there, and the commands after it read its ``out/run``). When a file
differs, ``make docs-outputs`` rewrites them all (and the diff shows what changed).

The outputs are made with the goldens' torch; on another torch these tests skip, as the
golden byte comparisons do.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import re
import shutil
import sys

import pytest

from helpers.where import REPO

ROOT = REPO
SCRIPT = ROOT / "docs" / "scripts" / "regen_outputs.py"


def _load_script():
    spec = importlib.util.spec_from_file_location("regen_outputs", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("regen_outputs", module)  # dataclasses look the module up by name
    spec.loader.exec_module(module)
    return module


regen = _load_script()
COMMANDS = {c.name: c for c in regen.COMMANDS}

#: outputs whose command is exactly a session compile: name -> (compile_case args, the --out it shows)
SESSION_COMPILES = {"compile": (("mlp",), "out/demo"), "compile-train": (("mlp", "--train"), "out/train")}
#: commands that run here and read out/demo, the session's compile_case("mlp"), or
#: out/train, its compile_case("mlp", "--train")
READ_DEMO = ("validate", "diff-same", "lookup", "lookup-unknown", "lookup-event")
READ_TRAIN = ("lookup-key",)
#: commands that read both
READ_BOTH = ("compare",)
#: commands that read out/profiled, which compile-profile writes in the scratch folder
READ_PROFILED = ("annotate", "annotate-summary", "view")
#: commands that read what `run` wrote in the scratch folder: out/run, and out/ref too
READ_RUN = {"open-run": ("run",), "lookup-run": ("run",), "compare-run": ("run", "run-reference")}


@pytest.fixture(autouse=True)
def _goldens_torch():
    torch = importlib.metadata.version("torch")
    if not torch.startswith(regen.TORCH):
        pytest.skip(f"the docs' outputs are made with torch {regen.TORCH}, this is {torch}")


def committed(name: str) -> str:
    return (regen.OUTPUTS / f"{name}.txt").read_text()


def assert_same(name: str, fresh: str) -> None:
    assert regen.normalize(fresh) == regen.normalize(committed(name)), (
        f"docs/outputs/{name}.txt differs from a fresh run of `{COMMANDS[name].line}`: run `make docs-outputs`"
    )


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """The script's scratch folder (golden/ linked, bad/ copied)."""
    folder = regen.workdir()
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_every_command_has_its_output_and_every_output_its_command():
    files = {p.stem for p in regen.OUTPUTS.glob("*.txt")}
    assert files == set(COMMANDS)
    for name, command in COMMANDS.items():
        # a {event:...} placeholder stands for the event name filled in when the command ran
        shown = re.escape(regen._PLACEHOLDER.sub("\0", f"$ {command.line}")).replace("\0", r"spyre_kernel_v1_\w+")
        assert re.fullmatch(shown, committed(name).splitlines()[0]), name


@pytest.mark.parametrize(
    "name",
    [
        n
        for n, c in COMMANDS.items()
        if not c.compiles and n not in (*READ_DEMO, *READ_TRAIN, *READ_BOTH, *READ_PROFILED, *READ_RUN, "open")
    ],
)
def test_output_without_a_compile(name, work):
    assert_same(name, regen.run_command(COMMANDS[name], work))


@pytest.mark.compile
@pytest.mark.parametrize("name", list(SESSION_COMPILES))
def test_compile_output_is_the_session_compile(name, compile_case):
    args, shown = SESSION_COMPILES[name]
    assert COMMANDS[name].line == f"spyre-provenance compile {' '.join(args)} --out {shown}"
    case = compile_case(*args)
    printed = (case.stdout + case.stderr).replace(str(case.out), shown)
    assert_same(name, regen.transcript(COMMANDS[name].line, printed, case.returncode))


def _link(work, shown: str, case) -> None:
    """``work/<shown>`` is the session compile ``case``'s output folder."""
    folder = work / shown
    if not folder.exists():
        folder.parent.mkdir(exist_ok=True)
        folder.symlink_to(case.out, target_is_directory=True)


@pytest.mark.compile
@pytest.mark.parametrize("name", READ_DEMO)
def test_output_on_the_demo_compile(name, work, compile_case):
    _link(work, "out/demo", compile_case("mlp"))
    assert_same(name, regen.run_command(COMMANDS[name], work))


@pytest.mark.compile
@pytest.mark.parametrize("name", READ_TRAIN)
def test_output_on_the_training_compile(name, work, compile_case):
    _link(work, "out/train", compile_case("mlp", "--train"))
    assert_same(name, regen.run_command(COMMANDS[name], work))


@pytest.mark.compile
@pytest.mark.parametrize("name", READ_BOTH)
def test_output_on_the_demo_and_training_compiles(name, work, compile_case):
    _link(work, "out/demo", compile_case("mlp"))
    _link(work, "out/train", compile_case("mlp", "--train"))
    assert_same(name, regen.run_command(COMMANDS[name], work))


@pytest.mark.compile
def test_open_output_is_the_session_open(open_case):
    opened = open_case("mlp", "--train")
    assert COMMANDS["open"].line == "spyre-provenance open out/train --no-browser"
    # without --out, open writes a log's pages where compile did: OUT/tlparse/<label>/
    printed = (opened.stdout + opened.stderr).replace(str(opened.out), "out/train/tlparse/mlp")
    printed = printed.replace(str(opened.case.out), "out/train")  # the viewer's page is in the --out folder
    assert_same("open", regen.transcript(COMMANDS["open"].line, printed, opened.returncode))


@pytest.fixture(scope="module")
def compiled_here(work):
    """The commands that compile in the scratch folder, each run once: name -> transcript."""
    done: dict[str, str] = {}

    def run(name: str) -> str:
        if name not in done:
            done[name] = regen.run_command(COMMANDS[name], work)
        return done[name]

    return run


@pytest.mark.compile
@pytest.mark.parametrize("name", [n for n, c in COMMANDS.items() if c.compiles and n not in SESSION_COMPILES])
def test_output_of_a_command_that_compiles_itself(name, compiled_here):
    assert_same(name, compiled_here(name))


@pytest.mark.compile
@pytest.mark.parametrize("name", READ_PROFILED)
def test_output_on_the_profiled_compile(name, work, compiled_here):
    compiled_here("compile-profile")
    assert_same(name, regen.run_command(COMMANDS[name], work))


@pytest.mark.compile
@pytest.mark.parametrize("name", list(READ_RUN))
def test_output_on_what_run_wrote(name, work, compiled_here):
    for run in READ_RUN[name]:
        compiled_here(run)
    assert_same(name, regen.run_command(COMMANDS[name], work))
