"""The spyre-provenance command: one-line errors; exit 0 ok, 1 found wanting, 2 unusable input, 3 a bug.

Each subcommand lives in ``spyre_provenance.cli.<name>_command`` and exposes
``add_arguments(parser)`` and ``run(args) -> int``; this module only wires them up and
turns failures into one line on stderr. ``compile.summary`` checks and summarizes what
``compile`` wrote. Nothing imports the command line (it is an entry point).

torch is an optional extra (``spyre-provenance[compile]``): ``validate``, ``diff`` and
``open`` run without it (a pre-commit hook checking JSON installs no torch), ``compile``
and ``golden`` (which compiles each case) say in one line which extra to install, exit 2.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import Any, NoReturn

from spyre_provenance.base.errors import EXIT_UNUSABLE, TORCH_EXTRA, UnusableInput
from spyre_provenance.base.process import torch_missing
from spyre_provenance.base.version import __version__

EXIT_INTERNAL = 3  # a bug in this tool, never a verdict on the input
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a shell reports for a tool cut off by `| head`

# name -> one-line help, in the order `--help` lists them
COMMANDS = {
    "compile": "compile a model with provenance tracking and write its artifacts",
    "validate": "validate mapping/stack-trace JSON files, TORCH_TRACE logs, or folders of them",
    "diff": "compare two provenance artifacts and print what moved",
    "golden": "check or update the golden provenance artifacts",
    "open": "render a compile's provenance pages with tlparse",
    "audit": "audit which provenance fields survive each stage of a compile, and what changed since the last run",
    "lookup": "from a kernel name met at run time (error, profiler, bundle folder, key, handle id) to its source",
    "annotate": "add each kernel's provenance to the events of a torch.profiler Chrome trace",
    "view": "write one self-contained HTML page of an --out folder: source, graphs, kernels, OpSpecs, bundles",
    "compare": "two compiles (or runs) side by side per source line: what each line became, and its time",
    "run": "run any program unmodified, tracking every torch.compile in it and in every Python process it starts",
}


# the commands that compile models, and what installs what they need
NEEDS_TORCH = ("compile", "golden", "audit")


def _needs_torch(command: str) -> str:
    return f"spyre-provenance {command}: error: needs torch, which is not installed: {TORCH_EXTRA}"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # usage errors: one line, exit 2
        self.exit(EXIT_UNUSABLE, f"{self.prog}: error: {message}\n")


class _Commands(argparse._SubParsersAction):
    """The subcommands, each filled in (its module imported, its arguments added) only when
    argparse has chosen it: the top-level help needs no command's arguments, and a command
    (``run`` above all, whose cost is measured against the bare program) imports no other
    command's module. argparse still says which names exist and words every usage error."""

    def __call__(
        self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, option_string: Any = None
    ) -> None:
        chosen = self._name_parser_map.get(values[0])
        if chosen is not None and chosen.get_default("_run") is None:
            module = importlib.import_module(f"spyre_provenance.cli.{values[0]}_command")
            module.add_arguments(chosen)
            chosen.set_defaults(_run=module.run)
        super().__call__(parser, namespace, values, option_string)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="spyre-provenance", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser, action=_Commands)
    sub.required = True
    for name, help_text in COMMANDS.items():
        sub.add_parser(name, help=help_text, description=help_text)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command in NEEDS_TORCH and torch_missing():
        print(_needs_torch(args.command), file=sys.stderr)
        return EXIT_UNUSABLE
    try:
        return int(args._run(args))
    except UnusableInput as exc:
        print(f"spyre-provenance {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_UNUSABLE
    except ModuleNotFoundError as exc:
        if exc.name != "torch" and not (exc.name or "").startswith("torch."):
            return _internal_error(args.command, exc)
        print(_needs_torch(args.command), file=sys.stderr)  # a path that reached torch after all
        return EXIT_UNUSABLE
    except BrokenPipeError:
        # the reader went away (``diff | head``): stop quietly, as a shell tool would
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - the interpreter flushes it at exit
        return EXIT_BROKEN_PIPE
    except KeyboardInterrupt:
        print(f"spyre-provenance {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - the contract is one line, never a traceback
        return _internal_error(args.command, exc)


def exit_with(code: int) -> NoReturn:
    """The end of ``python -m spyre_provenance``. A rank of ``compile --ranks`` (the parent
    starts each so) ends through ``compile.process_group.end``, without the interpreter's
    finalization; every other process exits as usual."""
    from spyre_provenance.compile import process_group

    process_group.end(code)
    raise SystemExit(code)


def _internal_error(command: str, exc: BaseException) -> int:
    print(
        f"spyre-provenance {command}: internal error: {type(exc).__name__}: {exc} (please report this)",
        file=sys.stderr,
    )
    return EXIT_INTERNAL


if __name__ == "__main__":
    raise SystemExit(main())
