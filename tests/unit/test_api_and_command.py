"""The API and the command line share defaults and option names.

``--from PATH`` is the one name of what ``lookup`` and ``annotate`` read provenance from (the
API's ``from_``); ``--in``, lookup's spelling in 0.1.0, still works on both, hidden from
``--help``, with one line on stderr saying it is deprecated. ``annotate()`` writes where the
command writes; 0.1.0's API keywords still work, with a DeprecationWarning."""

from __future__ import annotations

import json

import pytest

import spyre_provenance

DEPRECATED = "warning: --in is deprecated, use --from"


def test_lookup_reads_the_same_through_both_spellings(run_cli, data_dir):
    log = data_dir / "logs" / "seed_mlp.log"
    code, out, err = run_cli("lookup", "cpp_fused_relu_0", "--from", log, "--format", "json")
    assert code == 0 and err == "" and json.loads(out)["answers"][0]["matches"]
    assert run_cli("lookup", "cpp_fused_relu_0", "--in", log, "--format", "json") == (
        0,
        out,
        f"spyre-provenance lookup: {DEPRECATED}\n",
    )


def test_annotate_reads_the_same_through_both_spellings(run_cli, data_dir, tmp_path):
    log = data_dir / "logs" / "seed_mlp.log"
    trace = tmp_path / "t.json"
    trace.write_text(json.dumps({"traceEvents": [{"ph": "X", "name": "cpp_fused_relu_0", "ts": 1, "dur": 2}]}))
    code, out, err = run_cli("annotate", trace, "--from", log, "--summary", "--format", "json")
    assert code in (0, 1) and err == "" and json.loads(out)
    assert run_cli("annotate", trace, "--in", log, "--summary", "--format", "json") == (
        code,
        out,
        f"spyre-provenance annotate: {DEPRECATED}\n",
    )


@pytest.mark.parametrize("command", ["lookup", "annotate"])
def test_help_names_from_and_hides_in(run_cli, command):
    code, out, _ = run_cli(command, "--help")
    assert code == 0 and "--from PATH" in out and "--in" not in out


def _trace(folder):
    trace = folder / "t.json"
    trace.write_text(json.dumps({"traceEvents": [{"ph": "X", "name": "cpp_fused_relu_0", "ts": 1, "dur": 2}]}))
    return trace


def test_the_api_annotates_beside_the_trace_as_the_command_does(run_cli, data_dir, tmp_path):
    log = data_dir / "logs" / "seed_mlp.log"
    (tmp_path / "api").mkdir()
    (tmp_path / "cli").mkdir()
    api, cli = _trace(tmp_path / "api"), _trace(tmp_path / "cli")
    original = api.read_bytes()
    summary = spyre_provenance.annotate(api, from_=log)
    code, out, _ = run_cli("annotate", cli, "--from", log)
    assert isinstance(summary, spyre_provenance.AnnotateSummary)
    assert summary.output == str(tmp_path / "api" / "t.annotated.json") and out.rstrip("\n").endswith(
        str(tmp_path / "cli" / "t.annotated.json")
    )
    assert api.read_bytes() == original  # the trace itself is left as it was
    assert (tmp_path / "api" / "t.annotated.json").read_bytes() == (tmp_path / "cli" / "t.annotated.json").read_bytes()


def test_the_api_annotates_in_place_only_when_asked(data_dir, tmp_path):
    log = data_dir / "logs" / "seed_mlp.log"
    trace = _trace(tmp_path)
    summary = spyre_provenance.annotate(trace, from_=log, in_place=True)
    assert summary.output == str(trace) and not (tmp_path / "t.annotated.json").exists()
    with pytest.raises(ValueError, match="output or in_place"):
        spyre_provenance.annotate(trace, from_=log, output=tmp_path / "o.json", in_place=True)


def test_the_api_keywords_of_0_1_0_still_work_and_say_so(data_dir, tmp_path):
    log = data_dir / "logs" / "seed_mlp.log"
    trace = _trace(tmp_path)
    csv = tmp_path / "summary.csv"
    csv.write_text("Kernel,Total\n")
    with pytest.warns(DeprecationWarning, match="acelyzer_csv"):
        old = spyre_provenance.time_summary(trace, from_=log, acelyzer_csv=csv)
    assert old == spyre_provenance.time_summary(trace, from_=log, acelyzer=csv)
    with pytest.warns(DeprecationWarning, match="find_traces"):
        old_compare = spyre_provenance.compare(log, log, find_traces=False)
    assert old_compare == spyre_provenance.compare(log, log, no_trace=True)


def test_a_command_imports_no_other_commands_module():
    """The parser fills in only the chosen command: ``run``'s cost is set against the bare
    program's, and importing every command module to build the parser was a tenth of a second."""
    import subprocess
    import sys

    code = (
        "import sys; from spyre_provenance.cli import build_parser;"
        "args = build_parser().parse_args(['run', '--', 'true']);"
        "print(args._run.__module__, *sorted(m for m in sys.modules if m.endswith('_command')))"
    )
    printed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert printed == ["spyre_provenance.cli.run_command", "spyre_provenance.cli.run_command"]


def test_enable_and_tracking_take_the_old_seams_with_a_warning_at_the_callers_line(tmp_path):
    """``layout`` and ``inductor`` left the public signature (internal seams); for one release
    they still work, each with a DeprecationWarning pointing at the caller's own line."""
    from spyre_provenance.capture.inductor import Inductor
    from spyre_provenance.model.layout import Layout

    layout, inductor = Layout(tmp_path, "m"), Inductor()
    import torch  # noqa: F401 - its own import-time deprecations are not the ones counted here

    with pytest.warns(DeprecationWarning) as caught:
        session = spyre_provenance.enable("inductor", layout=layout, inductor=inductor)
    spyre_provenance.disable()
    assert (session.layout, session.inductor) == (layout, inductor)
    assert [str(w.message) for w in _ours(caught)] == [
        "spyre_provenance.enable(layout=...) is deprecated: use out_dir=... and label=...",
        "spyre_provenance.enable(inductor=...) is deprecated: use nothing: the Inductor seam is internal",
    ]
    assert {w.filename for w in _ours(caught)} == {__file__}
    warned = pytest.warns(DeprecationWarning, match=r"tracking\(layout=\.\.\.\)")
    with warned as caught, spyre_provenance.tracking("inductor", layout=layout) as session:
        assert session.layout == layout
    assert {w.filename for w in _ours(caught)} == {__file__}


def _ours(caught):
    return [w for w in caught if str(w.message).startswith("spyre_provenance.")]


def test_enable_builds_its_out_folder_from_out_dir_and_label_and_refuses_what_it_does_not_take(tmp_path):
    from spyre_provenance.model.layout import Layout

    with spyre_provenance.tracking("inductor", out_dir=tmp_path, label="m") as session:
        assert session.layout == Layout(tmp_path, "m") and session.label == "m"
    with pytest.raises(TypeError, match="unexpected keyword argument 'out'"):
        spyre_provenance.enable("inductor", out=tmp_path)
    with (
        pytest.raises(ValueError, match="a layout or an out_dir and label, not both"),
        pytest.warns(DeprecationWarning),
    ):
        spyre_provenance.enable("inductor", out_dir=tmp_path, layout=Layout(tmp_path, None))


@pytest.mark.parametrize("argv", [["run"], ["run", "--"], ["run", "--no-pages", "--"]], ids=" ".join)
def test_run_with_nothing_to_run_names_the_command_in_its_one_line(run_cli, argv):
    """``run``'s program is its own argument: it once took the subcommand's place in the
    parsed arguments, and the error line read ``spyre-provenance []: error: ...``."""
    code, out, err = run_cli(*argv)
    assert (code, out) == (2, "")
    assert (
        err
        == "spyre-provenance run: error: COMMAND: nothing to run: spyre-provenance run [--out OUT] -- COMMAND [ARGS...]\n"
    )
