"""Validation: the JSON Schemas and the rules, on two engines with one verdict.

The folder's modules, one line each: docs/contributing.md, *What each folder holds*
(``tests/unit/test_folder_map.py`` holds that map).

Pure: no torch.
"""
