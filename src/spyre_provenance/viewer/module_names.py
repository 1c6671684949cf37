"""The page's modules: the call sites of a graph none of whose frames is the user's, named by
the modules their nodes ran in (``model.modules``, the rule ``lookup`` and the time summary
follow too).

A model built of torch's own modules has only torch's frames in its stack traces (DDP's
``forward``, ``torch/nn``), so the source panel alone would show a line of torch as the one
"that made kernels". Each graph gets ``modules``, each with the call sites whose ops it
ran (``ran_calls``) and those it encloses (``enclosing_calls``); each such call site ``modules``, the positions of
its own modules. The page shows them as module evidence beside the source lines, never as
lines: a module has no file and no line number. With a trace, each module gets the time the
summary counts under it (``module_time_us``: rows ``placed_by`` ``module``).

Pure: no torch.
"""

from __future__ import annotations

from typing import Any

from spyre_provenance.model.modules import MODULE_EVIDENCE, module_names, read_module_stacks


def add_modules(graph: dict[str, Any], stack_traces: dict[str, Any], diagnostics: dict[str, Any] | None) -> None:
    """Give ``graph`` (the page's, its ``calls`` built) ``modules``, and each call site named by
    its modules ``modules``; a graph with none gets an empty ``modules``."""
    stacks = read_module_stacks(diagnostics)
    mods: list[dict[str, Any]] = []
    at: dict[str, int] = {}
    for c, call in enumerate(graph["calls"]):
        named = module_names(stack_traces.get(call["key"]) or [], stacks.get(call["key"]))
        if named is None:
            continue
        for part, role in ((named.own, "ran_calls"), (named.enclosing, "enclosing_calls")):
            for module in part:
                if module.name not in at:
                    at[module.name] = len(mods)
                    mods.append(
                        {"name": module.name, "module_class": module.cls, "ran_calls": [], "enclosing_calls": []}
                    )
                mods[at[module.name]][role].append(c)
        call["modules"] = [at[m.name] for m in named.own]
    graph["modules"] = mods


def module_times(graph: dict[str, Any], rows: list[Any], label: str) -> None:
    """Add ``module_time_us`` (module position -> us) to ``graph`` from the time summary's rows named by a
    module (its lines and its module calls alike: each module's own row), the kernels of
    graph ``label`` only."""
    at = {m["name"]: i for i, m in enumerate(graph.get("modules") or ())}
    for row in rows:
        i = at.get(row.code) if row.placed_by == MODULE_EVIDENCE else None
        if i is None:
            continue
        spent = sum(k.total_us for k in row.kernels if k.graph == label)
        if spent:
            times = graph.setdefault("module_time_us", {})
            times[str(i)] = times.get(str(i), 0.0) + spent
