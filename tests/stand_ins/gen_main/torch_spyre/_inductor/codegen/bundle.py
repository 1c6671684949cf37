"""Like torch-spyre main's ``_inductor/codegen/bundle.py``: ``generate_bundle`` writes one
``sdsc_<i>.json`` per OpSpec (depth first through ``LoopSpec`` bodies) and a ``bundle.mlir``.

Each ``sdsc_<i>.json`` is ``{"<i>_<op>": {"debug_handle_": handle.to_dict() or null, ...}}``:
the handle is the only source information a bundle carries. Stand-in only: the device spec
around it is a few fields, and ``bundle.mlir`` a comment naming the files.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

from torch_spyre._inductor.op_spec import LoopSpec, OpSpec


def flatten(specs: Sequence[Any]) -> list[OpSpec]:
    out: list[OpSpec] = []
    for spec in specs:
        if isinstance(spec, LoopSpec):
            out.extend(flatten(spec.body))
        elif isinstance(spec, OpSpec):
            out.append(spec)
    return out


def bundle_documents(specs: Sequence[Any]) -> list[dict[str, Any]]:
    documents = []
    for i, spec in enumerate(flatten(specs)):
        body = {
            "debug_handle_": spec.debug_handle.to_dict() if spec.debug_handle is not None else None,
            "opfunc": spec.op,
            "reduction": spec.is_reduction,
            "iteration_space": {str(k): [str(v[0]), v[1]] for k, v in spec.iteration_space.items()},
            "num_tensors": len(spec.args),
        }
        documents.append({f"{i}_{spec.op}": body})
    return documents


def generate_bundle(kernel_name: str, output_dir: str, specs: Sequence[Any], pool_size: int = 0) -> list[Any]:
    documents = bundle_documents(specs)
    for i, document in enumerate(documents):
        with open(os.path.join(output_dir, f"sdsc_{i}.json"), "w") as f:
            json.dump(document, f, indent=2)
    with open(os.path.join(output_dir, "bundle.mlir"), "w") as f:
        f.write(f"// {kernel_name}: {len(documents)} SuperDSC specs, pool {pool_size} bytes\n")
    return []  # the real one returns the bundle's SymbolKinds
