"""Where torch-spyre's source is, extracted once, and what its absence means.

The source is, in order: the environment variable ``SPYRE_PROVENANCE_TORCH_SPYRE`` (a
checkout folder holding ``torch_spyre/``, or a ``.tar.gz`` snapshot), else the snapshot CI
has beside the repository, ``<repo>/../shared/torch-spyre/torch-spyre-*.tar.gz``. A tarball
is extracted once into ``<repo>/.pytest_cache/torch-spyre/<sha256 prefix>/`` (atomically:
a half-extracted folder is never used), so every test process of every session reads the
same tree. Without either, the tests skip with the reason; with ``CI=true`` they fail
instead (CI has the snapshot: a missing one is a broken setup, never a silent skip), as
the browser tests do with chromium.

torch-spyre pins ``torch~=2.13.0``: on another torch (``make test-torch-next``) the tests
skip with that reason, in CI too (a pin is not a broken setup).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from helpers.where import REPO

ENV = "SPYRE_PROVENANCE_TORCH_SPYRE"
CACHE = REPO / ".pytest_cache" / "torch-spyre"
SNAPSHOT_GLOB = "torch-spyre-*.tar.gz"


@dataclass(frozen=True)
class TorchSpyre:
    """An extracted torch-spyre: ``source`` holds ``torch_spyre/`` and its ``tests/``."""

    source: Path
    origin: str  # where it came from, for messages: the tarball or the checkout
    commit: str  # the short commit its name carries (``9a6b71e``), or "checkout"

    @property
    def tools(self) -> Path:
        """Where the stand-in ``dxp_standalone`` goes (``boot.install_dxp``)."""
        return self.source.parent / "tools"


def snapshots() -> list[Path]:
    return sorted((REPO.parent / "shared" / "torch-spyre").glob(SNAPSHOT_GLOB))


def find() -> tuple[TorchSpyre | None, str]:
    """(the torch-spyre to run, or None; one line saying where it is or why not)."""
    named = os.environ.get(ENV)
    if named:
        path = Path(named).expanduser()
        if path.is_dir():
            if not (path / "torch_spyre" / "__init__.py").is_file():
                return None, f"{ENV}={named} holds no torch_spyre/ package"
            return TorchSpyre(path.resolve(), str(path), "checkout"), f"torch-spyre checkout {path}"
        if path.is_file() and path.name.endswith(".tar.gz"):
            return _extracted(path), f"torch-spyre snapshot {path}"
        return None, f"{ENV}={named} is neither a torch-spyre checkout nor a .tar.gz snapshot"
    found = snapshots()
    if not found:
        return None, f"no torch-spyre: set {ENV} or put {SNAPSHOT_GLOB} in {REPO.parent / 'shared' / 'torch-spyre'}"
    return _extracted(found[-1]), f"torch-spyre snapshot {found[-1]}"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _extracted(tarball: Path) -> TorchSpyre:
    commit_match = re.search(r"torch-spyre-([0-9a-f]{7,40})\.tar\.gz$", tarball.name)
    commit = commit_match.group(1) if commit_match else "unknown"
    target = CACHE / _sha256(tarball)[:16]
    if not (target / "DONE").is_file():
        CACHE.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".extracting-", dir=CACHE))
        try:
            with tarfile.open(tarball) as archive:
                archive.extractall(staging / "src", filter="data")
            (staging / "DONE").write_text(str(tarball) + "\n")
            try:
                staging.rename(target)  # atomic; another process may have won the race
            except OSError:
                if not (target / "DONE").is_file():
                    raise
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    roots = [p for p in (target / "src").iterdir() if (p / "torch_spyre").is_dir()]
    source = roots[0] if roots else target / "src"
    return TorchSpyre(source, str(tarball), commit)


def torch_pin(source: Path) -> str | None:
    """The ``torch~=X.Y.Z`` pin of torch-spyre's pyproject.toml (its first, uncommented one)."""
    try:
        text = (source / "pyproject.toml").read_text()
    except OSError:
        return None
    match = re.search(r'^\s*"torch~=([0-9.]+)"', text, re.MULTILINE)
    return match.group(1) if match else None


def torch_mismatch(source: Path) -> str | None:
    """Why this torch cannot run torch-spyre (its ``~=`` pin), or None."""
    import torch

    pin = torch_pin(source)
    if pin is None:
        return None
    want = pin.split(".")[:2]
    have = torch.__version__.split("+")[0].split(".")[:2]
    if have != want:
        return f"torch-spyre pins torch~={pin}; this is torch {torch.__version__}"
    return None


def require() -> TorchSpyre:
    """The torch-spyre to run, or skip (fail with CI=true) saying why."""
    found, why = find()
    if found is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"the spyre_main tests must run in CI: {why}")
        pytest.skip(why)
    mismatch = torch_mismatch(found.source)
    if mismatch is not None:
        pytest.skip(mismatch)
    return found
