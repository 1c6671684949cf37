"""``lookup``'s answer as text: the answer first, one block per matching kernel.

Pure: no torch.
"""

from __future__ import annotations

from spyre_provenance.model.lookup_records import Answer, CallSite, LookupDocument

_FORMS = {
    "key": "mapping key",
    "handle": "OpSpec debug handle",
    "kernel": "kernel name",
    "event": "torch-spyre device kernel event",
    "provenance_key": "torch-spyre kernel provenance key",
    "cpu_span": "torch-spyre CPU span",
    "device_timeline": "device-timeline event (IBM trace analyzer)",
}


def render(document: LookupDocument) -> str:
    return "\n".join(_answer(a) for a in document.answers)


def _answer(answer: Answer) -> str:
    form = _FORMS.get(answer.form, answer.form)
    if not answer.matches:
        lines = [f"{answer.query}: no kernel of that {form} in the provenance read"]
        if answer.closest:
            lines.append(f"  closest known: {', '.join(answer.closest)}")
        return "\n".join(lines) + "\n"
    count = len(answer.matches)
    lines = [f"{answer.query} ({form}): {count} kernel{'s' if count != 1 else ''}"]
    for match in answer.matches:
        sites = len(match.call_sites)
        lines.append(
            f"  {match.kernel}  model {match.model}, compile {match.compile_id}, {match.graph} graph, "
            f"{sites} call site{'s' if sites != 1 else ''}  ({match.origin})"
        )
        for site in match.call_sites:
            lines += _call_site(site)
    return "\n".join(lines) + "\n"


def _call_site(site: CallSite) -> list[str]:
    lines = [f"    call site {site.key}"]
    if site.source:
        first, *rest = site.source
        lines.append(f"      source: {first.file}:{first.line}")
        if first.code:
            lines.append(f"          {first.code}")
        for frame in rest:
            lines.append(f"        also: {frame.file}:{frame.line}" + (f"  {frame.code}" if frame.code else ""))
    else:
        lines.append("      source: (no stack trace recorded)")
    lines.append(f"      post-grad nodes: {', '.join(site.post_grad_nodes) or '(none)'}")
    lines.append(f"      pre-grad nodes: {', '.join(site.pre_grad_nodes) or '(none)'}")
    aten = ", ".join(site.aten_ops) or "(none)"
    lines.append(f"      Original ATen: {aten}" + (f"  (from {site.aten_from})" if site.aten_from else ""))
    for opspec in site.opspecs:
        extra = [x for x in (opspec.aten_op, opspec.source) if x]
        lines.append(
            f"      OpSpec {opspec.op} -> {opspec.buffer or '?'}: handle {opspec.debug_handle or '(none)'}"
            + (f"  ({'; '.join(extra)})" if extra else "")
        )
    if site.provenance_key or site.bundle_folder:
        key, folder = site.provenance_key or "(not recorded)", site.bundle_folder or "(none)"
        lines.append(f"      provenance key: {key}, bundle folder: {folder}")
    for path in site.bundle_files:
        lines.append(f"      bundle: {path}")
    return lines
