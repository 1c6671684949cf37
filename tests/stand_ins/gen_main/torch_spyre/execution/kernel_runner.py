"""Like torch-spyre main's ``execution/kernel_runner.py``: a compiled kernel's runner keeps
its name and the folder its bundle was compiled in (``kernel_name``, ``code_dir``), which on
a kernel-cache hit is the cache entry of an earlier compile.

Stand-in only: ``body`` is the CPU binding the stand-in's wrapper calls; the real runner
launches the compiled SuperDSC program on the card.
"""

from __future__ import annotations

from typing import Any


class SpyreUnimplementedRunner:
    def __init__(self, name: str, op: str):
        self.kernel_name = name
        self.op = op


class SpyreSDSCKernelRunner:
    def __init__(self, name: str, code_dir: str, kernel_provenance: Any = None, symbol_kinds: Any = None):
        self.kernel_name = name
        self.code_dir = code_dir
        self.kernel_provenance = kernel_provenance
        self.symbol_kinds = symbol_kinds if symbol_kinds is not None else []
