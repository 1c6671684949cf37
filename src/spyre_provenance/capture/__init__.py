"""Capture: the only code that touches ``torch._inductor`` while a model compiles.

``tracking``     the API: enable, disable, tracking (one session at a time, torch checked first)
``hook``         the session: two seams in Inductor, the stages, never breaking a compile
``inductor``     everything the session reads from Inductor and hands back (one class)
``emit``         a graph's files in the debug dir and ``--out`` (atomic)
``compile_run``  the one tracked compile, checked against eager
``compile_job``  a compile request in, its outcome and verdict out (every entry point's compile)
``output_check`` what a compile wrote, re-read: artifacts validated, coverage judged on the log
``audit_files``  the provenance audit files of a compile, built and written
``profiled_run`` ``compile --profile``: the compiled model once more under torch.profiler

torch is imported only when tracking starts; ``import spyre_provenance.capture.tracking`` is cheap.
"""
