"""Stand-in for an older torch-spyre, before provenance (see tests/stand_ins/README.md).

``OpSpec`` has none of main's later fields (no ``debug_handle``) and the scheduling writes no
handle comment.
"""
