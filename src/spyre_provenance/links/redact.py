"""Redact machine-specific paths (and so user names) from provenance artifacts.

Stack traces carry absolute paths: ``/home/alice/proj/model.py``, ``/home/alice/.venv/lib/
python3.11/site-packages/torch/nn/modules/linear.py``. ``spyre-provenance compile
--redact-paths`` rewrites every path in the artifacts it writes and emits:

==================================  =====================================
``.../site-packages/torch/x.py``    ``<site-packages>/torch/x.py`` (also ``dist-packages``)
this package, also from a checkout  ``<site-packages>/spyre_provenance/compile/examples.py``
the standard library                ``<stdlib>/json/decoder.py``
the project (see below)             ``<project>/model.py``
the home folder                     ``~/data/model.py``
any other path naming the user      ``/scratch/<user>/model.py``
==================================  =====================================

Longer prefixes win: a project inside the home folder is ``<project>/``, a virtualenv inside
the project is ``<site-packages>/``. The project is the nearest folder at or above the
model's file (``PATH.py:FACTORY``), else the current folder, holding ``.git`` or
``pyproject.toml`` (else that folder itself; never ``/`` or the home folder). This package's
own files read the same whether it is installed or run from a source checkout. Paths are rewritten wherever they appear in the text: in
``File "..."`` frames, in source lines and in error messages. Only whole path components
are replaced (``/work/main`` is not a prefix of ``/work/mainline``).

Pure module, no torch. ``Redactor.default()`` is the rule set above; ``Redactor(...)`` takes
other roots and prefixes, so other normalizers (golden files) can reuse ``redact_text`` and
``redact_path`` with their own conventions (``project_prefix=""`` gives project-relative
paths, the golden files' form).
"""

from __future__ import annotations

import dataclasses
import getpass
import os
import re
import sysconfig
from collections.abc import Iterable
from pathlib import Path

import msgspec

from spyre_provenance.model.records import MisnamedHandle

# an absolute path up to and including its site-packages (or dist-packages) folder
_PACKAGES = re.compile(r"""(?:[A-Za-z]:)?[/\\][^\s"'`]*?[/\\](?:site|dist)-packages[/\\]""")
PROJECT_MARKERS = (".git", "pyproject.toml")


def shown_path(path: str) -> str:
    """A path as a summary line shows it: relative to the current folder when under it,
    ``<site-packages>/...`` inside an installed package, else as it is."""
    try:
        relative = os.path.relpath(path)
    except ValueError:  # another drive
        relative = os.pardir
    if not relative.startswith(os.pardir):
        return relative
    return _PACKAGES.sub("<site-packages>/", path, count=1)


@dataclasses.dataclass(frozen=True)
class Redactor:
    """Rewrites absolute paths: ``(prefix, replacement)`` rules, longest prefix first."""

    rules: tuple[tuple[str, str], ...] = ()
    user: str | None = None
    packages_prefix: str = "<site-packages>/"

    @classmethod
    def default(
        cls,
        project: str | os.PathLike[str] | None = None,
        *,
        home: str | os.PathLike[str] | None = None,
        user: str | None = None,
        project_prefix: str = "<project>/",
    ) -> Redactor:
        """The documented rules: ``project`` (default: found from the current folder), the
        standard library, ``home`` (default: ``~``), the user name (default: the login)."""
        home_dir = Path(home) if home is not None else Path.home()
        project_dir = Path(project) if project is not None else find_project(Path.cwd(), home_dir)
        rules: list[tuple[str, str]] = []
        if project_dir is not None:
            rules += [(p, project_prefix) for p in path_variants([project_dir])]
        package_root = Path(__file__).resolve().parents[2]  # links/redact.py -> the folder holding spyre_provenance/
        rules += [(p, "<site-packages>/") for p in path_variants([package_root])]
        stdlib = sysconfig.get_paths().get("stdlib")
        rules += [(p, "<stdlib>/") for p in path_variants([stdlib] if stdlib else [])]
        rules += [(p, "~/") for p in path_variants([home_dir])]
        rules = sorted(dict(rules).items(), key=lambda rule: -len(rule[0]))
        return cls(tuple(rules), user if user is not None else _login())

    # -- text ------------------------------------------------------------------------------

    def redact_text(self, text: str) -> str:
        """Every absolute path in ``text`` rewritten (stack traces, messages, file names)."""
        text = _PACKAGES.sub(lambda m: self.packages_prefix, text)
        for prefix, replacement in self.rules:
            if prefix in text:
                text = _replace_prefix(text, prefix, replacement)
        if self.user and len(self.user) > 1:
            text = re.sub(rf"(?<=[/\\]){re.escape(self.user)}(?=[/\\])", "<user>", text)
        return text

    def redact_path(self, path: str) -> str:
        """One path (a handle's ``source.file``); a path equal to a root becomes the root's
        name (``<project>``)."""
        for prefix, replacement in self.rules:
            if path == prefix.rstrip("/"):
                return replacement.rstrip("/") or "."
        return self.redact_text(path)

    # -- each kind's redaction (its record's ``redact``, in its module in ``validate/kinds/``)
    # is made of redact_text, redact_path and redact_line; no kind is named here.

    def misnamed_handle(self, misnamed: MisnamedHandle) -> MisnamedHandle:
        """A misnamed handle's record (the diagnostics', before it is written) with its lines
        redacted as its handle's source is in the OpSpec table."""
        return msgspec.structs.replace(
            misnamed,
            handle_line=None if misnamed.handle_line is None else self.redact_line(misnamed.handle_line),
            node_lines=[self.redact_line(line) for line in misnamed.node_lines],
        )

    def redact_line(self, line: str) -> str:
        """``file:line`` with its file redacted as a handle's source file is."""
        file, colon, number = line.rpartition(":")
        return self.redact_path(file) + colon + number if colon else self.redact_path(line)


def find_project(start: Path, home: Path | None = None) -> Path | None:
    """The nearest folder at or above ``start`` with ``.git`` or ``pyproject.toml``, else
    ``start``; None when that would be ``/`` or the home folder (everything would be the
    project)."""
    start = Path(os.path.abspath(start))
    found = next((d for d in (start, *start.parents) if any((d / m).exists() for m in PROJECT_MARKERS)), start)
    too_wide = {Path(found.anchor)} | ({Path(os.path.abspath(home))} if home is not None else set())
    return None if found in too_wide else found


def redact_text(text: str, redactor: Redactor | None = None) -> str:
    """``text`` with the default rules (or ``redactor``'s) applied."""
    return (redactor or Redactor.default()).redact_text(text)


def _replace_prefix(text: str, prefix: str, replacement: str) -> str:
    """Replace ``prefix`` (ending in a separator) where it starts a path: at the start of
    the text or after a quote, a blank, a bracket or ``=``."""
    return re.sub(rf"""(?:^|(?<=[\s"'`(\[=:])){re.escape(prefix)}""", lambda m: replacement, text, flags=re.MULTILINE)


def path_variants(paths: Iterable[str | os.PathLike[str]]) -> list[str]:
    """Each path as given and resolved (symlinks), with one trailing separator."""
    out: list[str] = []
    for path in paths:
        for form in (os.path.abspath(path), os.path.realpath(path)):
            form = form.rstrip("/\\") + "/"
            if len(form) > 1 and form not in out:
                out.append(form)
    return out


def _login() -> str | None:
    try:
        return getpass.getuser()
    except Exception:  # noqa: BLE001 - no user database (containers): nothing to redact by name
        return None
