"""The viewer's page a compile writes is built from what the compile's check read and
validated (``validate.read_once``), and is byte for byte the page ``view`` builds when it
reads and validates the folder on its own."""

from __future__ import annotations

import pytest

from spyre_provenance.model.layout import Layout

pytestmark = pytest.mark.compile


@pytest.mark.parametrize(
    "args",
    [("mlp",), ("mlp", "--train"), ("mlp", "--dtype", "float16"), ("mlp", "--profile")],
    ids=" ".join,
)
def test_the_compiles_page_is_the_page_view_builds(compile_case, run_cli, tmp_path, args):
    done = compile_case(*args)
    assert done.returncode == 0, done.stderr
    own = Layout(done.out).viewer_page
    again = tmp_path / "view.html"
    code, _, err = run_cli("view", done.out, "-o", again)
    assert (code, err) == (0, "")
    assert again.read_bytes() == own.read_bytes()
