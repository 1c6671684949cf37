"""Read once, validate once (``validate.read_once``): inside ``reading_once``, the viewer's
page is built from the artifact files a compile's check found valid, without reading or
validating them again, and is the page built from the folder alone; a file found wanting,
or changed since, or over the viewer's size limit, is read again."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from helpers.where import golden_graphs  # tests/ is on sys.path
from spyre_provenance.base.errors import UnusableInput
from spyre_provenance.compile.output_check import check_outputs
from spyre_provenance.model import jsonio
from spyre_provenance.model.names import KERNEL_STACK_TRACES, NODE_MAPPINGS, artifact_file
from spyre_provenance.validate import read_once
from spyre_provenance.viewer import data

LIMIT = 2**30


def _check(out: Path) -> bool:
    return check_outputs(sorted(out.glob("graph_*")), None).all_valid


def _mappings(out: Path) -> list[Path]:
    return sorted(out.glob(f"graph_*/{artifact_file(NODE_MAPPINGS)}"))


def _damage_keeping_the_stamp(path: Path) -> None:
    """The same size and times, other bytes: only a reader that does not read again misses it."""
    before = os.stat(path)
    with path.open("r+b") as f:
        f.write(b"[")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


@pytest.fixture
def out(tmp_path: Path) -> Path:
    return golden_graphs("mlp_train", tmp_path / "out")


def test_the_check_keeps_every_artifact_it_found_valid(out):
    with read_once.reading_once():
        assert _check(out)
        for path in _mappings(out):
            assert read_once.valid_bytes(path, NODE_MAPPINGS, LIMIT) == path.read_bytes()
            # however it is named
            assert read_once.valid_bytes(os.path.relpath(path), NODE_MAPPINGS, LIMIT) == path.read_bytes()
            # valid as what it was validated as, not as another kind a reader asks for
            assert read_once.valid_bytes(path, KERNEL_STACK_TRACES, LIMIT) is None
    assert [read_once.valid_bytes(p, NODE_MAPPINGS, LIMIT) for p in _mappings(out)] == [
        None,
        None,
    ]  # nothing kept outside


def test_a_page_from_the_kept_files_is_the_page_from_the_folder(out):
    alone = data.build(out)
    with read_once.reading_once():
        assert _check(out)
        assert data.build(out) == alone


def test_the_kept_files_are_neither_read_nor_validated_again(out):
    with read_once.reading_once():
        assert _check(out)
        before = data.build(out)
        for path in _mappings(out):
            _damage_keeping_the_stamp(path)
        assert data.build(out) == before
    with pytest.raises(UnusableInput, match=artifact_file(NODE_MAPPINGS)):
        data.build(out)  # view's own reading validates


def test_a_file_changed_since_is_read_again(out):
    with read_once.reading_once():
        assert _check(out)
        _mappings(out)[0].write_text("{", encoding="utf-8")
        with pytest.raises(UnusableInput, match=artifact_file(NODE_MAPPINGS)):
            data.build(out)


def test_a_file_found_invalid_is_not_kept(tmp_path: Path):
    out = golden_graphs("mlp", tmp_path / "out")
    (mapping,) = _mappings(out)
    mapping.write_text('{"version": "2.0"}', encoding="utf-8")
    with read_once.reading_once():
        assert not _check(out)
        assert read_once.valid_bytes(mapping, NODE_MAPPINGS, LIMIT) is None
        with pytest.raises(UnusableInput):
            data.build(out)  # the viewer says it in its own words


def test_a_file_over_the_viewers_size_limit_is_refused_as_view_alone_refuses_it(out, monkeypatch):
    """The check reads up to its own limit; the viewer's (``SPYRE_PROVENANCE_MAX_BYTES``) may
    be lower, and a kept file over it is the viewer's to refuse, in its own words."""
    smallest = min(p.stat().st_size for p in _mappings(out))
    with read_once.reading_once():
        assert _check(out)
        monkeypatch.setenv(jsonio.MAX_BYTES_ENV, str(smallest - 1))
        with pytest.raises(UnusableInput, match="over the size limit"):
            data.build(out)
