"""A compile worker for the test session: ``spyre-provenance compile`` runs, one after
another, in one long-lived interpreter.

A fresh process per compile pays ~8 s of imports and Inductor warm-up before the first
kernel (a compile of a small model takes 10-20 s cold, under 3 s warm); the session's
70-odd compiles would not fit the suite's time budget. Each request runs the real command
(``cli.main``) with the real ``TORCH_TRACE`` log, which the command points at the run's
own folder; file descriptors 1 and 2 go to the run's own files, so what it prints is
captured exactly as a subprocess's would be, compiler output included. Warnings are shown
once per run, as in a fresh process.

Protocol (``conftest.CompileServer``): one JSON request per line on stdin,
``{"args": [...], "stdout": PATH, "stderr": PATH}`` (and ``"env": {NAME: VALUE}``, set for
that run only); one JSON reply per line on the
descriptor passed as ``argv[1]``: ``{"returncode": N}``.
"""

from __future__ import annotations

import json
import os
import sys


def _fresh_warnings() -> None:
    """Forget which warnings were shown: a fresh process would show them again."""
    for module in list(sys.modules.values()):
        registry = getattr(module, "__warningregistry__", None)
        if isinstance(registry, dict):
            registry.clear()


def run_one(request: dict) -> int:
    env = dict(request.get("env") or {})
    before = {name: os.environ.get(name) for name in env}
    os.environ.update(env)
    try:
        return _run_with_output(request)
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _run_with_output(request: dict) -> int:
    from spyre_provenance import cli

    saved = os.dup(1), os.dup(2)
    sys.stdout.flush()
    sys.stderr.flush()
    with open(request["stdout"], "wb") as out, open(request["stderr"], "wb") as err:
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
        try:
            _fresh_warnings()
            try:
                code = cli.main(list(request["args"]))
            except SystemExit as exc:  # argparse usage errors
                code = exc.code if isinstance(exc.code, int) else 2
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
    return int(code)


def main() -> None:
    replies = os.fdopen(int(sys.argv[1]), "w", buffering=1)
    for line in sys.stdin:
        if not line.strip():
            continue
        code = run_one(json.loads(line))
        replies.write(json.dumps({"returncode": code}) + "\n")


if __name__ == "__main__":
    main()
