"""Files are written with the user's umask (issue 45 point 8): every file a compile writes
(artifacts, bundles, torch's log, the audit, the profile, tlparse's pages, ``view.html``) gets
the mode a plain ``open(path, "w")`` gives, 0o666 less the umask, and every folder 0o777 less
the umask, as any tool's output; atomic writes went through ``tempfile`` and left them 0600.

One real compile per umask, each in a fresh process whose umask is set first (the umask is
the process's).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from helpers.fresh_process import FRESH  # tests/ is on sys.path
from spyre_provenance.base import files

#: ``spyre-provenance ARGS`` under the umask in ``SPYRE_TEST_UMASK`` (octal)
UNDER_UMASK = (
    "import os, sys; os.umask(int(os.environ['SPYRE_TEST_UMASK'], 8)); "
    "from spyre_provenance.cli import main; sys.exit(main(sys.argv[1:]))"
)


def _modes(out: Path) -> dict[str, int]:
    return {
        str(p.relative_to(out)) + ("/" if p.is_dir() else ""): stat.S_IMODE(p.lstat().st_mode)
        for p in sorted(out.rglob("*"))
        if not p.is_symlink()
    }


@pytest.fixture(scope="module", params=["022", "077"])
def written(request, tmp_path_factory) -> tuple[int, Path]:
    out = tmp_path_factory.mktemp(f"umask{request.param}") / "out"
    done = FRESH.run(
        "compile",
        "mlp",
        "--out",
        out,
        "--audit",
        "--profile",
        env={"SPYRE_TEST_UMASK": request.param},
        driver=UNDER_UMASK,
    )
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    return int(request.param, 8), out


@pytest.mark.compile
def test_every_file_and_folder_a_compile_writes_has_the_umasks_mode(written):
    umask, out = written
    modes = _modes(out)
    # what a compile writes, each kind at least once
    names = "\n".join(modes)
    for kind in ("trace/mlp.log", "view.html", "provenance_audit.json", "profile/", "tlparse/", "sdsc/", "graph_mlp_"):
        assert kind in names, f"{kind} not written: {names}"
    wrong = {
        name: oct(mode) for name, mode in modes.items() if mode != (0o777 if name.endswith("/") else 0o666) & ~umask
    }
    assert not wrong, f"under umask {umask:03o}: {wrong}"


def test_plain_mode_is_opens(tmp_path):
    """``files.plain_mode`` is what ``open`` and ``mkdir`` give under this process's umask,
    and an atomic write gives it too."""
    plain = tmp_path / "plain"
    plain.write_text("x")
    folder = tmp_path / "folder"
    folder.mkdir()
    atomic = files.atomic_write_text(tmp_path / "atomic", "x")
    assert stat.S_IMODE(atomic.stat().st_mode) == stat.S_IMODE(plain.stat().st_mode) == files.plain_mode()
    assert stat.S_IMODE(folder.stat().st_mode) == files.plain_mode(folder=True)
    private = tmp_path / "private"
    private.write_text("x")
    os.chmod(private, 0o600)
    files.give_plain_mode(private)
    assert stat.S_IMODE(private.stat().st_mode) == files.plain_mode()
