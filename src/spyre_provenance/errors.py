"""Exit codes, the one exception type the command line turns into a one-line error, and
the warning a failing provenance stage gives (the compile goes on). Imports nothing of ours."""

from __future__ import annotations

EXIT_OK = 0
EXIT_FOUND_WANTING = 1  # invalid artifact, golden mismatch, diff found differences
EXIT_UNUSABLE = 2  # missing file, not JSON, not a log, bad usage

# torch is an optional extra: what to install for the commands (and the API) that compile
TORCH_EXTRA = "pip install 'spyre-provenance[compile]'"


class UnusableInput(Exception):
    """Input that cannot be checked at all. ``str(exc)`` is the whole user-facing line."""

    def __init__(self, location: str, what: str) -> None:
        super().__init__(f"{location}: {what}")
        self.location = location
        self.what = what


class UnsupportedTorch(UnusableInput, RuntimeError):
    """The installed torch lacks an Inductor seam tracking needs: ``enable()`` refuses
    before patching anything. ``str(exc)`` is the whole line (``torch 2.99.0: lacks ...``)."""

    def __init__(self, version: str, missing: list[str], tested: str) -> None:
        super().__init__(
            f"torch {version}",
            f"lacks {', '.join(missing)}, which provenance tracking needs (tested with torch {tested})",
        )
        self.missing = list(missing)


class TorchNotInstalled(UnusableInput, ImportError):
    """``enable()`` where torch is not installed at all (a plain ``pip install
    spyre-provenance`` brings only the validator): one line naming the extra, not a
    ModuleNotFoundError from deep inside the hook."""

    def __init__(self) -> None:
        super().__init__("torch", f"not installed; provenance tracking needs it: {TORCH_EXTRA}")
        self.name = "torch"


class ProvenanceWarning(UserWarning):
    """A stage of the hook failed; the compile went on without (part of) the mapping."""
