"""Generic fixtures shared by every test module. Keep this small: module-specific fixtures
belong in their test module."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "big: builds a ~200 MB input (seconds); deselect with -m 'not big'")


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
