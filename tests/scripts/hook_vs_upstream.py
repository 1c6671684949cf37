"""Compile built-in examples on stock Inductor with the hook on; print ours and upstream's.

Run in a subprocess by tests/compile/test_hook_upstream.py. Upstream's mapping is what torch's own
``dump_inductor_provenance_info`` computes from its own globals during the same compile
(the hook asks it first, then answers with ours).
"""

import json
import sys

import msgspec
import torch

import spyre_provenance
from spyre_provenance.compile.examples import load_model

out = {}
for name in sys.argv[1:]:
    model, inputs = load_model(name, torch.float32)
    torch._dynamo.reset()
    with torch.no_grad(), spyre_provenance.tracking("inductor") as session:
        torch.compile(model)(*inputs)
    out[name] = [
        {
            "kind": g.kind,
            "ours": msgspec.to_builtins(g.node_mappings),
            "upstream": json.loads(json.dumps(g.upstream_node_mappings)),
            "faults": g.diagnostics.faults,
        }
        for g in session.results
    ]
print(json.dumps(out))
