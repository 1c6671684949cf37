"""The one rule for "is this the user's frame" (``model.frames``), and the one frame reader.

Before it was one rule, lookup (and the time summary) and the debug-handle builder each had
their own and disagreed: lookup called a redacted project file (``<project>/model.py``), an
installed example model and any other installed package (``transformers``' modeling files)
not the user's; the handle builder called the standard library and code without a file
(``<string>``) the user's. The cases below are those, each checked through both readers.
"""

from __future__ import annotations

import pytest

from spyre_provenance.backends.reference.handles_from_origins import source_from_stack_trace
from spyre_provenance.model.frames import (
    Frame,
    frames,
    is_run_time_user_frame,
    is_this_package,
    is_user_frame,
    user_frame,
)
from spyre_provenance.runtime.lookup import source_lines

THE_USERS = [
    "/home/user/project/model.py",
    "<project>/model.py",  # redacted (--redact-paths): a file of the user's project
    "~/models/m.py",
    "src/spyre_provenance/compile/examples.py",  # the built-in example models, from a checkout
    "<site-packages>/spyre_provenance/compile/examples.py",  # ... installed, or redacted
    "/venv/lib/python3.11/site-packages/transformers/models/llama/modeling_llama.py",
    "<site-packages>/transformers/models/llama/modeling_llama.py",
    "/usr/lib/python3/dist-packages/mylib/model.py",
    "/work/spyre_provenance/tests/zoo/models.py",  # a checkout folder named like the package
]
NOT_THE_USERS = [
    "/venv/lib/python3.11/site-packages/torch/nn/modules/linear.py",
    "<site-packages>/torch/distributed/_functional_collectives.py",
    "/opt/pytorch/torch/nn/functional.py",  # torch from a source checkout
    "/usr/lib/python3.12/contextlib.py",
    "<stdlib>/contextlib.py",
    "/work/repo/src/spyre_provenance/capture/hook.py",
    "<site-packages>/spyre_provenance/compile/job.py",  # the compile room is machinery, its examples not
    "<site-packages>/spyre_provenance/bench/models.py",
    "<string>",
    "<eval_with_key>.3",
]


def frame(path: str, line: int, code: str | None = "    y = f(x)") -> str:
    return f'  File "{path}", line {line}, in forward\n' + (f"{code}\n" if code is not None else "")


@pytest.mark.parametrize("path", THE_USERS)
def test_the_users_frames(path: str) -> None:
    assert is_user_frame(path)


@pytest.mark.parametrize("path", NOT_THE_USERS)
def test_frames_that_are_not_the_users(path: str) -> None:
    assert not is_user_frame(path)


@pytest.mark.parametrize(
    "user, machinery",
    [
        ("<project>/model.py", "<stdlib>/contextlib.py"),
        ("<site-packages>/spyre_provenance/compile/examples.py", "<site-packages>/torch/nn/modules/linear.py"),
        ("/venv/lib/python3.11/site-packages/transformers/modeling_llama.py", "/usr/lib/python3.12/functools.py"),
        ("/home/user/project/model.py", "<string>"),
    ],
)
def test_lookup_and_the_handle_builder_name_the_same_frame(user: str, machinery: str) -> None:
    """The cases where the two old rules disagreed: the user's frame is outer, the
    machinery's inner; the handle names the user's line, lookup lists it first."""
    trace = frame(user, 7) + frame(machinery, 40)
    handle_source = source_from_stack_trace(trace)
    assert handle_source is not None and (handle_source.file, handle_source.start_line) == (user, 7)
    listed = source_lines([trace])
    assert [(s.file, s.line, s.user) for s in listed] == [(user, 7, True), (machinery, 40, False)]


def test_with_no_users_frame_the_innermost_frame_is_named() -> None:
    trace = frame("<site-packages>/torch/a.py", 1) + frame("<site-packages>/torch/b.py", 2)
    assert user_frame(trace) == Frame("<site-packages>/torch/b.py", 2, "    y = f(x)")
    assert user_frame("no frames") is None and user_frame(None) is None


def test_a_frame_without_a_code_line_does_not_swallow_the_next() -> None:
    """Python writes no code line when it has no source (``<string>``); the frame reader
    used to take the next frame's ``File`` line for its code and lose that frame."""
    trace = frame("<string>", 1, code=None) + frame("/home/user/model.py", 3)
    assert frames(trace) == [Frame("<string>", 1, ""), Frame("/home/user/model.py", 3, "    y = f(x)")]
    assert user_frame(trace) == Frame("/home/user/model.py", 3, "    y = f(x)")


@pytest.mark.parametrize("path", [p for p in NOT_THE_USERS if "spyre_provenance" in p])
def test_this_packages_own_frames_are_told_apart(path: str) -> None:
    """At run time a call into a compiled graph made by this package (``compile --profile``,
    the pytest fixture) has no user's line: the walk stops at the first of its frames."""
    assert is_this_package(path)


@pytest.mark.parametrize(
    "path", [p for p in THE_USERS + NOT_THE_USERS if "spyre_provenance" not in p or "examples" in p]
)
def test_every_other_frame_is_not_this_packages(path: str) -> None:
    assert not is_this_package(path)


def test_at_run_time_torch_spyres_package_is_machinery() -> None:
    """torch-spyre's eager mode dispatches every op from its own package: at run time its
    frames are machinery, at compile time a model defined there is the user's."""
    path = "/venv/lib/python3.11/site-packages/torch_spyre/ops/eager.py"
    assert is_user_frame(path) and not is_run_time_user_frame(path)
    assert all(is_run_time_user_frame(p) == is_user_frame(p) for p in THE_USERS + NOT_THE_USERS)
