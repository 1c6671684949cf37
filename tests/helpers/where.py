"""Where the tests' inputs are, from any test folder: the checkout and its parts.

Test modules live in folders by kind (``unit/``, ``compile/``, ...); what they read lives
beside the test folders (``data/``, ``zoo/``, ``stand_ins/``, ``scripts/``) or in the checkout.
"""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]  # this file is in tests/helpers/
REPO = TESTS.parent
PACKAGE = REPO / "src" / "spyre_provenance"
GOLDEN = REPO / "golden"
SCHEMAS = REPO / "schemas"
DATA = TESTS / "data"
ZOO = TESTS / "zoo"
STAND_INS = TESTS / "stand_ins"
SCRIPTS = TESTS / "scripts"


def golden_graphs(case: str, into: Path) -> Path:
    """A copy of golden case ``case``'s graph folders in ``into`` (an out folder a test may
    write in), returned."""
    import shutil

    for sub in (GOLDEN / case).glob("graph_*"):
        shutil.copytree(sub, into / sub.name)
    return into


def regressions(module: Path) -> Path:
    """The pytest-regressions data folder of a test module (``data/regressions/<stem>``)."""
    return DATA / "regressions" / Path(module).stem


def on_measured_torch() -> bool:
    """Whether this is the torch the goldens and figures were made with (2.13.0), not one of
    ``make test-torch-next``'s."""
    import importlib.metadata

    return importlib.metadata.version("torch").startswith("2.13.")
