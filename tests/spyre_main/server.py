"""The session's compile worker for torch-spyre main: ``tests/compile_server.py`` in a
process that booted torch-spyre on the stand-in ``_C`` (``boot.py``) and points the
project's torch-spyre adapter at the route (``route.py``) before the first request.

``argv[1]`` is the reply descriptor (as for compile_server.py); the torch-spyre source is
``$SPYRE_PROVENANCE_TORCH_SPYRE_SOURCE`` (set by the fixture, ``conftest.py``).
"""

from __future__ import annotations

import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(TESTS))  # spyre_main, compile_server, where

from spyre_main import boot, route  # noqa: E402

if __name__ == "__main__":
    boot.boot_from_env()
    route.install()
    import compile_server

    compile_server.main()
