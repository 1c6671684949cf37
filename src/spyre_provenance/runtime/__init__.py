"""Run time: from the kernel names an engineer meets (device errors, profiler traces,
bundle folders) back to the source, using the artifacts a tracked compile wrote.

``kernel_names``  the name forms and how a copied name resolves to a known kernel
``index``         every call site of a set of --out folders and TORCH_TRACE logs
``lookup``        one name -> every matching kernel's provenance (``model.lookup_records`` records)
``render``        that answer as text
``trace_stream``  Chrome trace JSON read and written event by event (bounded memory)
``attribution``   which call site of which graph ran a profiler event, from evidence
``annotate``      a torch.profiler trace with each kernel event's provenance in ``args``
``time_summary``  kernel time per source line and per module (``annotate --summary``)
``time_screen``   that summary as text on one screen: the heaviest lines, kernels, module calls
``compare``       two compiles side by side per source line: the rule, over typed records
``compare_folders`` a side of it read from a folder (``compare A B``, the viewer's ``--compare``)
``compare_render``  a comparison as text, CSV or JSON
(``compile.profile``, above this layer, reruns a tracked compile under the profiler: ``compile --profile``)
"""
