"""Our command in a new interpreter, for what the session's compile worker
(``conftest.compile_case``) cannot show: a cold process, an environment or Inductor cache of
its own, a signal, two writers at once, a driver that injects a fault first.

The one way the suite starts such a process (the ``fresh_process`` fixture hands out
``FRESH``): the same interpreter, the checkout's ``src`` first on ``PYTHONPATH`` (the code
under test, whatever else is installed), and no ``TORCH_TRACE`` of the parent's (torch would
log the child's compile there instead of where the command points it).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]  # tests/helpers/ -> the checkout
#: generous: a cold compile takes 7-20 s here, a --ranks run or a loaded machine far more
TIMEOUT = 900


def environment(overrides: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment, made fit for a fresh one, then ``overrides``."""
    env = {k: v for k, v in os.environ.items() if k != "TORCH_TRACE"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO / "src"), os.environ.get("PYTHONPATH")) if p)
    env.update(overrides or {})
    return env


class FreshProcess:
    """``run("compile", "mlp", "--out", out)``: ``spyre-provenance ARGS`` in a new interpreter;
    ``driver=CODE`` runs ``python -c CODE ARGS`` instead (a driver that patches something, then
    calls ``cli.main``); ``start`` the same without waiting."""

    def argv(self, *args: object, driver: str | None = None) -> list[str]:
        head = ["-c", driver] if driver is not None else ["-m", "spyre_provenance"]
        return [sys.executable, *head, *map(str, args)]

    def run(
        self,
        *args: object,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        driver: str | None = None,
        timeout: float = TIMEOUT,
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.argv(*args, driver=driver),
            capture_output=True,
            text=True,
            env=environment(env),
            cwd=cwd,
            timeout=timeout,
        )

    def start(self, *args: object, env: Mapping[str, str] | None = None) -> subprocess.Popen[str]:
        return subprocess.Popen(
            self.argv(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environment(env)
        )


FRESH = FreshProcess()
