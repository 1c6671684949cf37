"""What each provenance artifact must be, beyond its JSON Schema: the invariants.

The schema files (``schemas/<artifact>/v<N>.schema.json``) state shapes; ``model.wire`` the
typed form both engines decode into. This module states the rest, run on already well-typed
values: ``check_<kind>(schema, doc)``, each the ``rules`` of its kind's record
(``validate.kinds``). postToPre is exactly the inverse of preToPost (postToCppCode of
cppCodeToPost), kernel keys are ``<kernel>:<N>`` with N unique, no list names one thing
twice; for the opspec artifact: referenced handle ids exist, ids < 2**63, fused_from has no
cycles. ``check_types`` and ``check_kernel_info_types`` state what the wire types leave open
(integral numbers, enums). The diagnostics' rules are ``diagnostics_rules``, the audit's
``audit_rules``.

Pure: no torch, no jsonschema.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from itertools import chain, repeat
from typing import Any

import msgspec

from spyre_provenance.model.detect import (
    HANDLE_ID_PATTERN,
    KERNEL_KEY_RE,
    Problem,
    key_path,
    quote,
    split_key,
)
from spyre_provenance.model.handles import HANDLE_ID_LIMIT
from spyre_provenance.model.kernel_keys import KEY_RE
from spyre_provenance.model.names import MAP_FIELDS, TRANSFORM_KINDS
from spyre_provenance.model.records import NodeMap
from spyre_provenance.model.wire import (
    KERNEL_INFO_FIELDS,
    HandleEntry,
    KernelInfoEntryV2,
    OpSpecDebugHandles,
    OpSpecDebugHandlesV2,
    SourceLinesDoc,
)
from spyre_provenance.validate.audit_rules import check_audit_types  # noqa: F401 - re-exported

HANDLE_ID_RE = re.compile(HANDLE_ID_PATTERN)

MSG_KERNEL_KEY = 'not a kernel key "<kernel>:<N>" (N a positive integer)'
MSG_BARE_NAME = 'has a ":<N>" debug handle suffix, which version 1 kernel names do not have'
MSG_HANDLE_ID = "not a handle id (a decimal string without leading zeros)"
MSG_DUPLICATE_KEY = "duplicate key (JSON readers keep only one of the values)"
MSG_EMPTY = "must not be empty"


def missing_maps(schema: int, present: Iterable[str]) -> list[Problem]:
    """The node-mapping maps a document lacks, one problem each (in upstream's key order).

    torch wrote what each schema requires: version 1 (create_node_mapping, torch 2.7/2.8)
    all four maps; version 2.0 (dump_inductor_provenance_info, 2.9+) all four or none.
    """
    have = set(present)
    missing = [name for name in MAP_FIELDS if name not in have]
    if schema == 2 and len(missing) == len(MAP_FIELDS):
        return []
    why = MSG_ALL_MAPS if schema == 1 else MSG_MAPS_TOGETHER
    return [Problem("$", f"missing required key {quote(name)} {why}") for name in missing]


MSG_ALL_MAPS = "(version 1 has all four maps)"
MSG_MAPS_TOGETHER = "(version 2.0 has all four maps or none)"


def check_types(doc: OpSpecDebugHandles | OpSpecDebugHandlesV2) -> list[Problem]:
    """What the opspec schema says about integers and enums that the wire types leave open."""
    problems: list[Problem] = []
    for key, specs in doc.kernels.items():
        for i, spec in enumerate(specs):
            for j, dim in enumerate(spec.iteration_space):
                if isinstance(dim, float) and not dim.is_integer():
                    path = f"{key_path('$.kernels', key)}[{i}].iteration_space[{j}]"
                    problems.append(Problem(path, "expected integer or string, got number"))
    for hid, handle in doc.handles.items():
        base = key_path("$.handles", hid)
        for name in ("start_line", "start_col", "end_line", "end_col"):
            value = None if handle.source is None else getattr(handle.source, name)
            if value is None:
                continue
            if isinstance(value, float) and not value.is_integer():
                kind = "integer or null" if name.startswith("end") else "integer"
                problems.append(Problem(f"{base}.source.{name}", f"expected {kind}, got number"))
            elif value < 0:
                problems.append(Problem(f"{base}.source.{name}", f"must be >= 0, got {quote(value)}"))
        for i, step in enumerate(handle.transform_history):
            if step.kind not in TRANSFORM_KINDS:
                options = ", ".join(map(quote, TRANSFORM_KINDS))
                path = f"{base}.transform_history[{i}].kind"
                problems.append(Problem(path, f"expected one of {options}, got {quote(step.kind)}"))
    return problems


LINE_NUMBER_PATTERN = r"^[1-9][0-9]*$"  # spyre_source_lines' line keys, applied as jsonschema does (re.search)
LINE_NUMBER_RE = re.compile(LINE_NUMBER_PATTERN)


def check_source_lines_types(doc: SourceLinesDoc) -> list[Problem]:
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


# kernel_information v2: the pairs torch writes together (the schema's dependentRequired)
KERNEL_INFO_PAIRS = {
    "input_shapes": "input_dtypes",
    "input_dtypes": "input_shapes",
    "output_shape": "output_dtype",
    "output_dtype": "output_shape",
}
DTYPE_PATTERN = r"^torch\.[a-z][a-z0-9_]*$"  # the schema's, applied as jsonschema does (re.search)
DTYPE_RE = re.compile(DTYPE_PATTERN)
MSG_DTYPE = 'not a torch dtype ("torch.float32", ...)'


def bad_dim(value: Any) -> str:
    return f"expected a size (an integer >= 0) or a symbolic one (a non-empty string), got {quote(value)}"


def missing_partner(field: str, partners: Iterable[str]) -> str:
    return f"has {quote(field)} without {' and '.join(map(quote, partners))} (torch writes them together)"


def check_kernel_info_types(doc: dict[str, KernelInfoEntryV2]) -> list[Problem]:
    """What the kernel_information v2 schema says about shapes, dtypes and the field pairs
    that the wire type leaves open."""
    problems: list[Problem] = []
    for key, info in doc.items():
        base = key_path("$", key)
        for name, partner in KERNEL_INFO_PAIRS.items():
            if getattr(info, name) is not msgspec.UNSET and getattr(info, partner) is msgspec.UNSET:
                problems.append(Problem(base, missing_partner(name, [partner])))
        shapes = (
            {}
            if info.input_shapes is msgspec.UNSET
            else {f"{base}.input_shapes[{i}]": s for i, s in enumerate(info.input_shapes)}
        )
        if info.output_shape is not msgspec.UNSET:
            shapes[f"{base}.output_shape"] = info.output_shape
        for path, shape in shapes.items():
            for j, dim in enumerate(shape):
                if dim == "" or (
                    not isinstance(dim, str) and (dim < 0 or (isinstance(dim, float) and not dim.is_integer()))
                ):
                    problems.append(Problem(f"{path}[{j}]", bad_dim(dim)))
        dtypes = (
            {}
            if info.input_dtypes is msgspec.UNSET
            else {f"{base}.input_dtypes[{i}]": d for i, d in enumerate(info.input_dtypes)}
        )
        if info.output_dtype is not msgspec.UNSET:
            dtypes[f"{base}.output_dtype"] = info.output_dtype
        problems.extend(Problem(path, MSG_DTYPE) for path, dtype in dtypes.items() if not DTYPE_RE.search(dtype))
    return problems


# --- invariants -----------------------------------------------------------------------------


# Each kind's rules (its record's ``rules``, ``validate.kinds``): ``check_<kind>(schema, doc)``
# on the typed values its decoders give (``validate.decoders``).


def check_node_mappings(schema: int, fields: dict[str, NodeMap]) -> list[Problem]:
    """Inverse maps, unique list entries, kernel keys of the document's version."""
    problems: list[Problem] = []
    _check_node_mappings(fields, schema == 2, problems)
    return problems


def check_stack_traces(schema: int, doc: NodeMap) -> list[Problem]:
    problems: list[Problem] = []
    _check_kernel_keys(doc, "$", schema == 2, problems)
    _check_unique_lists(doc, "$", problems)
    return problems


def check_kernel_information(schema: int, doc: dict[str, Any]) -> list[Problem]:
    """Kernel keys, no list naming one thing twice, a dtype per input shape."""
    problems: list[Problem] = []
    _check_kernel_keys(doc, "$", True, problems)
    for key, info in doc.items():
        for name in KERNEL_INFO_FIELDS:
            dup = first_duplicate(getattr(info, name))
            if dup is not NO_DUPLICATE:
                problems.append(Problem(f"{key_path('$', key)}.{name}", f"duplicate entry {quote(dup)}"))
        shapes, dtypes = getattr(info, "input_shapes", msgspec.UNSET), getattr(info, "input_dtypes", msgspec.UNSET)
        if shapes is not msgspec.UNSET and dtypes is not msgspec.UNSET and len(shapes) != len(dtypes):
            message = f"{len(dtypes)} dtypes for {len(shapes)} input shapes (one per input tensor)"
            problems.append(Problem(f"{key_path('$', key)}.input_dtypes", message))
    return problems


def check_opspec(schema: int, doc: OpSpecDebugHandles | OpSpecDebugHandlesV2) -> list[Problem]:
    problems: list[Problem] = []
    _check_opspec(doc, problems)
    return problems


def no_rules(schema: int, doc: Any) -> list[Problem]:
    """The rules of a kind whose schema says all there is to say (the viewer's source lines)."""
    return []


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
    _check_unique_lists(mapping, f"$.{name}", duplicates)
    if name == "cppCodeToPost":
        _check_kernel_keys(mapping, "$.cppCodeToPost", v2, kernel_keys)
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


def _check_kernel_keys(keys: Iterable[str], path: str, v2: bool, problems: list[Problem]) -> None:
    """v2: every key is ``<kernel>:<N>`` and no N is used twice. v1: no key has a handle."""
    owner: dict[int, str] = {}
    for key in keys:
        has_handle = bool(KERNEL_KEY_RE.search(key))
        if not v2:
            if has_handle:
                problems.append(Problem(key_path(path, key), MSG_BARE_NAME))
        elif not has_handle:
            problems.append(Problem(key_path(path, key), MSG_KERNEL_KEY))
        else:
            handle = int(split_key(key)[1])
            first = owner.setdefault(handle, key)
            if first != key:
                message = f"debug handle {handle} is also used by {quote(first)}"
                problems.append(Problem(key_path(path, key), message))


def _check_unique_lists(mapping: NodeMap, path: str, problems: list[Problem]) -> None:
    for key, names in mapping.items():
        if len(names) > 1 and len(set(names)) != len(names):
            problems.append(Problem(key_path(path, key), f"duplicate entry {quote(first_duplicate(names))}"))


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


MSG_PROVENANCE_KEY = "expected 16 characters of lowercase base32 (a-z, 2-7)"


def _check_opspec(doc: OpSpecDebugHandles | OpSpecDebugHandlesV2, problems: list[Problem]) -> None:
    handles = doc.handles
    _check_kernel_keys(doc.kernels, "$.kernels", True, problems)
    for hid in handles:
        bad = _id_problem(hid)
        if bad:
            problems.append(Problem(key_path("$.handles", hid), bad))

    def check_ref(ref: str, path: str) -> None:
        bad = _id_problem(ref)
        if bad is None and ref not in handles:
            bad = f"unknown handle id {quote(ref)} (not in $.handles)"
        if bad:
            problems.append(Problem(path, bad))

    for key, specs in doc.kernels.items():
        for i, spec in enumerate(specs):
            if spec.debug_handle is not None:
                check_ref(spec.debug_handle, f"{key_path('$.kernels', key)}[{i}].debug_handle")
    for hid, handle in handles.items():
        base = f"{key_path('$.handles', hid)}.fused_from"
        dup = first_duplicate(handle.fused_from)
        if dup is not NO_DUPLICATE:
            problems.append(Problem(base, f"duplicate entry {quote(dup)}"))
        for j, ref in enumerate(handle.fused_from):
            check_ref(ref, f"{base}[{j}]")
    problems.extend(_fused_from_cycles(handles))
    for key, bundle in getattr(doc, "bundles", {}).items():  # version 2
        path = key_path("$.bundles", key)
        if key not in doc.kernels:
            problems.append(Problem(path, f"call site {quote(key)} is not in $.kernels"))
        if bundle.provenance_key is not None and not KEY_RE.fullmatch(bundle.provenance_key):
            problems.append(
                Problem(f"{path}.provenance_key", f"{MSG_PROVENANCE_KEY}, got {quote(bundle.provenance_key)}")
            )
        if bundle.folder == "":
            problems.append(Problem(f"{path}.folder", "should be non-empty"))


def _id_problem(hid: str) -> str | None:
    if not HANDLE_ID_RE.search(hid):
        return MSG_HANDLE_ID
    if int(hid) >= HANDLE_ID_LIMIT:
        return f"handle id {hid} is not below 2**63"
    return None


def _fused_from_cycles(handles: dict[str, HandleEntry]) -> list[Problem]:
    """Depth-first search over fused_from (iterative: chains may be long); each edge back
    into the current trail closes one reported cycle."""
    problems: list[Problem] = []
    done: set[str] = set()
    for root in handles:
        if root in done:
            continue
        trail, on_trail = [root], {root}
        stack = [iter(handles[root].fused_from)]
        while stack:
            for child in stack[-1]:
                if child not in handles or child in done:
                    continue
                if child in on_trail:
                    cycle = " -> ".join(trail[trail.index(child) :] + [child])
                    path = f"{key_path('$.handles', trail[-1])}.fused_from"
                    problems.append(Problem(path, f"cycle: {cycle}"))
                    continue
                trail.append(child)
                on_trail.add(child)
                stack.append(iter(handles[child].fused_from))
                break
            else:
                stack.pop()
                on_trail.discard(trail[-1])
                done.add(trail.pop())
    return problems


# --- small helpers shared with the validators -----------------------------------------------

NO_DUPLICATE: Any = object()


def first_duplicate(items: Iterable[Any]) -> Any:
    """The first item equal to an earlier one (JSON equality: 1 == 1.0, 1 != true), else NO_DUPLICATE."""
    seen: set[Any] = set()
    for item in items:
        key = json.dumps(item, sort_keys=True) if isinstance(item, (dict, list)) else (isinstance(item, bool), item)
        if key in seen:
            return item
        seen.add(key)
    return NO_DUPLICATE
