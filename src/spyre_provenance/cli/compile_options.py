"""The options of a compile that ``compile`` and ``audit`` share: MODEL, ``--backend``,
``--out``, ``--dtype``, defined once (help text, choices, defaults), so the two commands
say the same thing the same way. Their defaults are ``compile.request.CompileRequest``'s,
and the API's names: ``backend``, ``out``, ``dtype``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from spyre_provenance.backends import BACKEND_NAMES, DEFAULT_BACKEND
from spyre_provenance.compile.request import DTYPES


def add_model_options(parser: argparse.ArgumentParser) -> None:
    """MODEL, ``--backend``, ``--out``, ``--dtype``, in ``--help``'s order."""
    parser.add_argument("model", metavar="MODEL", help="built-in example (mlp, residual, ...) or PATH.py:FACTORY")
    parser.add_argument(
        "--backend",
        choices=BACKEND_NAMES,
        default=DEFAULT_BACKEND,
        help="auto = torch-spyre when the adapter can install on it, else the reference "
        "backend (the choice and its reason are printed)",
    )
    parser.add_argument("--out", type=Path, default=None, help="output folder (default: out/<model>)")
    parser.add_argument(
        "--dtype",
        choices=DTYPES,
        default=None,
        help="cast the model and its floating-point inputs (default: float32 for built-in models, "
        "a PATH.py:FACTORY model as its factory builds it)",
    )
