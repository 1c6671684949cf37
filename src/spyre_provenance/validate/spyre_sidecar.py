"""torch-spyre's own provenance (the ``spyre_provenance`` sidecar of its open PR #3449, read at
torch-spyre/torch-spyre 1e640b3): the rules its schema cannot state, and the cross-check of
the hook's OpSpec handles against it.

The rules are the branch writer's own invariants, restated: every id is the digest of its
canonical payload (compile: ``{"domain": "torch-spyre-compile-v1", "kernels": [[name, key],
...]}``; occurrence: its domain, compile id, kernel name and key), every reference resolves,
each kernel identity's handles, ATen ops and event name follow from its bindings, the
reverse maps are the exact inverses, aliases are ``<kernel>:<ordinal>``, and ``status`` and
``diagnostics`` are what the compiles say. ``check`` takes a schema-valid document.

``cross_check`` compares one graph's ``spyre_opspec_debug_handles`` with the sidecar's
compile of the same kernels: for each call site, the same direct handles, the same
provenance key, and each handle on the same source line. Each disagreement is one line
naming the call site, counted like a handle/origin disagreement (``compile.summary``).

Pure: no torch.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

from spyre_provenance.model import kernel_keys
from spyre_provenance.model.detect import Problem, key_path, quote, split_key

COMPILE_DOMAIN = "torch-spyre-compile-v1"
OCCURRENCE_DOMAIN = "torch-spyre-occurrence-v1"
MAPS = (("preToPost", "postToPre"), ("cppCodeToPost", "postToCppCode"))


def digest(value: Any) -> str:
    """SHA-256 hex of canonical JSON (sorted keys, compact, ASCII): the sidecar's ids."""
    text = json.dumps(value, ensure_ascii=True, allow_nan=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def check(schema: int, doc: Mapping[str, Any]) -> list[Problem]:
    """The rules beyond the schema, on a schema-valid sidecar (torch-spyre's writer's rules;
    the ``rules`` of its kind's record)."""
    problems: list[Problem] = []
    handles = doc["handles"]
    for hid, handle in handles.items():
        _check_handle(hid, handle, handles, problems)
    for key, identity in doc["kernelIdentities"].items():
        _check_identity(key, identity, handles, problems)
    aliases: dict[str, set[str]] = {}
    for oid, occurrence in doc["kernelOccurrences"].items():
        _check_occurrence(oid, occurrence, doc, problems)
        aliases.setdefault(occurrence["compileId"], set()).update(r["alias"] for r in occurrence["registrations"])
    for cid, projection in doc["upstreamProjections"].items():
        _check_projection(cid, projection, doc, aliases.get(cid, set()), problems)
    _check_status(doc, problems)
    return problems


def _check_handle(hid: str, handle: Mapping[str, Any], handles: Mapping[str, Any], out: list[Problem]) -> None:
    at = key_path("$.handles", hid)
    if handle["id"] != hid:
        out.append(Problem(f"{at}.id", f"is {quote(handle['id'])}, its key is {quote(hid)}"))
    for i, child in enumerate(handle["fused_from"]):
        if child not in handles:
            out.append(Problem(f"{at}.fused_from[{i}]", f"no handle {quote(child)} in $.handles"))


def _check_identity(key: str, identity: Mapping[str, Any], handles: Mapping[str, Any], out: list[Problem]) -> None:
    at = key_path("$.kernelIdentities", key)
    bound = [b["handleId"] for b in identity["specHandleBindings"]]
    for i, hid in enumerate(bound):
        if hid not in handles:
            out.append(Problem(f"{at}.specHandleBindings[{i}].handleId", f"no handle {quote(hid)} in $.handles"))
    if identity["directHandleIds"] != list(dict.fromkeys(bound)):
        out.append(Problem(f"{at}.directHandleIds", "is not the bindings' handles in order, each once"))
    atens = aten_closure(identity["directHandleIds"], handles)
    if identity["atenOps"] != atens:
        out.append(Problem(f"{at}.atenOps", f"expected {quote(atens)} (the handles' ATen ops, sorted)"))
    name = kernel_keys.event_name(identity["atenOps"], key)
    if identity["eventNameBase"] != name:
        out.append(Problem(f"{at}.eventNameBase", f"expected {quote(name)} (its ATen ops and key)"))


def _check_occurrence(oid: str, occurrence: Mapping[str, Any], doc: Mapping[str, Any], out: list[Problem]) -> None:
    at = key_path("$.kernelOccurrences", oid)
    for field, table in (("identityKey", "kernelIdentities"), ("compileId", "upstreamProjections")):
        if occurrence[field] not in doc[table]:
            out.append(Problem(f"{at}.{field}", f"no {quote(occurrence[field])} in $.{table}"))
    name = occurrence["compilerKernelName"]
    expected = digest(
        {
            "domain": OCCURRENCE_DOMAIN,
            "compileId": occurrence["compileId"],
            "compilerKernelName": name,
            "identityKey": occurrence["identityKey"],
        }
    )
    if oid != expected:
        out.append(Problem(at, "is not the digest of its compile, kernel name and key"))
    ordinals = [r["ordinal"] for r in occurrence["registrations"]]
    for i, registration in enumerate(occurrence["registrations"]):
        alias = f"{name}:{registration['ordinal']}"
        if registration["alias"] != alias:
            out.append(Problem(f"{at}.registrations[{i}].alias", f"expected {quote(alias)}"))
    if ordinals != sorted(set(ordinals)):
        out.append(Problem(f"{at}.registrations", "ordinals are not ascending and unique"))


def _check_projection(
    cid: str, projection: Mapping[str, Any], doc: Mapping[str, Any], aliases: set[str], out: list[Problem]
) -> None:
    at = key_path("$.upstreamProjections", cid)
    pairs = [[k["compilerKernelName"], k["identityKey"]] for k in projection["kernels"]]
    if cid != digest({"domain": COMPILE_DOMAIN, "kernels": pairs}):
        out.append(Problem(at, "is not the digest of its kernels"))
    for i, (_, key) in enumerate(pairs):
        if key not in doc["kernelIdentities"]:
            out.append(Problem(f"{at}.kernels[{i}].identityKey", f"no {quote(key)} in $.kernelIdentities"))
    occurring = {
        (o["compilerKernelName"], o["identityKey"]) for o in doc["kernelOccurrences"].values() if o["compileId"] == cid
    }
    if occurring != {tuple(p) for p in pairs}:
        out.append(Problem(f"{at}.kernels", "are not the kernels of this compile's occurrences"))
    for forward, backward in MAPS:
        if projection[backward] != invert(projection[forward]):
            out.append(Problem(f"{at}.{backward}", f"is not the exact inverse of {forward}"))
    for alias in projection["cppCodeToPost"]:
        if alias not in aliases:
            out.append(Problem(key_path(f"{at}.cppCodeToPost", alias), "no occurrence of this compile registered it"))
    if projection["upstreamJoin"] == "ok" and set(projection["cppCodeToPost"]) != aliases:
        out.append(Problem(f"{at}.upstreamJoin", "ok, but not every registered alias is in cppCodeToPost"))


def _check_status(doc: Mapping[str, Any], out: list[Problem]) -> None:
    projections = doc["upstreamProjections"].values()
    counts = {
        "collection-failure": sum(len(p["uncollectedKernels"]) for p in projections),
        "upstream-projection-failure": sum(bool(p["upstreamProjectionFailed"]) for p in projections),
    }
    expected = {code: n for code, n in counts.items() if n}
    if doc["diagnostics"] != expected:
        out.append(Problem("$.diagnostics", f"expected {quote(expected)} (what the compiles record)"))
    complete = not expected and all(p["upstreamJoin"] == "ok" for p in projections)
    if doc["status"] != ("complete" if complete else "partial"):
        out.append(Problem("$.status", f"expected {quote('complete' if complete else 'partial')}"))


def invert(mapping: Mapping[str, Iterable[str]]) -> dict[str, list[str]]:
    """The writer's inverse: targets in the order of their sources' sorted keys."""
    inverse: dict[str, list[str]] = {}
    for source in sorted(mapping):
        for target in mapping[source]:
            inverse.setdefault(target, []).append(source)
    return inverse


def handle_closure(ids: Iterable[str], handles: Mapping[str, Any]) -> set[str]:
    """The ids of handles and of every handle they were fused from (ids not in ``handles`` skipped)."""
    pending, seen = list(ids), set()
    while pending:
        hid = pending.pop()
        if hid in seen or hid not in handles:
            continue
        seen.add(hid)
        pending.extend(handles[hid]["fused_from"])
    return seen


def aten_closure(ids: Iterable[str], handles: Mapping[str, Any]) -> list[str]:
    """The sorted ATen ops of handles and their fused constituents (ids not in ``handles`` skipped)."""
    return sorted({a for h in handle_closure(ids, handles) if (a := handles[h]["aten_op"]) is not None})


# --- the hook's handles against torch-spyre's own -----------------------------------------

WHOSE = "torch-spyre's spyre_provenance"


def cross_check(opspecs: Mapping[str, Any], sidecar: Mapping[str, Any]) -> list[str]:
    """Where one graph's ``spyre_opspec_debug_handles`` and torch-spyre's sidecar disagree:
    per call site, its direct handles (in order, each once), its provenance key, and the
    source line of each handle both name. Call sites of kernels the sidecar's compile does
    not hold (extern kernels, fallbacks) are not compared. Empty when they agree, or when no
    compile of the sidecar holds this graph's kernels."""
    return [line for lines in disagreements(opspecs, sidecar).values() for line in lines]


def disagreements(opspecs: Mapping[str, Any], sidecar: Mapping[str, Any]) -> dict[str, list[str]]:
    """``cross_check``'s lines by call site (only the sites with one), in the artifact's order."""
    kernels: Mapping[str, Any] = opspecs.get("kernels") or {}
    occurrences = occurrences_for(set(kernels), sidecar)
    ours_handles: Mapping[str, Any] = opspecs.get("handles") or {}
    bundles: Mapping[str, Any] = opspecs.get("bundles") or {}
    by_site: dict[str, list[str]] = {}
    for site, specs in kernels.items():
        found = by_site.setdefault(site, [])
        occurrence = occurrences.get(site) or occurrences.get(split_key(site)[0])
        if occurrence is None:
            continue
        identity = sidecar["kernelIdentities"].get(occurrence["identityKey"], {})
        ours = list(dict.fromkeys(s["debug_handle"] for s in specs if s.get("debug_handle") is not None))
        theirs = list(identity.get("directHandleIds", []))
        if ours != theirs:
            found.append(f"{site}: handles {', '.join(ours) or 'none'} here, {', '.join(theirs) or 'none'} in {WHOSE}")
        key = (bundles.get(site) or {}).get("provenance_key")
        if key is not None and key != occurrence["identityKey"]:
            found.append(f"{site}: provenance key {key} here, {occurrence['identityKey']} in {WHOSE}")
        for hid in (h for h in ours if h in theirs):
            here = _line((ours_handles.get(hid) or {}).get("source"))
            there = _line((sidecar["handles"].get(hid) or {}).get("source"))
            if here != there:
                found.append(f"{site}: handle {hid} at {here} here, at {there} in {WHOSE}")
    return {site: found for site, found in by_site.items() if found}


def _line(source: Any) -> str:
    if not isinstance(source, Mapping):
        return "no line"
    return f"{source.get('file')}:{source.get('start_line')}"


def occurrences_for(sites: set[str], sidecar: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """The occurrences of the sidecar's compile that holds these call sites, by alias
    (``name:N``) and by kernel name: the compile whose registered aliases match the most
    sites, then the one holding the most of their kernel names. Empty when none holds any."""
    names = {split_key(site)[0] for site in sites}
    by_compile: dict[str, list[Mapping[str, Any]]] = {}
    for occurrence in sidecar["kernelOccurrences"].values():
        by_compile.setdefault(occurrence["compileId"], []).append(occurrence)
    best: tuple[tuple[int, int], str] | None = None
    for cid in sorted(by_compile):
        aliases = {r["alias"] for o in by_compile[cid] for r in o["registrations"]}
        held = {o["compilerKernelName"] for o in by_compile[cid]}
        score = (len(aliases & sites), len(held & names))
        if score[1] and (best is None or score > best[0]):
            best = (score, cid)
    if best is None:
        return {}
    chosen: dict[str, Mapping[str, Any]] = {}
    for occurrence in by_compile[best[1]]:
        chosen[occurrence["compilerKernelName"]] = occurrence
        chosen.update({r["alias"]: occurrence for r in occurrence["registrations"]})
    return chosen
