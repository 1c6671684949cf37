"""A user's strict suite: a compiled function, and a block whose provenance is held by the
``provenance_regression`` fixture (spyre-provenance's pytest plugin)."""

import torch


def test_a_compiled_function():
    f = torch.compile(lambda x: torch.relu(x) * 2)
    x = torch.arange(-3.0, 3.0)
    assert torch.equal(f(x), torch.relu(x) * 2)


def test_the_block_keeps_its_provenance(provenance_regression):
    torch.manual_seed(0)
    block = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.ReLU())
    provenance_regression.check(block, (torch.randn(2, 8),), backend="inductor")
