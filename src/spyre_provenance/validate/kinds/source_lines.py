"""The viewer's source lines (``spyre_source_lines``): the model's lines that made a graph's
kernels, with context, read at compile time. A companion document: written beside a graph's
artifacts, neither logged nor compared by golden files.

Its record and every part of it: a ``version`` key, told by its file name only, a fast
decoder (it is checked in every tracked process as the hook writes it) and the integers,
line keys and unique made lines the wire types leave open; its schema says the rest.

Pure: no torch, no jsonschema.
"""

from __future__ import annotations

import re

from spyre_provenance.model import wire
from spyre_provenance.model.detect import Problem, key_path, quote, versions
from spyre_provenance.model.names import KINDS as FILINGS
from spyre_provenance.model.names import SOURCE_LINES
from spyre_provenance.model.wire import SourceLinesDoc
from spyre_provenance.validate.decoding import MISSING, Decoded, Decoding, add, tally, tally_keys
from spyre_provenance.validate.kind import Kind, as_is, as_parsed, no_rules
from spyre_provenance.validate.rules import first_duplicate

read_version = versions(1)


# --- the two decoders ------------------------------------------------------------------------


def fast(run: Decoding) -> Decoded:
    """The viewer's source lines: small, but checked in every tracked process as the hook
    writes them, where importing jsonschema alone would cost more than the compile's check."""
    det, version = run.versioned(SOURCE_LINES, read_version)
    if det.schema is None:
        return det, None, None
    top = run.top()
    run.keys_of(wire.SourceLinesDoc.__struct_fields__)
    context = run.decode(top["context"], int | float, "$.context") if "context" in top else MISSING
    files = run.decode_map(top["files"], wire.SourceLinesFile, "$.files") if "files" in top else MISSING
    if run.problems:
        return det, None, None
    doc = wire.SourceLinesDoc(version, context, files)
    run.problems.extend(check_types(doc))
    if run.problems:
        return det, None, None
    return det, doc, add(tally_keys(top), tally(files))


# --- the rules -------------------------------------------------------------------------------


LINE_NUMBER_PATTERN = r"^[1-9][0-9]*$"  # spyre_source_lines' line keys, applied as jsonschema does (re.search)
LINE_NUMBER_RE = re.compile(LINE_NUMBER_PATTERN)


def check_types(doc: SourceLinesDoc) -> list[Problem]:
    """What the spyre_source_lines schema says about integers, line keys and unique made
    lines that the wire types leave open, worded as the full path words them."""
    problems = _at_least(doc.context, 0, "$.context")
    for file, entry in doc.files.items():
        base = key_path("$.files", file)
        for i, line in enumerate(entry.made):
            problems += _at_least(line, 1, f"{base}.made[{i}]")
        if len(set(entry.made)) != len(entry.made):  # 3 and 3.0 are one number, as in JSON Schema
            problems.append(Problem(f"{base}.made", f"duplicate entry {quote(first_duplicate(entry.made))}"))
        problems += [
            Problem(key_path(f"{base}.lines", n), f"does not match {LINE_NUMBER_PATTERN}")
            for n in entry.lines
            if not LINE_NUMBER_RE.search(n)
        ]
    return problems


def _at_least(value: float, least: int, path: str) -> list[Problem]:
    if isinstance(value, float) and not value.is_integer():
        return [Problem(path, "expected integer, got number")]
    return [Problem(path, f"must be >= {least}, got {quote(value)}")] if value < least else []


KIND = Kind(
    FILINGS[SOURCE_LINES],
    version=read_version,
    current="1",
    fast=fast,
    full=as_parsed,
    rules=no_rules,
    normalize=as_is,
    redact=as_is,
    shape=None,  # told by its file name only
)
