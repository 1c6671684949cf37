"""Reading what torch wrote: TORCH_TRACE logs, the graphs in them, wrapper code, tlparse.

The folder's modules, one line each: docs/contributing.md, *What each folder holds*
(``tests/unit/test_folder_map.py`` holds that map).

Pure: no torch.
"""
