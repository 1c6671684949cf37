"""Like torch-spyre main's ``execution/async_compile.py``: ``SpyreAsyncCompile.sdsc`` turns a
kernel's OpSpecs into a bundle folder and a runner pointing at it.

Kernel cache off: a fresh ``cache_dir()/inductor-spyre/<uuid8>_<name>_XXXXXXXX/``. On
(``config.spyre_kernel_cache``, unless Inductor's caches are force-disabled): the folder is
``cache_dir()/inductor-spyre-cache/<key>/``, the key a hash of the bundles with
``debug_handle_`` stripped, and a hit returns the existing folder without writing anything,
so its bundles carry the handles of whichever compile wrote them first.

Stand-in only: no backend compiler runs, and the real wrapper calls ``sdsc`` when the
generated module loads, where the stand-in's ``define_kernel`` calls it directly (both before
Inductor's ``dump_inductor_provenance_info``, where the adapter reads the bundles).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import uuid
from collections.abc import Sequence
from typing import Any

import torch
from torch._inductor.runtime.runtime_utils import cache_dir

from torch_spyre._inductor import config as spyre_config
from torch_spyre._inductor.codegen.bundle import bundle_documents, generate_bundle
from torch_spyre._inductor.op_spec import UnimplementedOp

from .kernel_runner import SpyreSDSCKernelRunner, SpyreUnimplementedRunner


def get_output_dir(kernel_name: str) -> str:
    spyre_dir = os.path.join(cache_dir(), "inductor-spyre")
    os.makedirs(spyre_dir, exist_ok=True)
    return tempfile.mkdtemp(dir=spyre_dir, prefix=f"{uuid.uuid4().hex[:8]}_{kernel_name}_")


def _strip_debug_handles(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _strip_debug_handles(v) for k, v in obj.items() if k != "debug_handle_"}
    if isinstance(obj, list):
        return [_strip_debug_handles(v) for v in obj]
    return obj


def compute_specs_hash(specs: Sequence[Any], pool_size: int = 0) -> str:
    parts = [json.dumps(_strip_debug_handles(d), sort_keys=True) for d in bundle_documents(specs)]
    parts.append(f"pool_size:{pool_size}")
    return hashlib.sha256("||".join(parts).encode()).hexdigest()


class SpyreAsyncCompile:
    def sdsc(self, kernel_name: str, specs: Sequence[Any], pool_size: int = 0) -> Any:
        unimplemented = [s for s in specs if isinstance(s, UnimplementedOp)]
        if unimplemented:
            return SpyreUnimplementedRunner(kernel_name, unimplemented[0].op)
        use_cache = spyre_config.spyre_kernel_cache and not torch._inductor.config.force_disable_caches
        if not use_cache:
            output_dir = get_output_dir(kernel_name)
            generate_bundle(kernel_name, output_dir, specs, pool_size=pool_size)
            return SpyreSDSCKernelRunner(kernel_name, output_dir)
        entry = os.path.join(cache_dir(), "inductor-spyre-cache", compute_specs_hash(specs, pool_size))
        if os.path.isfile(os.path.join(entry, "bundle.mlir")):  # a hit: nothing is written
            return SpyreSDSCKernelRunner(kernel_name, entry)
        os.makedirs(os.path.dirname(entry), exist_ok=True)
        staging = tempfile.mkdtemp(dir=os.path.dirname(entry), prefix="tmp_")  # same filesystem: rename is atomic
        generate_bundle(kernel_name, staging, specs, pool_size=pool_size)
        with contextlib.suppress(OSError):  # another process committed the same key first: use theirs
            os.rename(staging, entry)
        return SpyreSDSCKernelRunner(kernel_name, entry)
