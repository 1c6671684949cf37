"""Stand-in for an older torch-spyre, before provenance (see tests/stand_ins/README.md).

``OpSpec`` has none of main's later fields (no ``debug_handle``) and the scheduling writes no
handle comment.
"""

from pathlib import Path

# the C++ extension's DataFormats are the same in both: ``_C`` comes from gen_main's package
__path__.append(str(Path(__file__).parents[2] / "gen_main" / "torch_spyre"))
