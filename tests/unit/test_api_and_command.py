"""The API and the command line share defaults and option names.

``--from PATH`` is the one name of what ``lookup`` and ``annotate`` read provenance from (the
API's ``from_``); ``--in``, lookup's spelling in 0.1.0, still works on both, hidden from
``--help``, with one line on stderr saying it is deprecated."""

from __future__ import annotations

import json

import pytest

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
