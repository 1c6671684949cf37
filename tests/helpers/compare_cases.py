"""The compiles ``compare`` is tested on (issue 46 point 5), shared by the test modules that
read them (``tests/compile/test_compare.py``, ``tests/browser/test_viewer_compare.py``): a
model edited at one line, and a model whose prefill and decode are two compiles.

The model files are written once per session at one place under the session's base temp
folder, so the compile arguments (their paths) are the same in every module and
``compile_case`` compiles each once per session."""

from __future__ import annotations

from pathlib import Path

import pytest

_MODEL = """import torch
from torch import nn


class Edited(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(64, 64)
        self.fc2 = nn.Linear(64, 64)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc1(x)
        h = torch.relu(h)
{inserted}        h = self.fc2(h)
        h = h * 0.5
        return torch.softmax(h, dim=-1)


def build():
    torch.manual_seed(0)
    # 2-D: torch-spyre main names the op a batched linear reads by that linear (its handle's
    # origin_node is the linear's no-op expand, docs/torch-spyre-main.md), which would move
    # the relu's OpSpec to fc2's line in both compiles; here each op keeps its own line
    return Edited(), (torch.randn(8, 64),)
"""
INSERTED = "        h = torch.nn.functional.gelu(h)\n"

_PHASES = '''import torch
from torch import nn


class Phases(nn.Module):
    """Prefill mixes the sequence, a decode step (one token) does not: two compiles."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(64, 64)
        self.out = nn.Linear(64, 64)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.proj(x)
        if x.shape[1] > 1:
            h = torch.softmax(h, dim=1)
        else:
            h = torch.relu(h)
        return self.out(h)


def build():
    torch.manual_seed(0)
    return Phases(), [(torch.randn(2, 4, 64),), (torch.randn(2, 1, 64),)]
'''


def model_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The models' files (written on the first call of the session): ``before``, ``after``
    (the edited model, one line inserted) and ``phases``."""
    root = tmp_path_factory.getbasetemp() / "compare-models"
    files = {
        "before": (root / "before" / "edited.py", _MODEL.format(inserted="")),
        "after": (root / "after" / "edited.py", _MODEL.format(inserted=INSERTED)),
        "phases": (root / "phases.py", _PHASES),
    }
    for path, text in files.values():
        if not path.is_file():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    return {name: path for name, (path, _) in files.items()}


def edited_args(models: dict[str, Path]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``compile_case``'s arguments of the edited model, before and after."""
    return (f"{models['before']}:build", "--no-tlparse"), (f"{models['after']}:build", "--no-tlparse")


def phases_args(models: dict[str, Path]) -> tuple[str, ...]:
    """``compile_case``'s arguments of prefill and decode (two compile ids, profiled)."""
    return (f"{models['phases']}:build", "--no-tlparse", "--profile")
