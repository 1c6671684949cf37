"""``spyre-provenance compile MODEL``: one tracked compile, its artifacts, a summary.

The arguments become a ``CompileRequest``; ``compile.job.compile_request`` compiles,
writes into ``--out DIR`` (default ``out/<model>``; what goes there: ``compile_job``) and
judges; this command prints the summary (``compile.summary``) and exits with the verdict's
status. ``--ranks N`` starts one such process per rank through torchrun's launcher
(``compile.ranks``), each with the arguments ``compile.request.command_line`` spells for the
request: every option below has its spelling there, and the two change together.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from spyre_provenance.cli.compile_options import add_model_options
from spyre_provenance.compile import job as compile_job
from spyre_provenance.compile import summary
from spyre_provenance.compile.ranks import RanksOutcome
from spyre_provenance.compile.request import default_out


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options, in ``--help``'s order; each has its spelling in ``compile.request``."""
    _what_to_compile(parser)
    _what_to_write(parser)


def _what_to_compile(parser: argparse.ArgumentParser) -> None:
    add_model_options(parser)
    parser.add_argument("--train", action="store_true", help="compile forward and backward")
    parser.add_argument("--no-tlparse", action="store_true", help="do not run tlparse afterwards")
    parser.add_argument(
        "--kernel-cache",
        action="store_true",
        help="as torch-spyre's kernel cache: keep SuperDSC bundles in Inductor's cache dir "
        "(inductor-spyre-cache/<key>/, keyed on the specs without debug handles) and serve later "
        "compiles of the same specs from there; their handles are checked against this compile's "
        "(reference backend)",
    )
    parser.add_argument(
        "--ranks",
        type=int,
        default=None,
        metavar="N",
        help="run N processes, one rank each, started by torchrun's launcher in a torch.distributed gloo "
        "group; rank r compiles into OUT/rank<r>/ and OUT/tlparse/<model>/ gets tlparse's multi-rank report "
        "(in a process torchrun started: compile as its rank RANK)",
    )


def _what_to_write(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--redact-paths",
        action="store_true",
        help="write stack traces and handle sources with <project>/, <site-packages>/, ~/ instead of "
        "absolute paths (and user names)",
    )
    parser.add_argument(
        "--beyond-upstream",
        action="store_true",
        help="with --backend inductor: complete stock Inductor's mapping as on the Spyre backends (gradients "
        "linked to the pre-grad nodes of the forward op they differentiate, write-backs and helper kernels given "
        "a source line, gaps judged as violations); the Spyre backends always do",
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="run the compiled model once more under torch.profiler and write OUT/profile/<model>.trace.json "
        "with each kernel event's provenance (as `spyre-provenance annotate`)",
    )
    parser.add_argument(
        "--audit",
        action="store_true",
        help="also write the provenance audit (provenance_audit.json and .md, as `spyre-provenance audit`)",
    )
    parser.add_argument(
        "--against",
        type=Path,
        default=None,
        metavar="PREVIOUS_AUDIT.json",
        help="with --audit: a previous run's provenance_audit.json to compare with (as `spyre-provenance audit`)",
    )
    parser.add_argument("--no-viewer", action="store_true", help="do not write the viewer's page (OUT/view.html)")


def run(args: argparse.Namespace) -> int:
    outcome = compile_job.compile_request(request(args), announce=lambda line: print(line, flush=True))
    if isinstance(outcome, RanksOutcome):  # the parent of a multi-rank run: each rank's output, prefixed
        for line in outcome.lines:
            print(line, flush=True)
        for problem in outcome.problems:
            print(problem, file=sys.stderr)
        return outcome.exit_code
    return report(outcome)


def request(args: argparse.Namespace) -> compile_job.CompileRequest:
    """The command line's arguments as a compile request."""
    return compile_job.CompileRequest(
        model=args.model,
        backend=args.backend,
        out=args.out or default_out(args.model),
        dtype=args.dtype,
        train=args.train,
        tlparse=not args.no_tlparse,
        kernel_cache=args.kernel_cache,
        redact_paths=args.redact_paths,
        beyond_upstream=args.beyond_upstream,
        audit=args.audit,
        audit_against=args.against,
        ranks=args.ranks,
        profile=args.profile,
        viewer=not args.no_viewer,
    )


def report(outcome: compile_job.CompileOutcome) -> int:
    """Print the summary (and what became of the audit files and the profile); the exit status."""
    for problem in outcome.page_problems:
        print(problem, file=sys.stderr)
    print(summary.render(outcome))
    if outcome.audit is not None and outcome.audit.refused is not None:
        raise outcome.audit.refused  # no graph was audited: one line, exit 2
    for line in summary.tail(outcome):
        print(line)
    return outcome.exit_code
