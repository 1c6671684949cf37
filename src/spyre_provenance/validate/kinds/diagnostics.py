"""The diagnostics (``spyre_provenance_diagnostics``): what went wrong in a graph and what was
inferred, written by the hook beside its artifacts; checked, never compared by golden files.

Its record and every part of it: a ``version`` key (1 to 6), told by its keys ``faults`` and
``partial``, the fast decoder, ``check_diagnostics_types`` (what the wire types leave open:
enums, integral non-negative counts, non-empty strings) and ``check_diagnostics`` (its
record's ``rules``: the invariants no schema can state: partial exactly when there are
faults, counts that bound each other, and, version 2 on, complete exactly when not partial,
coverage judged and nothing violated). Both engines run both
(tests/unit/test_validator_agreement.py). ``--redact-paths`` rewrites its fault messages and
misnamed handles' lines.

Pure: no torch, no jsonschema.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

from spyre_provenance.links.redact import Redactor
from spyre_provenance.model import wire
from spyre_provenance.model.detect import KERNEL_KEY_RE, Problem, keyed, quote, versions
from spyre_provenance.model.names import (
    COVERAGE_RULES,
    DIAGNOSTICS,
    FAULT_STAGES,
    GRAPH_KINDS,
    INFERRED_PRE_GRAD_REASONS,
    INFERRED_REASONS,
    INFERRED_SOURCE_REASONS,
    MAPPING_SOURCES,
)
from spyre_provenance.model.names import KINDS as FILINGS
from spyre_provenance.model.records import CACHE_STATES, MISNAMED_PARTS, UPSTREAM_RELATIONS, ExemptNodes
from spyre_provenance.model.wire import (
    DiagnosticsDocV1,
    DiagnosticsDocV2,
    DiagnosticsDocV3,
    DiagnosticsDocV4,
    DiagnosticsDocV5,
    DiagnosticsDocV6,
)
from spyre_provenance.validate.decoding import Decoded, Decoding, add, tally, tally_keys
from spyre_provenance.validate.kind import Kind, as_is
from spyre_provenance.validate.rules import (
    HANDLE_ID_RE,
    MSG_EMPTY,
    MSG_HANDLE_ID,
    MSG_KERNEL_KEY,
    NO_DUPLICATE,
    first_duplicate,
)

# the integer fields of a diagnostics document that must be >= 0 (coverage and
# bundle_handles: those of the document's version, read off its wire type)
DIAGNOSTICS_COUNTS = ("kernels", "opspecs", "handleless_opspecs")
EXEMPT_COUNTS = ExemptNodes.__struct_fields__
read_version = versions(1, 2, 3, 4, 5, 6)

DiagnosticsDoc = (
    DiagnosticsDocV1 | DiagnosticsDocV2 | DiagnosticsDocV3 | DiagnosticsDocV4 | DiagnosticsDocV5 | DiagnosticsDocV6
)


def _counts_of(struct: Any, *, skip: tuple[str, ...] = ()) -> tuple[str, ...]:
    return tuple(f for f in struct.__struct_fields__ if f not in skip)


def check_diagnostics_types(doc: DiagnosticsDoc) -> list[Problem]:
    """What the diagnostics schema says about enums, counts and strings that the wire types
    leave open (version 2: also in backend, coverage, inferred and violations; version 3:
    also in bundle_handles; version 4: also in what was inferred and the kernel gaps)."""
    problems: list[Problem] = []
    for name, options, value in (("graph", GRAPH_KINDS, doc.graph), ("mapping", MAPPING_SOURCES, doc.mapping)):
        if value not in options:
            problems.append(Problem(f"$.{name}", _not_one_of(options, value)))
    for i, fault in enumerate(doc.faults):
        if fault.stage not in FAULT_STAGES:
            problems.append(Problem(f"$.faults[{i}].stage", _not_one_of(FAULT_STAGES, fault.stage)))
    counts = [(f"$.{name}", getattr(doc, name)) for name in DIAGNOSTICS_COUNTS]
    if not isinstance(doc, DiagnosticsDocV1):
        if doc.backend == "":
            problems.append(Problem("$.backend", MSG_EMPTY))
        if doc.coverage is not None:
            names = _counts_of(doc.coverage, skip=("exempt_nodes",))
            counts += [(f"$.coverage.{name}", getattr(doc.coverage, name)) for name in names]
            exempt = doc.coverage.exempt_nodes
            counts += [(f"$.coverage.exempt_nodes.{name}", getattr(exempt, name)) for name in EXEMPT_COUNTS]
        for i, link in enumerate(doc.inferred):
            if link.why not in INFERRED_REASONS:
                problems.append(Problem(f"$.inferred[{i}].why", _not_one_of(INFERRED_REASONS, link.why)))
        for i, violation in enumerate(doc.violations):
            if violation.rule not in COVERAGE_RULES:
                problems.append(Problem(f"$.violations[{i}].rule", _not_one_of(COVERAGE_RULES, violation.rule)))
    if (
        isinstance(doc, (DiagnosticsDocV3, DiagnosticsDocV4, DiagnosticsDocV5, DiagnosticsDocV6))
        and doc.bundle_handles is not None
    ):
        counts += [
            (f"$.bundle_handles.{name}", getattr(doc.bundle_handles, name)) for name in _counts_of(doc.bundle_handles)
        ]
    if isinstance(doc, (DiagnosticsDocV4, DiagnosticsDocV5, DiagnosticsDocV6)):
        for field, reasons in (
            ("inferred_sources", INFERRED_SOURCE_REASONS),
            ("inferred_pre_grad", INFERRED_PRE_GRAD_REASONS),
        ):
            for i, link in enumerate(getattr(doc, field)):
                if link.why not in reasons:
                    problems.append(Problem(f"$.{field}[{i}].why", _not_one_of(reasons, link.why)))
        for field in ("without_source", "without_pre_grad"):
            problems.extend(
                Problem(f"$.{field}[{i}].why", MSG_EMPTY) for i, gap in enumerate(getattr(doc, field)) if gap.why == ""
            )
    if isinstance(doc, DiagnosticsDocV6) and doc.cache not in CACHE_STATES:
        problems.append(Problem("$.cache", _not_one_of(CACHE_STATES, doc.cache)))
    if isinstance(doc, DiagnosticsDocV6):
        _check_misnamed_types(doc, problems)
    if isinstance(doc, (DiagnosticsDocV5, DiagnosticsDocV6)) and doc.matches_upstream is not None:
        compared = doc.matches_upstream
        if compared.relation not in UPSTREAM_RELATIONS:
            problems.append(Problem("$.matches_upstream.relation", _not_one_of(UPSTREAM_RELATIONS, compared.relation)))
        counts += [(f"$.matches_upstream.{name}", getattr(compared, name)) for name in ("added", "missing")]
    for path, value in counts:
        if isinstance(value, float) and not value.is_integer():
            problems.append(Problem(path, "expected integer, got number"))
        elif value < 0:
            problems.append(Problem(path, f"must be >= 0, got {quote(value)}"))
    return problems


def _check_misnamed_types(doc: DiagnosticsDocV6, problems: list[Problem]) -> None:
    """``misnamed_handles``: a handle id, and what differs said once each, at least once;
    then ``module_stacks``, version 6's other list."""
    _check_module_stacks_types(doc, problems)
    for i, misnamed in enumerate(doc.misnamed_handles):
        where = f"$.misnamed_handles[{i}]"
        if not HANDLE_ID_RE.search(misnamed.handle):
            problems.append(Problem(f"{where}.handle", MSG_HANDLE_ID))
        if not misnamed.differs:
            problems.append(Problem(f"{where}.differs", "is empty: a misnamed handle names an op or a line otherwise"))
        for j, part in enumerate(misnamed.differs):
            if part not in MISNAMED_PARTS:
                problems.append(Problem(f"{where}.differs[{j}]", _not_one_of(MISNAMED_PARTS, part)))
        dup = first_duplicate(misnamed.differs)
        if dup is not NO_DUPLICATE:
            problems.append(Problem(f"{where}.differs", f"duplicate entry {quote(dup)}"))


def _check_module_stacks_types(doc: DiagnosticsDocV6, problems: list[Problem]) -> None:
    """``module_stacks``: keyed by call site, each module a ``[path, class]`` pair."""
    for key, stacks in doc.module_stacks.items():
        where = f"$.module_stacks[{quote(key)}]"
        if not KERNEL_KEY_RE.search(key):
            problems.append(Problem(where, MSG_KERNEL_KEY))
        for i, stack in enumerate(stacks):
            for j, module in enumerate(stack):
                if len(module) != 2:
                    problems.append(Problem(f"{where}[{i}][{j}]", f"expected [path, class], got {len(module)} items"))


def _check_misnamed(doc: DiagnosticsDocV6, problems: list[Problem]) -> None:
    """Each misnamed handle's kernel is a kernel key, counted in ``disagreements``."""
    disagreements = set(doc.disagreements)
    for i, misnamed in enumerate(doc.misnamed_handles):
        if not KERNEL_KEY_RE.search(misnamed.kernel):
            problems.append(Problem(f"$.misnamed_handles[{i}].kernel", MSG_KERNEL_KEY))
        elif misnamed.kernel not in disagreements:
            message = f"{quote(misnamed.kernel)} is not among the disagreements"
            problems.append(Problem(f"$.misnamed_handles[{i}].kernel", message))


def _not_one_of(options: Iterable[str], value: Any) -> str:
    return f"expected one of {', '.join(map(quote, options))}, got {quote(value)}"


def check_diagnostics(schema: int, doc: DiagnosticsDoc) -> list[Problem]:
    problems: list[Problem] = []
    _check_diagnostics(doc, problems)
    return problems


def _check_diagnostics(doc: DiagnosticsDoc, problems: list[Problem]) -> None:
    # version 2 keeps every version 1 field and its meaning: the version 1 rules hold for both
    if doc.partial != bool(doc.faults):
        message = "is true, but faults is empty" if doc.partial else "is false, but faults lists what failed"
        problems.append(Problem("$.partial", message))
    if doc.handleless_opspecs > doc.opspecs:
        message = f"{quote(doc.handleless_opspecs)} is more than the {quote(doc.opspecs)} OpSpecs"
        problems.append(Problem("$.handleless_opspecs", message))
    for i, key in enumerate(doc.disagreements):
        if not KERNEL_KEY_RE.search(key):
            problems.append(Problem(f"$.disagreements[{i}]", MSG_KERNEL_KEY))
    dup = first_duplicate(doc.disagreements)
    if dup is not NO_DUPLICATE:
        problems.append(Problem("$.disagreements", f"duplicate entry {quote(dup)}"))
    if not isinstance(doc, DiagnosticsDocV1):  # later versions keep version 2's rules
        _check_diagnostics_v2(doc, problems)
    if (
        isinstance(doc, (DiagnosticsDocV3, DiagnosticsDocV4, DiagnosticsDocV5, DiagnosticsDocV6))
        and doc.bundle_handles is not None
    ):
        bundles = doc.bundle_handles
        shared = getattr(bundles, "shared", 0)
        if bundles.stale + bundles.missing + shared > bundles.checked:
            message = (
                f"{quote(bundles.stale)} stale plus {quote(bundles.missing)} missing"
                + (
                    f" plus {quote(shared)} shared"
                    if isinstance(doc, (DiagnosticsDocV4, DiagnosticsDocV5, DiagnosticsDocV6))
                    else ""
                )
                + f" is more than the {quote(bundles.checked)} bundles checked"
            )
            problems.append(Problem("$.bundle_handles", message))
    if isinstance(doc, (DiagnosticsDocV4, DiagnosticsDocV5, DiagnosticsDocV6)):
        _check_diagnostics_v4(doc, problems)
    if isinstance(doc, (DiagnosticsDocV5, DiagnosticsDocV6)) and doc.matches_upstream is not None:
        _check_upstream_comparison(doc.matches_upstream, problems)
    if isinstance(doc, DiagnosticsDocV6):
        _check_misnamed(doc, problems)
    if isinstance(doc, DiagnosticsDocV6) and doc.cache == CACHE_STATES[2] and not doc.partial:
        # an entry that held no provenance recorded nothing: never a complete graph
        problems.append(Problem("$.partial", f"is false, but the graph was {quote(doc.cache)}"))


def _check_upstream_comparison(compared: Any, problems: list[Problem]) -> None:
    """The relation follows from the counts, and what is listed is what is counted."""
    if compared.relation not in UPSTREAM_RELATIONS:
        return  # reported by the type check
    relation = "differs" if compared.missing else "extends" if compared.added else "equal"
    if compared.relation != relation:
        message = (
            f"is {quote(compared.relation)}, but {quote(compared.added)} added and"
            f" {quote(compared.missing)} missing links make it {quote(relation)}"
        )
        problems.append(Problem("$.matches_upstream.relation", message))
    if len(compared.differences) > compared.missing:
        message = f"lists {len(compared.differences)} links, more than the {quote(compared.missing)} missing"
        problems.append(Problem("$.matches_upstream.differences", message))
    dup = first_duplicate([[d.map, d.key, d.value] for d in compared.differences])
    if dup is not NO_DUPLICATE:
        problems.append(Problem("$.matches_upstream.differences", f"duplicate link {quote(dup)}"))


def _check_diagnostics_v4(doc: DiagnosticsDocV4 | DiagnosticsDocV5 | DiagnosticsDocV6, problems: list[Problem]) -> None:
    cov = doc.coverage
    if cov is not None:
        for name in ("kernels_with_source", "kernels_with_pre_grad"):
            if getattr(cov, name) > cov.kernels:
                message = f"{quote(getattr(cov, name))} is more than the {quote(cov.kernels)} kernels"
                problems.append(Problem(f"$.coverage.{name}", message))
    for i, link in enumerate(doc.inferred_sources):
        if not KERNEL_KEY_RE.search(link.kernel):
            problems.append(Problem(f"$.inferred_sources[{i}].kernel", MSG_KERNEL_KEY))
    dup = first_duplicate([[link.kernel, link.node] for link in doc.inferred_sources])
    if dup is not NO_DUPLICATE:
        problems.append(Problem("$.inferred_sources", f"duplicate source {quote(dup[1])} of {quote(dup[0])}"))
    for i, pre_grad_link in enumerate(doc.inferred_pre_grad):
        dup = first_duplicate(pre_grad_link.pre_grad)
        if dup is not NO_DUPLICATE:
            problems.append(Problem(f"$.inferred_pre_grad[{i}].pre_grad", f"duplicate entry {quote(dup)}"))
    dup = first_duplicate([link.node for link in doc.inferred_pre_grad])
    if dup is not NO_DUPLICATE:
        problems.append(Problem("$.inferred_pre_grad", f"duplicate node {quote(dup)}"))
    for field in ("without_source", "without_pre_grad"):
        gaps = getattr(doc, field)
        for i, gap in enumerate(gaps):
            if not KERNEL_KEY_RE.search(gap.kernel):
                problems.append(Problem(f"$.{field}[{i}].kernel", MSG_KERNEL_KEY))
        dup = first_duplicate([gap.kernel for gap in gaps])
        if dup is not NO_DUPLICATE:
            problems.append(Problem(f"$.{field}", f"duplicate kernel {quote(dup)}"))


def _check_diagnostics_v2(
    doc: DiagnosticsDocV2 | DiagnosticsDocV3 | DiagnosticsDocV4 | DiagnosticsDocV5 | DiagnosticsDocV6,
    problems: list[Problem],
) -> None:
    # complete == not partial and coverage judged and no violation; say which condition fails
    lacking = [
        why
        for why, fails in (
            ("partial is true", doc.partial),
            ("coverage is null", doc.coverage is None),
            ("violations is not empty", bool(doc.violations)),
        )
        if fails
    ]
    if doc.complete and lacking:
        problems.append(Problem("$.complete", f"is true, but {', '.join(lacking)}"))
    elif not doc.complete and not lacking:
        message = "is false, but partial is false, coverage is not null and violations is empty"
        problems.append(Problem("$.complete", message))
    cov = doc.coverage
    if cov is not None:
        if cov.linked_call_sites > cov.call_sites:
            message = f"{quote(cov.linked_call_sites)} is more than the {quote(cov.call_sites)} call sites"
            problems.append(Problem("$.coverage.linked_call_sites", message))
        accounted = cov.reached_nodes + cov.exempt_nodes.dead + cov.exempt_nodes.constant
        if accounted > cov.compute_nodes:
            message = (
                f"{quote(cov.reached_nodes)} reached plus {quote(cov.exempt_nodes.dead)} dead plus"
                f" {quote(cov.exempt_nodes.constant)} constant is more than the {quote(cov.compute_nodes)} compute nodes"
            )
            problems.append(Problem("$.coverage.reached_nodes", message))
    for i, link in enumerate(doc.inferred):
        if not KERNEL_KEY_RE.search(link.kernel):
            problems.append(Problem(f"$.inferred[{i}].kernel", MSG_KERNEL_KEY))
    dup = first_duplicate([[link.node, link.kernel] for link in doc.inferred])
    if dup is not NO_DUPLICATE:
        problems.append(Problem("$.inferred", f"duplicate link of {quote(dup[0])} to {quote(dup[1])}"))


# --- the two decoders ------------------------------------------------------------------------


def fast(run: Decoding) -> Decoded:
    det, version = run.versioned(DIAGNOSTICS, read_version)
    if det.schema is None:
        return det, None, None
    top = run.top()
    run.keys_of(wire.diagnostics_fields(det.schema))
    values = {}
    for name, type_ in wire.diagnostics_field_types(det.schema).items():
        if name in top and name != "version":
            values[name] = run.decode(top[name], type_, f"$.{name}")
    if run.problems:
        return det, None, None
    doc = wire.DIAGNOSTICS_DOCS[det.schema](version=version, **values)
    run.problems.extend(check_diagnostics_types(doc))
    if run.problems:
        return det, None, None
    return det, doc, add(tally_keys(top), tally(list(values.values())))


def full(schema: int, doc: Mapping[str, Any]) -> Any:
    return msgspec.convert(dict(doc), wire.DIAGNOSTICS_DOCS[schema])


# --- --redact-paths: its machine-dependent text (golden files never compare it) ------------------


def redact(doc: dict[str, Any] | None, redactor: Redactor) -> dict[str, Any] | None:
    if doc is None:
        return None
    doc = copy.deepcopy(doc)
    for fault in doc.get("faults", []):
        fault["error"] = redactor.redact_text(fault["error"])
    for misnamed in doc.get("misnamed_handles", []):
        if isinstance(misnamed.get("handle_line"), str):
            misnamed["handle_line"] = redactor.redact_line(misnamed["handle_line"])
        misnamed["node_lines"] = [redactor.redact_line(line) for line in misnamed.get("node_lines", [])]
    return doc


KIND = Kind(
    FILINGS[DIAGNOSTICS],
    version=read_version,
    current="6",
    fast=fast,
    full=full,
    rules=check_diagnostics,
    normalize=as_is,  # never compared by golden files
    redact=redact,
    shape=keyed("faults", "partial"),
)
