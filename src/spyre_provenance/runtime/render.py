"""``lookup``'s answer as text: the answer first, one block per matching kernel.

Pure: no torch.
"""

from __future__ import annotations

from spyre_provenance.links.misnamed import beside
from spyre_provenance.model.lookup_records import Answer, CallSite, LookupDocument, Match

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
    per_op: dict[tuple[str, str, str], list[Match]] = {}
    for match in answer.matches:
        if match.per_op is not None:  # one block per op kind, however many graphs compiled it
            group = per_op.setdefault((match.model, match.per_op, match.kernel), [])
            group.append(match)
            if len(group) > 1:
                continue
        sites = len(match.call_sites)
        lines.append(
            f"  {match.kernel}  model {match.model}, compile {match.compile_id}, {match.graph} graph, "
            f"{sites} call site{'s' if sites != 1 else ''}  ({match.origin})"
        )
        if match.per_op is not None:
            lines[-1] = f"  {match.kernel}  model {match.model}, per-op compile of {match.per_op}  ({match.origin})"
            lines.append(PER_OP_NOTE)
        for site in match.call_sites:
            lines += _call_site(site)
    for (_, op, kernel), group in per_op.items():  # where the block above stands for several graphs
        at = lines.index(f"  {kernel}  model {group[0].model}, per-op compile of {op}  ({group[0].origin})")
        graphs = ", ".join(f"{m.compile_id} {m.graph}" for m in group)
        lines[at] += f": {len(group)} graph{'s' if len(group) > 1 else ''} ({graphs}), the first shown"
    return "\n".join(lines) + "\n"


#: what lookup says of a per-op compile's source (``links.per_op``: torch-spyre's eager mode)
PER_OP_NOTE = (
    "    one ATen op compiled on its own and reused from every line that calls it: its source below is"
    " the first call's only; each launch's own comes from a trace profiled with with_stack=True"
    " (annotate, annotate --summary)"
)


#: how each frame after the first (``source:``, the first line fused into the kernel) is
#: labelled, so a line that is the kernel's own reads apart from the calls around it
_ROLES = {"fused": "also fused", "enclosing": "enclosing call", "inner": "inner frame"}


def _modules(site: CallSite) -> list[str]:
    """A call site with no user frame, named by its modules: said as module evidence."""
    if not site.modules:
        return []
    lines = ["      module (no frame is the user's; from the nodes' nn_module_stack, not a source line):"]
    for module in site.modules:
        label = "fused" if module.role == "fused" else "enclosing module"
        lines.append(f"        {label}: {module.name}  ({module.module_class})")
    return lines


def _call_site(site: CallSite) -> list[str]:
    lines = [f"    call site {site.key}"]
    if site.source:
        first, *rest = site.source
        lines.append(f"      source: {first.file}:{first.line}")
        if first.code:
            lines.append(f"          {first.code}")
        for frame in rest:
            label = _ROLES[frame.role]
            lines.append(f"        {label}: {frame.file}:{frame.line}" + (f"  {frame.code}" if frame.code else ""))
    else:
        lines.append("      source: (no stack trace recorded)")
    lines += _modules(site)
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
        if opspec.own is not None:
            own = opspec.own
            lines.append("        " + beside(own.nodes, own.aten_ops, own.sources, own.differs))
    if site.provenance_key or site.bundle_folder:
        key, folder = site.provenance_key or "(not recorded)", site.bundle_folder or "(none)"
        lines.append(f"      provenance key: {key}, bundle folder: {folder}")
    for path in site.bundle_files:
        lines.append(f"      bundle: {path}")
    return lines
