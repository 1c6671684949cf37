"""Like torch-spyre's ``_inductor/config.py``, the settings the adapter cares about.

``ktir_emitter``: kernels are named ``ktir_...`` (and written as ``.ktir`` files) instead of
``sdsc_...``; tests flip it to check that nothing assumes the ``sdsc_`` prefix.

``spyre_kernel_cache``: bundles go to the persistent kernel cache keyed on the specs without
their debug handles (``execution/async_compile.py``); env ``SPYRE_KERNEL_CACHE``.
"""

import os

ktir_emitter = False
spyre_kernel_cache = os.environ.get("SPYRE_KERNEL_CACHE", "0") == "1"
