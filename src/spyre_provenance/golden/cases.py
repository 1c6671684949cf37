"""The golden cases: the built-in models compiled one way each, and their manifests.

A case's manifest says how it was made (model, backend, dtype, train, torch) and how to
remake it; nothing time- or machine-dependent goes in. ``manifest_hints`` turns two
manifests into hints (a torch mismatch explains a diff; it never stops the comparison).

Pure: no torch import (torch's version is read from its metadata).
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from spyre_provenance.base.errors import UnusableInput

MANIFEST = "manifest.json"
#: The torch-spyre main commit the ``spyre_main_*`` cases were made on.
TORCH_SPYRE_MAIN = "9a6b71e"
MANIFEST_FORMAT = 1


@dataclasses.dataclass(frozen=True)
class Case:
    """One golden case: a built-in model compiled one way."""

    name: str
    model: str
    backend: str
    dtype: str = "float32"
    train: bool = False
    about: str = ""
    ranks: int = 1  # more: compile --ranks N, the golden holds rank<r>/ folders
    #: an audit case keeps the compile's provenance audit (``compile --audit``), nothing else
    audit: bool = False

    @property
    def needs_torch_spyre(self) -> bool:
        """A case compiled by torch-spyre itself: checked only where it imports."""
        return self.backend == "spyre"

    def compile_args(self) -> list[str]:
        """``spyre-provenance compile`` arguments (defaults left out), without ``--out``."""
        args = [self.model, "--backend", self.backend]
        if self.dtype != "float32":
            args += ["--dtype", self.dtype]
        if self.train:
            args.append("--train")
        if self.ranks > 1:
            args += ["--ranks", str(self.ranks)]
        if self.audit:
            args.append("--audit")
        return args

    def recipe(self) -> dict[str, Any]:
        recipe: dict[str, Any] = {
            "model": self.model,
            "backend": self.backend,
            "dtype": self.dtype,
            "train": self.train,
        }
        if self.ranks > 1:  # single-process cases' manifests stay as they were
            recipe["ranks"] = self.ranks
        return recipe


#: The one list of golden cases (``golden check``/``update`` and the golden tests read it).
CASES: dict[str, Case] = {
    case.name: case
    for case in (
        Case("mlp", "mlp", "reference", about="the seed MLP on the Spyre-modelled reference backend"),
        Case("mlp_fp16", "mlp", "reference", "float16", about="the seed MLP in half precision"),
        Case("mlp_inductor", "mlp", "inductor", about="the seed MLP on stock Inductor (extern GEMMs)"),
        Case("residual", "residual", "reference", about="LayerNorm + residual + softmax: views, reductions"),
        Case("mlp_train", "mlp", "reference", train=True, about="forward and backward graphs"),
        Case(
            "tensor_parallel",
            "tensor_parallel",
            "reference",
            ranks=2,
            about="2 ranks (gloo): column- and row-parallel Linear, the all_reduce a call site",
        ),
        Case(
            "mlp_fp16_audit",
            "mlp",
            "reference",
            "float16",
            audit=True,
            about="the seed MLP's fp16 provenance audit (audit mlp --backend reference --dtype float16)",
        ),
        # made on torch-spyre main itself (its commit in the name); skipped where torch-spyre
        # does not import (docs/torch-spyre-main.md: how to make and check them here)
        Case(
            f"spyre_main_{TORCH_SPYRE_MAIN}_mlp",
            "mlp",
            "spyre",
            "float16",
            about=f"the seed MLP on torch-spyre main {TORCH_SPYRE_MAIN}: one fused kernel, restickifies",
        ),
        Case(
            f"spyre_main_{TORCH_SPYRE_MAIN}_residual",
            "residual",
            "spyre",
            "float16",
            about=f"LayerNorm + residual + softmax on torch-spyre main {TORCH_SPYRE_MAIN}",
        ),
    )
}


def select_cases(names: Sequence[str]) -> list[Case]:
    """The named cases (all when none are named); unknown names are unusable input."""
    unknown = [n for n in names if n not in CASES]
    if unknown:
        raise UnusableInput(unknown[0], f"not a golden case; known: {', '.join(CASES)}")
    return [CASES[n] for n in (names or list(CASES))]


def source_checkout() -> Path | None:
    """The repository this package runs from (an editable install), else None."""
    root = Path(__file__).resolve().parents[3]
    if (root / "pyproject.toml").is_file() and (root / "src" / "spyre_provenance").is_dir():
        return root
    return None


def torch_version() -> str | None:
    """The installed torch's version, read from its metadata (torch is not imported)."""
    try:
        return importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        return None


def make_manifest(recipe: Mapping[str, Any], *, case: str | None = None, how: Mapping[str, str] = {}) -> dict[str, Any]:
    """A case's manifest: what it was compiled from, with which torch, how to remake it.

    Nothing time- or machine-dependent goes in: the same toolchain writes the same bytes.
    """
    manifest: dict[str, Any] = {"format": MANIFEST_FORMAT}
    if case is not None:
        manifest["case"] = case
    manifest.update({k: recipe[k] for k in ("model", "backend", "dtype", "train", "ranks", "audit") if k in recipe})
    manifest["torch"] = torch_version()
    manifest.update(how)
    return manifest


def case_manifest(case: Case) -> dict[str, Any]:
    return make_manifest(
        {**case.recipe(), **({"audit": True} if case.audit else {})},
        case=case.name,
        how={
            "update": f"spyre-provenance golden update {case.name}",
            "compile": "spyre-provenance compile " + " ".join(case.compile_args()) + " --no-tlparse --out DIR",
        },
    )


def manifest_hints(
    expected: Mapping[str, Any] | None, actual: Mapping[str, Any] | None, *, a: str = "A", b: str = "B"
) -> list[str]:
    """What the two manifests say about comparing A with B (toolchain, recipe): hints, never
    differences. A torch mismatch explains a diff; it does not stop the comparison."""
    if not expected or not actual:
        return []
    hints = []
    ta, tb = expected.get("torch"), actual.get("torch")
    if ta and tb and ta != tb:
        hints.append(
            f"{a} was made with torch {ta}, {b} with torch {tb}: differences may come from the "
            "compiler version rather than a regression"
        )
    for key in ("model", "backend", "dtype", "train", "ranks"):
        if key in expected and key in actual and expected[key] != actual[key]:
            hints.append(f"{a} has {key} {json.dumps(expected[key])}, {b} has {json.dumps(actual[key])}")
    return hints
