"""Stand-in for torch-spyre main with open PR #3449 applied (see tests/stand_ins/README.md).

The PR changes ``_inductor/scheduler.py`` and adds ``_inductor/provenance_artifact.py``; every
other module is main's, so this package's path goes on into gen_main's.
"""

from pathlib import Path

__path__.append(str(Path(__file__).parents[2] / "gen_main" / "torch_spyre"))
