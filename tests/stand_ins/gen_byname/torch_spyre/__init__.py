"""Stand-in for torch-spyre main holding the tracing function by name: no release does this
(see tests/stand_ins/README.md for why the case is kept).

Only ``_inductor/scheduler.py`` differs from main; every other module is main's, so this
package's path goes on into gen_main's.
"""

from pathlib import Path

__path__.append(str(Path(__file__).parents[2] / "gen_main" / "torch_spyre"))
