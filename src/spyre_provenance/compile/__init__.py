"""The compile: one request in, its outcome and verdict out, every entry point's.

``job``           ``compile_request``: the one door (a single process, a rank, ``--ranks N``)
``tracked``       the tracked ``torch.compile`` of a model, checked against eager
``profile``       ``compile --profile``: the compiled model once more under torch.profiler
``output_check``  what a compile wrote, re-read: artifacts validated, coverage judged on the log
``audit_files``   the provenance audit files of a compile, built and written
``ranks``         ``compile --ranks N``: the parent of the rank processes
``process_group`` a rank of ``compile --ranks N``: joining and leaving its gloo group
``summary``       what the command line prints after a compile

Inductor itself is touched only below this folder, in ``capture``. torch is imported
inside the functions that compile: ``import spyre_provenance.compile.job`` is cheap.
"""
