"""One rule turns a compile request into the ``compile`` command's arguments
(``compile.request.command_line``), the arguments every rank of ``compile --ranks N`` gets:
each field of ``CompileRequest`` goes through the command line and back unchanged, so a flag
the ranks would drop (``--profile``, ``--beyond-upstream``, ``--against`` were) fails here,
and so does a field added to the request without a spelling."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from spyre_provenance.cli import build_parser, compile_command
from spyre_provenance.compile.request import CompileRequest, NotACommandLine, command_line

#: A value for every field of the request that differs from the command line's default
#: (``instance`` has none: a module in memory is not a command line). A field added to
#: ``CompileRequest`` needs one here, and a spelling in ``command_line``.
NOT_THE_DEFAULT = {
    "model": "-starts-with-a-dash.py:build",  # a file model, after ``--``
    "backend": "inductor",
    "out": Path("somewhere/else"),
    "dtype": "float16",
    "train": True,
    "tlparse": False,
    "kernel_cache": True,
    "redact_paths": True,
    "beyond_upstream": True,
    "audit": True,
    "audit_against": Path("previous/provenance_audit.json"),
    "profile": True,
    "ranks": 2,
    "viewer": False,
}
NOT_ON_A_COMMAND_LINE = {"instance"}


def _parsed(arguments: list[str]) -> CompileRequest:
    return compile_command.request(build_parser().parse_args(["compile", *arguments]))


def test_every_field_of_a_request_has_a_value_here():
    fields = {field.name for field in msgspec.structs.fields(CompileRequest)}
    assert set(NOT_THE_DEFAULT) | NOT_ON_A_COMMAND_LINE == fields


@pytest.mark.parametrize("field", sorted(NOT_THE_DEFAULT))
def test_each_field_goes_through_the_command_line_and_back(field):
    request = CompileRequest(model="mlp", out=Path("out/mlp"), viewer=True)  # the command line's defaults
    changed = msgspec.structs.replace(request, **{field: NOT_THE_DEFAULT[field]})
    assert _parsed(command_line(changed)) == changed
    assert command_line(changed) != command_line(request) or field == "out"  # out/mlp is mlp's default too


def test_every_field_at_once_goes_through_the_command_line_and_back():
    request = CompileRequest(**NOT_THE_DEFAULT)
    arguments = command_line(request)
    assert _parsed(arguments) == request
    assert arguments[-2:] == ["--", "-starts-with-a-dash.py:build"]
    assert {"--profile", "--beyond-upstream", "--against", "--no-tlparse", "--no-viewer"} <= set(arguments)


def test_the_command_line_defaults_are_no_arguments():
    assert command_line(CompileRequest(model="mlp", out=Path("out/mlp"), viewer=True)) == [
        "--backend",
        "auto",
        "--out",
        "out/mlp",
        "--",
        "mlp",
    ]


def test_what_no_command_line_can_ask_for_is_refused():
    with pytest.raises(NotACommandLine, match="handed in as an object"):
        command_line(CompileRequest(model="mine", instance=(object(), ()), out=Path("o")))
    with pytest.raises(NotACommandLine, match="out folder"):
        command_line(CompileRequest(model="mlp"))
