"""The data model every layer shares: names, records, the wire form, detection, folders.

The folder's modules, one line each: docs/contributing.md, *What each folder holds*
(``tests/unit/test_folder_map.py`` holds that map).

Pure: no torch, nothing above ``base/``.
"""
