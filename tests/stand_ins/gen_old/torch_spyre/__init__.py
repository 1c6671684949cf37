"""Stand-in for torch-spyre, older generation (see tests/stand_ins/README.md).

No provenance: ``OpSpec`` has no ``debug_handle`` and the scheduling writes no handle comment.
"""
