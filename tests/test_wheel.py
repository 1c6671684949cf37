"""An installed (non-editable) package finds its schemas: the wheel carries them."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(REPO)],
        capture_output=True, text=True, timeout=600,
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
