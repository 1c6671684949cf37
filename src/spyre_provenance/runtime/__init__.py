"""Run time: from the kernel names an engineer meets (device errors, profiler traces,
bundle folders) back to the source, using the artifacts a tracked compile wrote.

The folder's modules, one line each: docs/contributing.md, *What each folder holds*
(``tests/unit/test_folder_map.py`` holds that map).

(``compile.profile``, above this layer, reruns a tracked compile under the profiler: ``compile --profile``)
"""
