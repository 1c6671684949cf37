"""``python tests/spyre_main/run_booted.py ARGS...``: ``spyre-provenance ARGS...`` with
torch-spyre main booted on the stand-in and the route installed, in this process and in
every process it starts (``site/sitecustomize.py``). How the ``spyre_main_*`` golden
cases are made and checked here (``make golden-spyre-main``):

    python tests/spyre_main/run_booted.py golden update spyre_main_9a6b71e_mlp
    python tests/spyre_main/run_booted.py -m bench.torch_spyre_overhead
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from spyre_main import boot, locate  # noqa: E402


def main() -> int:
    found, why = locate.find()
    if found is None:
        print(f"run_booted: {why}", file=sys.stderr)
        return 2
    mismatch = locate.torch_mismatch(found.source)
    if mismatch is not None:
        print(f"run_booted: {mismatch}", file=sys.stderr)
        return 2
    env = {**boot.inherited(), **boot.environment(found.source, found.tools)}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(HERE / "site"), str(HERE.parent), env.get("PYTHONPATH")) if p)
    boot.install_dxp(found.tools)
    args = sys.argv[1:]
    module = args[1] if args[:1] == ["-m"] else "spyre_provenance"  # -m MODULE: another entry point
    command = [sys.executable, "-m", module, *(args[2:] if args[:1] == ["-m"] else args)]
    os.execve(sys.executable, command, env)
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main())
