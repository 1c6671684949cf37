"""Capture: the only code that touches ``torch._inductor`` while a model compiles.

``tracking``     the API: enable, disable, tracking (one session at a time, torch checked first)
``hook``         the session: two seams in Inductor, the stages of a graph
``faults``       never breaking a compile: a stage's failure kept per graph, warned once
``inductor_setup``  Inductor as tracking needs it: fallbacks announced, audit observers (caches off for it)
``graph_cache``  Inductor's caches kept on: tracked entries keyed apart, provenance stored and replayed
``inductor``     everything the session reads from Inductor and hands back (one class)
``emit``         a graph's files in the debug dir and ``--out`` (atomic)
``audit_probe``  the audit's field counts, from the live objects

The compile around it (request, run, checks, profile, ranks) is ``spyre_provenance.compile``.

torch is imported only when tracking starts; ``import spyre_provenance.capture.tracking`` is cheap.
"""
