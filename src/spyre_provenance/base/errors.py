"""Exit codes and the verdict they are read from, the one exception type the command line
turns into a one-line error, and the warning a failing provenance stage gives (the compile
goes on). Imports nothing of ours."""

from __future__ import annotations

import dataclasses
import sys
import warnings
from collections.abc import Iterable

EXIT_OK = 0
EXIT_FOUND_WANTING = 1  # invalid artifact, golden mismatch, diff found differences
EXIT_UNUSABLE = 2  # missing file, not JSON, not a log, bad usage

# the three states of a verdict, in order of gravity
OK = "ok"
FOUND_WANTING = "found_wanting"
UNUSABLE = "unusable"
_EXIT = {OK: EXIT_OK, FOUND_WANTING: EXIT_FOUND_WANTING, UNUSABLE: EXIT_UNUSABLE}


@dataclasses.dataclass(frozen=True)
class Verdict:
    """What a check concluded, and why: the one place a conclusion becomes an exit status.

    ``unusable`` outranks ``found_wanting``, which outranks ``ok``; ``reasons`` say what
    made it so (none for ``ok``), one line each."""

    state: str
    reasons: tuple[str, ...] = ()

    @classmethod
    def judge(cls, wanting: Iterable[str] = (), unusable: Iterable[str] = ()) -> Verdict:
        """``unusable`` when a reason makes the input unusable, else ``found_wanting`` when
        something was found wanting, else ``ok``."""
        unusable, wanting = tuple(unusable), tuple(wanting)
        if unusable:
            return cls(UNUSABLE, unusable + wanting)
        return cls(FOUND_WANTING, wanting) if wanting else cls(OK)

    @classmethod
    def of_exit(cls, code: int, reason: str = "") -> Verdict:
        """The verdict a child command's exit status stands for (``golden`` reads its
        compiles' this way); any status but 0, 1 and 2 (a crash, a signal) is unusable."""
        for state, exit_code in _EXIT.items():
            if code == exit_code:
                return cls(state, (reason,) if reason and state != OK else ())
        return cls(UNUSABLE, (reason or f"exit {code}",))

    @property
    def ok(self) -> bool:
        return self.state == OK

    @property
    def exit_code(self) -> int:
        return _EXIT[self.state]


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


def warn(message: str, *, stacklevel: int = 2) -> None:
    """A ``ProvenanceWarning``, where warnings are shown; never an exception. The hook warns
    in the middle of a compile or of a call of the user's model: a program whose filters turn
    warnings into errors (``-W error``, a strict suite) must not have either broken by one.
    Then the line goes to stderr, unless stderr is gone too. ``stacklevel`` as the caller's
    own ``warnings.warn`` would take it."""
    try:
        warnings.warn(message, ProvenanceWarning, stacklevel=stacklevel + 1)
    except Exception:  # noqa: BLE001 - the program's filters made it an error: not ours to raise
        try:
            if sys.stderr is not None:
                sys.stderr.write(f"{message}\n")
        except Exception:  # noqa: BLE001 - stderr closed or replaced: nowhere left to say it
            pass
