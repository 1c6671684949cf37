"""``spyre-provenance audit MODEL``: the seed's provenance audit, regenerated on every run.

The same tracked compile as ``compile`` (``compile.job``), with the audit probe on:
writes the compile's artifacts into ``--out`` as ``compile`` does (no tlparse pages), then
``provenance_audit.json`` (schema ``provenance_audit`` v1, validated before it is written)
and ``provenance_audit.md`` (the tables), and prints the short form. With ``--against
PREVIOUS_AUDIT.json`` it also says what changed since that run.

Exit 0: the audit is written, and no field's coverage fell and no kernel lost its mapping
(or its link on the provenance page) since ``--against``; 1: one did (or the audit could not
be written); 2: unusable input (the model, ``--against``), one line.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from spyre_provenance.base.errors import Verdict


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from spyre_provenance.cli.compile_options import add_model_options

    add_model_options(parser)
    parser.add_argument("--train", action="store_true", help="compile and audit forward and backward")
    parser.add_argument(
        "--against",
        type=Path,
        default=None,
        metavar="PREVIOUS_AUDIT.json",
        help="a previous run's provenance_audit.json: say what changed, exit 1 when coverage, a mapping or a link was lost",
    )


def run(args: argparse.Namespace) -> int:
    from spyre_provenance.audit import report
    from spyre_provenance.compile import job as compile_job
    from spyre_provenance.compile.request import default_out

    request = compile_job.CompileRequest(
        model=args.model,
        backend=args.backend,
        out=args.out or default_out(args.model),
        dtype=args.dtype,
        train=args.train,
        tlparse=False,
        audit=True,
        audit_against=args.against,
    )
    outcome = compile_job.compile_request(request, announce=lambda line: print(line, flush=True))
    assert isinstance(outcome, compile_job.CompileOutcome)  # one process: no ranks asked for
    files = outcome.audit
    assert files is not None  # asked for with audit=True
    if files.refused is not None:
        raise files.refused
    against = str(args.against) if args.against is not None else None
    print(report.render_short(files.document, [str(p) for p in files.written], files.changes, against))
    if outcome.compile_reasons:  # the audit reports what is there; compile's own verdict is compile's to give
        print(
            f"  note: the compile itself was found wanting (run: spyre-provenance compile {args.model} for its summary)"
        )
    for line in files.problems:
        print(f"  AUDIT NOT WRITTEN: {line}")
    fell = (
        ["a field's coverage, a mapping or a link was lost"] if files.changes is not None and files.changes.fell else []
    )
    return Verdict.judge(wanting=files.problems + fell).exit_code
