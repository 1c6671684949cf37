"""An installed (non-editable) package finds its schemas: the wheel carries them. And a plain
``pip install`` of it, torch absent, validates and diffs (the pre-commit hook's case), while
the commands that compile say in one line which extra to install."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

from helpers.where import REPO  # tests/ is on sys.path


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(REPO)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (built,) = out.glob("spyre_provenance-*.whl")
    return built


def test_wheel_holds_every_schema(wheel: Path) -> None:
    on_disk = sorted(p.relative_to(REPO).as_posix() for p in (REPO / "schemas").rglob("*.schema.json"))
    assert on_disk
    names = set(zipfile.ZipFile(wheel).namelist())
    assert [p for p in on_disk if f"spyre_provenance/{p}" not in names] == []


def test_installed_package_validates_with_its_own_schemas(wheel: Path, tmp_path: Path) -> None:
    target = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(target)  # a wheel is installed by unpacking it
    script = (
        "from spyre_provenance.validate import schemas; import pathlib, sys; "
        "d = pathlib.Path(str(schemas.schema_dir())); "
        "assert d.is_relative_to(sys.argv[1]), d; "
        "r = schemas.validate({'version': 2.0}); assert r.ok and r.version == '2.0', r; print(d)"
    )
    env = {**os.environ, "PYTHONPATH": str(target)}
    done = subprocess.run(
        [sys.executable, "-c", script, str(target)], capture_output=True, text=True, cwd=tmp_path, env=env
    )
    assert done.returncode == 0, done.stderr[-2000:]


def test_wheel_holds_the_package_and_nothing_else(wheel: Path) -> None:
    """Every module of src/spyre_provenance and no other code: the bench tooling (bench/ in
    the checkout) and the tests stay out."""
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names}
    # and the start-up hook's .pth file, which site-packages must hold at its top (issue 45), with
    # the module its line imports beside it, outside the package (issue 55)
    hook = {"spyre_provenance_startup.pth", "spyre_provenance_startup.py"}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"spyre_provenance", *hook}
    source = REPO / "src"
    on_disk = {p.relative_to(source).as_posix() for p in (source / "spyre_provenance").rglob("*.py")}
    on_disk.add("spyre_provenance_startup.py")
    assert {n for n in names if n.endswith(".py")} == on_disk
    assert not [n for n in names if "bench" in n.split("/")[:-1]]


def test_the_wheels_startup_hook_reads_one_variable_and_starts_the_plugin(wheel: Path) -> None:
    """The ``.pth`` line site runs at every start-up: unset, only the variable is read."""
    line = zipfile.ZipFile(wheel).read("spyre_provenance_startup.pth").decode()
    assert line.startswith("import os; ") and line.count("\n") <= 1
    assert 'os.environ.get("SPYRE_PROVENANCE_OUT") and ' in line
    # the module beside the package, never the package: pytest would find it imported (issue 55)
    assert '__import__("spyre_provenance_startup").start()' in line and "spyre_provenance." not in line


def test_every_module_of_the_wheel_imports_from_it(wheel: Path, tmp_path: Path) -> None:
    """Unpacked alone (no checkout on the path), each module of the wheel imports, and from
    the wheel; its entry points name modules it holds."""
    target = tmp_path / "site"
    archive = zipfile.ZipFile(wheel)
    archive.extractall(target)
    modules = sorted(
        n.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
        for n in archive.namelist()
        if n.endswith(".py") and not n.endswith("__main__.py")
    )
    script = (
        "import importlib, sys\n"
        "for name in sys.argv[2:]:\n"
        "    module = importlib.import_module(name)\n"
        "    assert module.__file__.startswith(sys.argv[1]), (name, module.__file__)\n"
        "print(len(sys.argv) - 2)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(target)}
    done = subprocess.run(
        [sys.executable, "-c", script, str(target), *modules],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert int(done.stdout) == len(modules) > 50
    (entry_points,) = target.glob("*.dist-info/entry_points.txt")
    named = re.findall(r"= ([\w.]+)(?::\w+)?$", entry_points.read_text(), re.MULTILINE)
    assert "spyre_provenance.plugin.pytest_fixture" in named and "spyre_provenance.cli" in named
    assert [n for n in named if n not in modules] == []


@pytest.fixture(scope="module")
def bare_venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv holding the wheel and only its own dependencies (from the package index):
    what ``pip install spyre-provenance`` and the pre-commit hook's environment get."""
    venv = tmp_path_factory.mktemp("bare") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True, timeout=300)
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(wheel)],
        capture_output=True,
        text=True,
        timeout=600,
        env=_clean_env(),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return venv


def _clean_env() -> dict[str, str]:
    """This environment without what would let the venv see the test run's own packages or
    this checkout's source, nor the test run's own commands (an activated venv puts its
    ``tlparse`` on PATH, which the bare venv must not find)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    own = Path(sys.executable).parent.resolve()
    path = [d for d in env.get("PATH", "").split(os.pathsep) if d and Path(d).resolve() != own]
    env["PATH"] = os.pathsep.join(path)
    return env


def _run(venv: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(venv / "bin" / args[0]), *args[1:]], capture_output=True, text=True, timeout=120, cwd=cwd, env=_clean_env()
    )


def test_a_plain_install_brings_no_torch(bare_venv: Path, tmp_path: Path) -> None:
    listed = _run(bare_venv, "python", "-m", "pip", "list", "--format=freeze", cwd=tmp_path).stdout.lower()
    installed = {line.split("==")[0] for line in listed.split()}
    assert {"spyre-provenance", "msgspec", "jsonschema"} <= installed
    assert not installed & {"torch", "numpy", "pytest", "tlparse"}, installed


def test_validate_and_diff_run_without_torch(bare_venv: Path, tmp_path: Path) -> None:
    done = _run(bare_venv, "spyre-provenance", "validate", str(REPO / "golden"), cwd=tmp_path)
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    lines = done.stdout.splitlines()
    results = [line for line in lines if not line.startswith("rank ")]  # golden/tensor_parallel: a 2-rank run
    assert len(results) >= 10 and all(line.startswith("OK ") for line in results), done.stdout
    ranks = [line for line in lines if line.startswith("rank ")]
    assert [re.sub(r"\d+ artifact", "N artifact", line) for line in ranks] == [
        "rank 0: N artifact(s), all valid",
        "rank 1: N artifact(s), all valid",
    ], ranks
    # the installed package, not this checkout: its schemas are the wheel's copy
    where = _run(bare_venv, "python", "-c", "import spyre_provenance; print(spyre_provenance.__file__)", cwd=tmp_path)
    assert Path(where.stdout.strip()).is_relative_to(bare_venv), where.stdout
    mapping = "graph_00_0-0_inference/inductor_provenance_tracking_node_mappings.json"
    done = _run(
        bare_venv,
        "spyre-provenance",
        "diff",
        str(REPO / "golden" / "mlp" / mapping),
        str(REPO / "golden" / "residual" / mapping),
        cwd=tmp_path,
    )
    assert done.returncode == 1 and done.stderr == "" and done.stdout.strip(), (done.returncode, done.stderr)


def test_view_runs_without_torch_from_the_wheels_own_page_assets(bare_venv: Path, tmp_path: Path) -> None:
    page = tmp_path / "page.html"
    done = _run(
        bare_venv, "spyre-provenance", "view", str(REPO / "golden" / "mlp_train"), "-o", str(page), cwd=tmp_path
    )
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    html = page.read_text()
    assert '<script type="application/json" id="data">' in html and "function relatives(" in html


def test_the_pre_commit_hook_entry_runs_without_torch(bare_venv: Path, tmp_path: Path) -> None:
    [hook] = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    files = sorted(
        str(p.relative_to(REPO))
        for p in (REPO / "golden").rglob("*.json")
        if re.search(hook["files"], str(p.relative_to(REPO)))
    )
    assert len(files) >= 10
    # pre-commit runs the entry in the hook's own environment, file names appended, from the repository root
    done = _run(bare_venv, *hook["entry"].split(), *files, cwd=REPO)
    assert (done.returncode, done.stderr) == (0, ""), done.stdout[-2000:] + done.stderr
    lines = done.stdout.splitlines()
    assert len([line for line in lines if line.startswith("OK ")]) == len(files)
    assert all(line.startswith(("OK ", "rank ")) for line in lines), done.stdout  # + one verdict per rank


@pytest.mark.parametrize("command", [["compile", "mlp"], ["golden", "check"]])
def test_commands_that_compile_name_the_extra(bare_venv: Path, tmp_path: Path, command: list[str]) -> None:
    done = _run(bare_venv, "spyre-provenance", *command, cwd=tmp_path)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        f"spyre-provenance {command[0]}: error: needs torch, which is not installed: pip install 'spyre-provenance[compile]'\n"
    )
    assert not (tmp_path / "out").exists()  # refused before anything was written


def test_enable_without_torch_names_the_extra(bare_venv: Path, tmp_path: Path) -> None:
    """The API, not only the command line: ``enable()`` and ``tracking()`` refuse in one line
    (an ImportError, so ``except ImportError`` works) instead of a ModuleNotFoundError from
    inside the hook."""
    script = (
        "import spyre_provenance\n"
        "for start in (spyre_provenance.enable, lambda: spyre_provenance.tracking().__enter__()):\n"
        "    try:\n"
        "        start()\n"
        "    except ImportError as exc:\n"
        "        print(type(exc).__name__, exc, sep=': ')\n"
    )
    done = _run(bare_venv, "python", "-c", script, cwd=tmp_path)
    line = (
        "TorchNotInstalled: torch: not installed; provenance tracking needs it: pip install 'spyre-provenance[compile]'"
    )
    assert (done.returncode, done.stderr, done.stdout.splitlines()) == (0, "", [line, line]), done.stderr[-2000:]


def test_open_needs_tlparse_not_torch(bare_venv: Path, tmp_path: Path) -> None:
    done = _run(
        bare_venv,
        "spyre-provenance",
        "open",
        str(REPO / "tests" / "data" / "logs" / "seed_mlp.log"),
        "--no-browser",
        "--out",
        str(tmp_path / "pages"),
        cwd=tmp_path,
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert (
        done.stderr
        == "spyre-provenance open: error: tlparse: not installed; install it with: pip install 'spyre-provenance[tlparse]'\n"
    )


def test_a_command_that_reaches_torch_anyway_gets_the_same_line(run_cli, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the up-front check (torch found, but broken, or imported by a path not listed):
    still one line and exit 2, never a traceback."""
    from spyre_provenance.cli import diff_command as diff

    def run(args):
        raise ModuleNotFoundError("No module named 'torch._inductor'", name="torch._inductor")

    monkeypatch.setattr(diff, "run", run)
    assert run_cli("diff", "a", "b") == (
        2,
        "",
        "spyre-provenance diff: error: needs torch, which is not installed: pip install 'spyre-provenance[compile]'\n",
    )
