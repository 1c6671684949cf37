"""The model's source lines that made a graph's kernels, captured when the graph compiles.

A kernel's lines are the frames of its stack traces (``kernel_stack_traces``) and the
sources of its OpSpecs' debug handles, fused-from children included. ``snapshot`` reads
those lines with ``SOURCE_CONTEXT`` lines on each side into the ``spyre_source_lines``
document, so the viewer shows them where the file has since changed or is absent.

Pure: no torch (``snapshot`` reads the source files themselves).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from spyre_provenance.base.errors import UnusableInput
from spyre_provenance.model.frames import frames
from spyre_provenance.model.names import SOURCE_CONTEXT, SOURCE_LINES
from spyre_provenance.validate import schemas

SOURCE_LINES_VERSION = 1


def problem(doc: Any) -> str | None:
    """What makes ``doc`` no ``spyre_source_lines`` document of a version this release
    reads (``$.path: what is wrong``), or None. Checked by the schema, the source of truth
    (the document is small), before it is written and when it is read."""
    import jsonschema

    version = doc.get("version") if isinstance(doc, dict) else None
    if version not in schemas.available_versions(SOURCE_LINES):
        return f"$.version: {version!r} is no version of {SOURCE_LINES} this release reads"
    error = jsonschema.exceptions.best_match(
        jsonschema.Draft202012Validator(schemas.load_schema(SOURCE_LINES, version)).iter_errors(doc)
    )
    if error is None:
        return None
    where = "$" + "".join(f"[{p!r}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
    return f"{where}: {error.message}"


def text_problem(data: bytes) -> str | None:
    """``problem`` of the text the hook is about to write (``path: what is wrong``), on the
    fast engine: the schema's verdict (tests/unit/test_validator_agreement.py) without
    importing jsonschema, 0.1 s, into every tracked process. A reader keeps ``problem``,
    whose words are the schema's own."""
    try:
        report = schemas.validate_bytes(data, SOURCE_LINES)
    except UnusableInput as exc:
        return exc.what
    return None if report.ok else str(report.problems[0])


def file_problem(data: bytes, doc: Any) -> str | None:
    """``problem`` of a file's text ``data``, parsed as ``doc``: the fast engine's verdict
    (the schema's), in the schema's words when it refuses the document, so jsonschema is
    imported only then, not by every ``run`` that writes a viewer page."""
    wrong = text_problem(data)
    return None if wrong is None else problem(doc) or wrong


def handle_lines(handle: Mapping[str, Any] | None, handles: Mapping[str, Any]) -> Iterator[tuple[str, int]]:
    """(file, line) of a debug handle's source and of its fused-from children's, depth first.

    A child is an id into ``handles`` (the OpSpec artifact) or a handle itself (a bundle's
    ``debug_handle_``)."""
    if not isinstance(handle, Mapping):
        return
    source = handle.get("source")
    if (
        isinstance(source, Mapping)
        and isinstance(source.get("file"), str)
        and isinstance(source.get("start_line"), int)
    ):
        end = source.get("end_line")
        last = end if isinstance(end, int) and end >= source["start_line"] else source["start_line"]
        for line in range(source["start_line"], min(last, source["start_line"] + 50) + 1):
            yield source["file"], line
    for child in handle.get("fused_from") or ():
        yield from handle_lines(handles.get(child) if isinstance(child, str) else child, handles)


def kernel_lines(
    key: str, stack_traces: Mapping[str, Any] | None, opspecs: Mapping[str, Any] | None
) -> list[tuple[str, int]]:
    """The (file, line) pairs call site ``key`` was made from, in first-seen order, once each."""
    found: dict[tuple[str, int], None] = {}
    for trace in (stack_traces or {}).get(key) or ():
        if isinstance(trace, str):
            found.update(dict.fromkeys((f.file, f.line) for f in frames(trace)))
    handles = (opspecs or {}).get("handles") or {}
    for spec in ((opspecs or {}).get("kernels") or {}).get(key) or ():
        if isinstance(spec, Mapping):
            found.update(dict.fromkeys(handle_lines(handles.get(spec.get("debug_handle")), handles)))
    return list(found)


def made_lines(stack_traces: Mapping[str, Any] | None, opspecs: Mapping[str, Any] | None) -> dict[str, set[int]]:
    """file -> the lines that made any of the graph's kernels."""
    keys: Iterable[str] = [*(stack_traces or {}), *((opspecs or {}).get("kernels") or {})]
    made: dict[str, set[int]] = {}
    for key in dict.fromkeys(keys):
        for file, line in kernel_lines(key, stack_traces, opspecs):
            made.setdefault(file, set()).add(line)
    return made


def snapshot(made: Mapping[str, set[int]], context: int = SOURCE_CONTEXT) -> dict[str, Any]:
    """The ``spyre_source_lines`` document: each file's made lines and their context, read now."""
    files: dict[str, Any] = {}
    for file in sorted(made):
        lines = sorted(made[file])
        try:
            text = Path(file).read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError as exc:
            files[file] = {"made": lines, "lines": {}, "error": exc.strerror or type(exc).__name__}
            continue
        kept = sorted({n for line in lines for n in range(line - context, line + context + 1) if 1 <= n <= len(text)})
        files[file] = {"made": lines, "lines": {str(n): text[n - 1] for n in kept}, "error": None}
    return {"version": SOURCE_LINES_VERSION, "context": context, "files": files}
