"""Capture: the only code that touches ``torch._inductor`` while a model compiles.

The folder's modules, one line each: docs/contributing.md, *What each folder holds*
(``tests/unit/test_folder_map.py`` holds that map).

The compile around it (request, run, checks, profile, ranks) is ``spyre_provenance.compile``.

torch is imported only when tracking starts; ``import spyre_provenance.capture.tracking`` is cheap.
"""
