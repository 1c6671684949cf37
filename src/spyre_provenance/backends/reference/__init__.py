"""``--backend reference``: the Spyre-modelled stand-in for torch-spyre, on the CPU.

``backend`` (its scheduling and the backend that installs it), ``lowering`` (what it changes
before kernels are made), ``opspecs`` (a kernel's OpSpecs and the bundles made from them),
``sdsc_kernel`` (a kernel's ``.run`` at run time). Importing this package loads no torch;
its ``backend``, ``lowering`` and ``opspecs`` modules do.
"""
