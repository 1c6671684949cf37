"""The session's compile worker for torch-spyre main: ``tests/helpers/compile_server.py`` in a
process that booted torch-spyre on the stand-in ``_C`` (``boot.py``) and points the
project's torch-spyre adapter at the route (``route.py``) before the first request.

``argv[1]`` is the reply descriptor (as for compile_server.py); the torch-spyre source is
``$SPYRE_PROVENANCE_TORCH_SPYRE_SOURCE`` (set by the fixture, ``conftest.py``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(TESTS))  # spyre_main, helpers

from spyre_main import boot, route  # noqa: E402

ROUTE = "SPYRE_PROVENANCE_ROUTE"

if __name__ == "__main__":
    boot.boot_from_env()
    if os.environ.get(ROUTE, "1") != "0":  # 0: the product's own placement on spyre, no route
        route.install()
    from spyre_main import untracked
    from spyre_provenance import cli

    tracked = cli.main

    def main(argv: list[str]) -> int:  # ``compile untracked SPEC``: the same compile, no hook
        return untracked.main(argv[2:]) if argv[:2] == ["compile", "untracked"] else tracked(argv)

    cli.main = main
    from helpers import compile_server

    compile_server.main()
