"""``spyre-provenance audit MODEL``: the seed's provenance audit, regenerated on every run.

The same tracked compile as ``compile`` (``cli.compile.execute``), with the audit probe on:
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

from spyre_provenance.errors import EXIT_FOUND_WANTING, EXIT_OK


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from spyre_provenance.backends import BACKEND_NAMES, DEFAULT_BACKEND

    parser.add_argument("model", metavar="MODEL", help="built-in example (mlp, residual, ...) or PATH.py:FACTORY")
    parser.add_argument("--backend", choices=BACKEND_NAMES, default=DEFAULT_BACKEND,
                        help="auto = torch-spyre when the adapter can install on it, else the reference backend")
    parser.add_argument("--dtype", choices=("float32", "float16", "bfloat16"), default=None,
                        help="cast the model and its floating-point inputs (as compile --dtype)")
    parser.add_argument("--train", action="store_true", help="compile and audit forward and backward")
    parser.add_argument("--out", type=Path, default=None, help="output folder (default: out/<model>)")
    parser.add_argument("--against", type=Path, default=None, metavar="PREVIOUS_AUDIT.json",
                        help="a previous run's provenance_audit.json: say what changed, exit 1 when coverage, a mapping or a link was lost")


def run(args: argparse.Namespace) -> int:
    from spyre_provenance import audit
    from spyre_provenance.cli import compile as compile_command
    from spyre_provenance.cli.audit_files import build, write

    previous = audit.read(args.against) if args.against is not None else None  # before compiling: exit 2 fast
    for name, value in (("no_tlparse", True), ("redact_paths", False), ("kernel_cache", False), ("beyond_upstream", False)):
        setattr(args, name, value)
    done = compile_command.execute(args, audit=True, tlparse_pages=False)
    document = build(done.report)
    changes = audit.compare(previous, document) if previous is not None else None
    against = str(args.against) if args.against is not None else None
    written, problems = write(done.report, done.out, document, changes, against)
    print(audit.render_short(document, [str(p) for p in written], changes, against))
    if not done.ok:  # the audit reports what is there; compile's own verdict is compile's to give
        print(f"  note: the compile itself was found wanting (run: spyre-provenance compile {args.model} for its summary)")
    for line in problems:
        print(f"  AUDIT NOT WRITTEN: {line}")
    return EXIT_FOUND_WANTING if problems or (changes is not None and changes.fell) else EXIT_OK
