"""Like torch-spyre's ``_inductor/config.py``, the one setting the adapter cares about.

``ktir_emitter``: kernels are named ``ktir_...`` (and written as ``.ktir`` files) instead of
``sdsc_...``; tests flip it to check that nothing assumes the ``sdsc_`` prefix.
"""

ktir_emitter = False
