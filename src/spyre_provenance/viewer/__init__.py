"""``spyre-provenance view``: one self-contained HTML page of an ``--out`` folder.

The model's source lines are captured at compile time (the ``spyre_source_lines``
companion document); an ``--out`` folder's artifacts become the page's one JSON document,
which goes with the CSS and the JavaScript (``assets/``) into one HTML file.

The folder's modules, one line each: docs/contributing.md, *What each folder holds*
(``tests/unit/test_folder_map.py`` holds that map).

Pure: reads artifacts, imports no torch.
"""
