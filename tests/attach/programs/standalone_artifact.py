"""vLLM's compile path without vLLM: ``standalone_compile`` then ``CompiledArtifact.save``
(``save PATH``), or a fresh process that only loads what was saved and calls it
(``load PATH``). Tracked from outside (``SPYRE_PROVENANCE_OUT``); prints the output's sum,
so a caller can check a tracked run computes what a plain one does."""

from __future__ import annotations

import sys

import torch


class Model(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(8, 16)
        self.fc2 = torch.nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.fc1(x)))


def main(action: str, path: str) -> None:
    torch.manual_seed(0)
    model = Model().eval()
    x = torch.randn(2, 8)
    with torch.no_grad():
        if action == "save":
            graph, inputs = dynamo_graph(model, x)
            compiled = torch._inductor.standalone_compile(graph, inputs, dynamic_shapes="from_graph")
            compiled.save(path=path, format="unpacked")
        else:
            compiled = torch._inductor.CompiledArtifact.load(path=path, format="unpacked")
            # the captured graph's inputs, in the order it first uses them
            inputs = [model.fc1.weight, model.fc1.bias, x, model.fc2.weight, model.fc2.bias]
        out = compiled(*inputs)
    out = out[0] if isinstance(out, (tuple, list)) else out
    print(f"sum {float(out.sum()):.6f}")


def dynamo_graph(model: torch.nn.Module, x: torch.Tensor) -> tuple[torch.fx.GraphModule, list]:
    """The graph Dynamo hands a backend, and its inputs, as vLLM gets them: parameters
    lifted to inputs, so the graph holds no module."""
    captured = []

    def backend(gm: torch.fx.GraphModule, example_inputs: list) -> object:
        captured.append((gm, example_inputs))
        return gm.forward

    torch.compile(model, backend=backend, fullgraph=True)(x)
    return captured[0]


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
