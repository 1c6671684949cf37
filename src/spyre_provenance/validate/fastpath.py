"""The fast validation path: msgspec typed decode + the invariants, for 100 MB+ artifacts.

No jsonschema and no generic object walk: each kind's fast decoder (its record's ``fast``,
in its module in ``validate/kinds/``) decodes straight into the typed values its rules take
(``dict[str, list[str]]`` for the node maps); a 2.0 mapping is checked one map at a time, so peak memory is the text plus its largest decoded map (about 2.7x the
text for a 100 MB mapping, the text included). The types mirror the schema files; where a
type cannot say a rule (integral numbers, enums, key patterns, uniqueness) the kind's rules
check it, so this path and the jsonschema path agree on every document
(tests/unit/test_validator_agreement.py).

Use it through ``spyre_provenance.validate.schemas.validate_bytes``.
"""

from __future__ import annotations

import msgspec

from spyre_provenance.base.errors import UnusableInput
from spyre_provenance.base.process import gc_paused
from spyre_provenance.model.detect import Detected, Problem
from spyre_provenance.validate.decoding import Decoding, Tally
from spyre_provenance.validate.kinds import guess_artifact, kind_of


class FullOnly(Exception):
    """The document is one the fast engine does not read (a companion document, told by its
    shape): check it on the full path."""

    def __init__(self, artifact: str) -> None:
        super().__init__(artifact)
        self.artifact = artifact


class FastResult(msgspec.Struct):
    detected: Detected
    problems: list[Problem]
    maybe_duplicate_keys: bool  # the text may repeat an object key: parse it to find where


def check(data: bytes | str, artifact: str | None, location: str) -> FastResult:
    """Check JSON text. Raises UnusableInput when it is not a JSON object of a known artifact."""
    if not data or data.isspace():
        raise UnusableInput(location or "<input>", "empty (no JSON value)")
    if isinstance(data, bytes) and not data.isascii():
        # msgspec checks UTF-8 only in the strings it decodes: a bad byte inside a value it
        # rejects first would make the document "invalid" here and "unusable" on the full path
        _check_utf8(data, location or "<input>")
    with gc_paused():  # millions of fresh containers: the cyclic GC would rescan them all
        run = Decoding(data, location)
        detected, tally = _decode(run, artifact)
        problems = run.problems
    maybe_dup = tally is not None and _count_disagrees(data, tally)
    return FastResult(detected, problems, maybe_dup)


def _decode(run: Decoding, artifact: str | None) -> tuple[Detected, Tally]:
    """The kind's fast decoder, then its rules on what it decoded: the detection and a
    *tally* (object keys, colons inside strings) of what was decoded, or None when the
    document did not decode cleanly."""
    if artifact is None:
        artifact = guess_artifact(run.top())
        if artifact is None:
            raise unrecognized(run.location)
    kind = kind_of(artifact)
    if kind.fast is None:  # told by shape: no fast engine reads it
        raise FullOnly(artifact)
    detected, typed, tally = kind.fast(run)
    if typed is not None:
        assert detected.schema is not None
        run.problems.extend(kind.rules(detected.schema, typed))
    return detected, tally


def _check_utf8(data: bytes, where: str, chunk: int = 2**20) -> None:
    """Raise the not-UTF-8 error for ``data``, decoding a slice at a time (no full copy)."""
    import codecs

    decoder = codecs.getincrementaldecoder("utf-8")()
    view = memoryview(data)
    for start in range(0, len(data), chunk):
        try:
            decoder.decode(view[start : start + chunk], final=start + chunk >= len(data))
        except UnicodeDecodeError:
            try:  # decode again from here, for the offset of the bad byte in the whole text
                data[max(0, start - 4) :].decode("utf-8")
            except UnicodeDecodeError as bad:
                offset = max(0, start - 4) + bad.start
                raise UnusableInput(where, f"not UTF-8 text (byte 0x{data[offset]:02x} at offset {offset})") from None
            raise


def unrecognized(location: str) -> UnusableInput:
    return UnusableInput(
        location or "<input>",
        "not a recognized provenance artifact (name the file after its artifact or pass --artifact)",
    )


# --- duplicate keys, cheaply -----------------------------------------------------------------
# In JSON text every colon outside a string separates one object key from its value, so
#     colons in the text == object keys + colons inside strings.
# Decoding keeps one value per key: a repeated key loses a key (and the strings under it),
# and the decoded side comes up short. A colon escaped as \u003a would spoil the count, so
# its presence also sends the text to the (slow, exact) parser.


def _count_disagrees(data: bytes | str, tally: tuple[int, int]) -> bool:
    if isinstance(data, bytes):
        return b"\\u003a" in data or b"\\u003A" in data or data.count(b":") != sum(tally)
    return "\\u003a" in data or "\\u003A" in data or data.count(":") != sum(tally)
