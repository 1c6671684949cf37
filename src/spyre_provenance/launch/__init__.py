"""Running programs: ``spyre-provenance run``'s room, above the viewer's layer (its pages)
and below the entry points.

``runner``      the launcher: COMMAND's environment (tracking switched on from outside,
                this environment's ``bin`` first), its signals, the wait; ``Runner``
                returns what the command prints
``early_end``   a process's end, begun while the program is still ending
``run_summary`` a run folder's verdict per process (``validate`` of a run folder prints it too)
``end_report``  the screen and the pages when COMMAND has ended (``viewer.pages`` writes them)

The processes' own side stays with what it touches: the start-up hook beside the package
(``spyre_provenance_startup``), ``capture.attach`` (the session switched on from outside),
``base.environment`` (the variables both sides read), ``model.layout`` (the folders).

Pure: no torch.
"""
