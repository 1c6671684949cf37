"""The compile: one request in, its outcome and verdict out, every entry point's.

``job.compile_request`` is the one door (a single process, a rank, ``--ranks N``).

The folder's modules, one line each: docs/contributing.md, *What each folder holds*
(``tests/unit/test_folder_map.py`` holds that map).

Inductor itself is touched only below this folder, in ``capture``. torch is imported
inside the functions that compile: ``import spyre_provenance.compile.job`` is cheap.
"""
