"""Running programs: ``spyre-provenance run``'s room, above the viewer's layer (its pages)
and below the entry points.

The folder's modules, one line each: docs/contributing.md, *What each folder holds*
(``tests/unit/test_folder_map.py`` holds that map).

The processes' own side stays with what it touches: the start-up hook beside the package
(``spyre_provenance_startup``), ``capture.attach`` (the session switched on from outside),
``base.environment`` (the variables both sides read), ``model.layout`` (the folders).

Pure: no torch.
"""
