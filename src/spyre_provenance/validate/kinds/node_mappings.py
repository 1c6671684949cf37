"""Node mappings (``inductor_provenance_tracking_node_mappings``): torch's and the hook's
pre-grad <-> post-grad <-> kernel maps, upstream's format exactly where tlparse reads it.

Its record, and every part of it: the version (1 for torch 2.7/2.8, 2.0 from 2.9: kernel
keys ``<kernel>:<N>``), the shape (a map field of its own), the fast decoder (one map at a
time for a document that says 2.0), the rules (postToPre exactly the inverse of preToPost,
postToCppCode of cppCodeToPost; kernel keys of the document's version; no list naming one
thing twice). Names only: nothing to normalize or redact.

Pure: no torch, no jsonschema.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from itertools import chain, repeat
from typing import Any

import msgspec

from spyre_provenance.model.detect import (
    FIELD,
    KERNEL_KEY_RE,
    Detected,
    Problem,
    Shape,
    explicit_version,
    key_path,
    quote,
)
from spyre_provenance.model.names import KINDS as FILINGS
from spyre_provenance.model.names import MAP_FIELDS, NODE_MAPPINGS
from spyre_provenance.model.records import NodeMap
from spyre_provenance.validate.decoding import MISSING, Decoded, Decoding, add, tally, tally_keys, tally_map
from spyre_provenance.validate.kind import Kind, as_is
from spyre_provenance.validate.rules import (
    MSG_BARE_NAME,
    MSG_KERNEL_KEY,
    check_kernel_keys,
    check_unique_lists,
    missing_maps,
)

# --- which version, which shape ---------------------------------------------------------------


def read_version(artifact: str, doc: Mapping[str, Any]) -> Detected:
    """Node mappings without ``version`` are version 1, unless their kernel keys carry
    ``:<N>`` handles: then they are 2.0 with the key missing (which validation reports)."""
    if "version" in doc:
        return explicit_version(artifact, doc["version"], {2.0: ("2.0", 2)})
    return Detected(artifact, "2.0", 2) if _has_handle_keys(doc) else Detected(artifact, "1", 1)


def _has_handle_keys(doc: Mapping[str, Any]) -> bool:
    kernels = doc.get("cppCodeToPost")
    if isinstance(kernels, dict) and any(KERNEL_KEY_RE.search(k) for k in kernels):
        return True
    posts = doc.get("postToCppCode")
    return isinstance(posts, dict) and any(
        isinstance(n, str) and KERNEL_KEY_RE.search(n)
        for names in posts.values()
        if isinstance(names, list)
        for n in names
    )


def _mapping_fields(doc: Mapping[str, Any], strict: bool) -> bool:
    return any(f in doc for f in MAP_FIELDS) or list(doc.keys()) == ["version"]


SHAPE = Shape(_mapping_fields, FIELD)


# --- the two decoders ------------------------------------------------------------------------


def fast(run: Decoding) -> Decoded:
    top = run.top()
    det = _explicit_v2(top)
    if det is not None:
        return _node_mappings_by_map(run, top, det)
    fields: dict[str, NodeMap] = {}
    for name in MAP_FIELDS:
        if name in top:
            value = run.decode_map(top[name], list[str], f"$.{name}")
            if value is not MISSING:
                fields[name] = value
    shape: dict[str, Any] = dict(fields)
    if "version" in top:
        shape["version"] = run.decode(top["version"], Any, "$.version")
    det = read_version(NODE_MAPPINGS, shape)
    if det.problem is not None:
        run.problems[:] = [det.problem]
        return det, None, None
    if det.schema == 2 and "version" not in top:
        run.problems.append(Problem("$", 'missing required key "version"'))
    assert det.schema is not None
    run.problems.extend(missing_maps(det.schema, top))
    if run.problems:
        return det, None, None
    # keys this validator does not know are allowed; decoded only to be counted
    extra = [run.decode(raw, Any, "$") for key, raw in top.items() if key not in shape]
    return det, fields, add(tally_keys(top), *map(tally_map, fields.values()), tally(extra))


def _node_mappings_by_map(run: Decoding, top: dict[str, msgspec.Raw], det: Detected) -> Decoded:
    """``fast`` for a document that says ``"version": 2.0``, one map at a time.

    Same problems, same order, same tally; but each map is decoded, checked, tallied
    and let go before the next is decoded, so a 100 MB mapping needs its text plus its
    largest map in memory, not all four (about 2.7x the text instead of 5.8x). Only a
    failed inverse check decodes its two maps again, to name the pairs that differ. The
    rules run here, from each map's facts: no typed document is returned.
    """
    facts: dict[str, NodeMapFacts] = {}
    tallies: list[tuple[int, int]] = []
    run.problems.extend(missing_maps(2, top))
    for name in MAP_FIELDS:
        if name not in top:
            continue
        value = run.decode_map(top[name], list[str], f"$.{name}")
        if value is MISSING or run.problems:  # the rules will not run: only decode
            continue
        facts[name] = node_map_facts(name, value, True)
        tallies.append(tally_map(value))
        del value
    if run.problems:
        return det, None, None
    extra = [run.decode(raw, Any, "$") for key, raw in top.items() if key not in MAP_FIELDS and key != "version"]
    counted = add(tally_keys(top), *tallies, tally(extra))
    reload = lambda name: msgspec.json.decode(top[name], type=NodeMap)  # noqa: E731
    run.problems.extend(check_node_map_facts(facts, reload))
    return det, None, counted


def _explicit_v2(top: dict[str, msgspec.Raw]) -> Detected | None:
    """The detection of node mappings whose ``version`` is 2.0, else None (a missing,
    unreadable or other version takes the general route, which reports it)."""
    if "version" not in top:
        return None
    try:
        version = msgspec.json.decode(top["version"])
    except msgspec.DecodeError:
        return None
    det = read_version(NODE_MAPPINGS, {"version": version})
    return det if det.problem is None and det.schema == 2 else None


def full(schema: int, doc: Mapping[str, Any]) -> dict[str, Any]:
    return {f: doc[f] for f in MAP_FIELDS if f in doc}


# --- the rules -------------------------------------------------------------------------------


def check(schema: int, fields: dict[str, NodeMap]) -> list[Problem]:
    """Inverse maps, unique list entries, kernel keys of the document's version."""
    problems: list[Problem] = []
    _check_node_mappings(fields, schema == 2, problems)
    return problems


def _check_node_mappings(fields: dict[str, NodeMap], v2: bool, problems: list[Problem]) -> None:
    facts = {name: node_map_facts(name, mapping, v2) for name, mapping in fields.items()}
    problems.extend(check_node_map_facts(facts, fields.__getitem__))


class NodeMapFacts(msgspec.Struct, frozen=True):
    """What the node-mapping rules need to know of one map (``node_map_facts``).

    A validator can gather these one map at a time, letting each map go before decoding
    the next, and then judge the document with ``check_node_map_facts``: the same problems
    in the same order as checking all maps at once.
    """

    duplicates: list[Problem]  # lists naming something twice
    kernel_keys: list[Problem]  # cppCodeToPost keys, or postToCppCode entries
    pairs: tuple[int, int]  # the map's pair fingerprint; an inverse map's is flipped


_INVERSES = (("preToPost", "postToPre"), ("cppCodeToPost", "postToCppCode"))
_NO_PAIRS = (0, 0)  # the fingerprint of an absent (empty) map


def node_map_facts(name: str, mapping: NodeMap, v2: bool) -> NodeMapFacts:
    duplicates: list[Problem] = []
    kernel_keys: list[Problem] = []
    check_unique_lists(mapping, f"$.{name}", duplicates)
    if name == "cppCodeToPost":
        check_kernel_keys(mapping, "$.cppCodeToPost", v2, kernel_keys)
    elif name == "postToCppCode":
        _check_kernel_refs(mapping, v2, kernel_keys)
    flip = any(name == bwd for _, bwd in _INVERSES)
    return NodeMapFacts(duplicates, kernel_keys, _pair_fingerprint(mapping, flip=flip))


def check_node_map_facts(facts: Mapping[str, NodeMapFacts], reload: Callable[[str], NodeMap]) -> list[Problem]:
    """The node-mapping rules, from each present map's facts (in MAP_FIELDS order).

    ``reload(name)`` returns a present map again; it is called only for the two maps of a
    failed inverse check, to name the pairs that differ.
    """
    problems = [p for f in facts.values() for p in f.duplicates]
    for name in ("cppCodeToPost", "postToCppCode"):
        if name in facts:
            problems.extend(facts[name].kernel_keys)
    for fwd, bwd in _INVERSES:
        fwd_pairs = facts[fwd].pairs if fwd in facts else _NO_PAIRS
        bwd_pairs = facts[bwd].pairs if bwd in facts else _NO_PAIRS
        if fwd_pairs != bwd_pairs:
            _check_inverse({n: reload(n) for n in (fwd, bwd) if n in facts}, fwd, bwd, problems)
    return problems


def _check_kernel_refs(post_to_cpp: NodeMap, v2: bool, problems: list[Problem]) -> None:
    """postToCppCode entries: v2 kernel keys ``<kernel>:<N>``, v1 bare names."""
    for post, names in post_to_cpp.items():
        for i, name in enumerate(names):
            if bool(KERNEL_KEY_RE.search(name)) != v2:
                message = MSG_KERNEL_KEY if v2 else MSG_BARE_NAME
                problems.append(Problem(f"{key_path('$.postToCppCode', post)}[{i}]", message))


def _check_inverse(fields: dict[str, NodeMap], fwd_name: str, bwd_name: str, problems: list[Problem]) -> None:
    """``bwd`` must list exactly the pairs ``fwd`` lists, flipped (in any order).

    Decided first by pair count plus a sum of pair hashes, so the (usual, possibly 100 MB)
    valid case builds no pair sets; a false "equal" would need a 64-bit hash coincidence.
    Only when they differ are the sets built, to name each missing or extra pair.
    """
    fwd, bwd = fields.get(fwd_name, {}), fields.get(bwd_name, {})
    if _pair_fingerprint(fwd, flip=False) == _pair_fingerprint(bwd, flip=True):
        return
    forward = {(a, b) for a, bs in fwd.items() for b in bs}
    backward = {(a, b) for b, as_ in bwd.items() for a in as_}
    for a, bs in fwd.items():
        for b in bs:
            if (a, b) not in backward:
                message = f"missing {quote(a)}: {fwd_name}[{quote(a)}] lists {quote(b)}"
                problems.append(Problem(key_path(f"$.{bwd_name}", b), message))
    for b, as_ in bwd.items():
        for i, a in enumerate(as_):
            if (a, b) not in forward:
                message = f"not in the inverse: {fwd_name}[{quote(a)}] does not list {quote(b)}"
                problems.append(Problem(f"{key_path(f'$.{bwd_name}', b)}[{i}]", message))


def _pair_fingerprint(mapping: NodeMap, *, flip: bool) -> tuple[int, int]:
    # every step is a C-level iterator: about 0.1 s per million pairs
    keys = chain.from_iterable(map(repeat, mapping.keys(), map(len, mapping.values())))
    values = chain.from_iterable(mapping.values())
    pairs = zip(values, keys, strict=True) if flip else zip(keys, values, strict=True)
    return sum(map(len, mapping.values())), sum(map(hash, pairs)) & (2**64 - 1)


KIND = Kind(
    FILINGS[NODE_MAPPINGS],
    version=read_version,
    current="2.0",
    fast=fast,
    full=full,
    rules=check,
    normalize=as_is,  # names only
    redact=as_is,
    shape=SHAPE,
)
