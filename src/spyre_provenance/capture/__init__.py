"""Capture: the only code that touches ``torch._inductor`` while a model compiles.

``hook``         the session: two seams in Inductor, the stages, never breaking a compile
``inductor``     everything the session reads from Inductor and hands back (one class)
``emit``         a graph's files in the debug dir and ``--out`` (atomic)
``compile_run``  the one tracked compile, checked against eager

torch is imported only when tracking starts; ``import spyre_provenance.capture.hook`` is cheap.
"""
