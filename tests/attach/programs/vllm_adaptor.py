"""vLLM 0.27.1's own compile adaptor, unmodified (``InductorStandaloneAdaptor``), on a graph
Dynamo captured: ``compile DIR`` compiles and saves into vLLM's cache folder
(``CompiledArtifact.save``, with VLLM_USE_MEGA_AOT_ARTIFACT=0), ``load DIR`` loads it back
and calls it (no compile); ``aot FILE`` compiles to vLLM's mega AOT artifact (the default
on torch 2.12 and newer) and writes its ``serialize()`` bytes, ``aot-load FILE`` rebuilds it
from those bytes and calls it. Prints the output's sum, the same tracked or plain."""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from standalone_artifact import Model, dynamo_graph
from vllm.compilation.compiler_interface import InductorStandaloneAdaptor
from vllm.config.utils import Range

KEY = "graph_0"


def main(action: str, where: str) -> None:
    torch.manual_seed(0)
    model = Model().eval()
    x = torch.randn(2, 8)
    with torch.no_grad():
        graph, inputs = dynamo_graph(model, x)
        adaptor = InductorStandaloneAdaptor("unpacked")
        adaptor.initialize_cache(where)
        size = Range(start=2, end=2)
        if action == "load":
            compiled = adaptor.load((KEY, f"{where}/{KEY}"), graph, inputs, 0, size)
        elif action == "aot-load":
            from torch._inductor.standalone_compile import AOTCompiledArtifact

            compiled = AOTCompiledArtifact.deserialize(Path(where).read_bytes())
        else:
            compiled, _ = adaptor.compile(graph, inputs, {}, size, key=KEY)
            if action == "aot":
                Path(where).write_bytes(compiled.serialize())
        out = compiled(*inputs)
    out = out[0] if isinstance(out, (tuple, list)) else out
    print(f"sum {float(out.sum()):.6f}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
