"""Inductor's graph caches under tracking: kept on, tracked entries keyed apart, each entry
carrying its provenance, and a hit replaying it (REFERENCE section 8).

A cache hit generates no kernel, so the hook sees nothing of it. Upstream's answer is to store
its two provenance strings on the cached ``CompiledFxGraph`` and log them again on a hit; this
does the same with everything the hook recorded (``model.cached_graph``), through four seams:

* ``FxGraphHashDetails.__init__``: one more field, ``key_component`` and the graph's
  ``source_digest``, so a tracked compile never hits an entry an untracked one wrote (its
  wrapper has no handle comments the mapping could name, and no provenance of ours), tracked
  compiles of different backends or settings never share one, and a model whose lines moved
  is compiled again. The AOTAutograd cache's details inherit it.
* ``compile_fx.fx_codegen_and_compile``: the graph it returns (the one compile_fx then
  saves into the FX-graph cache, or AOTAutograd bundles) gets the stored form of the graph
  the hook just finished, as the attribute ``ATTRIBUTE``.
* ``FxGraphCache.cache_hit_post_compile``: every hit goes through it (the FX-graph cache,
  the AOTAutograd cache's entries, a loaded ``CompiledArtifact``); the stored graph is
  replayed there (``Entries.replay``, then ``Session.emit_replayed``).
* ``compile_fx.trace_structured``: the ``before_pre_grad_graph`` text compile_fx logs, kept
  for the entry, because a hit logs none.

Each change goes through the session's ``Patches``; nothing here raises into a compile.
"""

from __future__ import annotations

import hashlib
import os
from typing import Any

import msgspec

from spyre_provenance.base import errors
from spyre_provenance.base.patches import Patches
from spyre_provenance.base.version import __version__
from spyre_provenance.model import cached_graph
from spyre_provenance.model.cached_graph import CACHE_FORMAT, CachedGraph
from spyre_provenance.model.names import PRE_GRAD_GRAPH
from spyre_provenance.model.records import CACHE_STATES, GraphDiagnostics, GraphResult

#: The attribute of a ``CompiledFxGraph`` holding its ``model.cached_graph`` bytes; pickled
#: with the entry, since the graph's ``__dict__`` is.
ATTRIBUTE = "_spyre_provenance"


def key_component(backend: Any, redactor: Any) -> str:
    """Tracking's part of an Inductor cache key: what makes a tracked entry's provenance
    differ. The package's version and stored form (an older entry is compiled again, not
    misread), the backend, whether it completes stock Inductor's mapping, and the path
    redaction (redacted traces are stored redacted)."""
    rules = None if redactor is None else (redactor.rules, redactor.user, redactor.packages_prefix)
    redaction = "none" if rules is None else hashlib.sha256(repr(rules).encode()).hexdigest()[:16]
    return (
        f"spyre-provenance {__version__} cache form {CACHE_FORMAT}; backend {backend.name};"
        f" beyond upstream {bool(backend.extends_upstream)}; redaction {redaction}"
    )


def source_digest(gm: Any) -> str:
    """A hash of where each node of the graph (and its subgraphs) came from in the user's
    code. Inductor's own key leaves stack traces out: a model whose lines only moved (a
    comment added above them) hits the entry of the old lines, and its provenance would
    name them. Keyed on them, it compiles again and names the lines as they are."""
    digest = hashlib.sha256()
    for module in gm.modules() if gm is not None else ():
        graph = getattr(module, "graph", None)
        for node in getattr(graph, "nodes", ()):
            digest.update(f"{node.name}\0{node.stack_trace or ''}\0".encode())
    return digest.hexdigest()[:16]


def keep(patches: Patches, session: Any) -> None:
    """Install the four seams for ``session`` (a ``capture.hook.Session``)."""
    import torch._inductor.compile_fx as compile_fx
    from torch._inductor.codecache import FxGraphCache, FxGraphHashDetails

    component = key_component(session.backend, session.redactor)
    entries = Entries(session)

    def wrap_codegen(original: Any) -> Any:
        def fx_codegen_and_compile(*args: Any, **kwargs: Any) -> Any:
            before = len(session.results)
            compiled = original(*args, **kwargs)
            entries.store(compiled, session.results[before:])
            return compiled

        fx_codegen_and_compile.__wrapped__ = original  # type: ignore[attr-defined]
        return fx_codegen_and_compile

    original_hit = FxGraphCache.__dict__["cache_hit_post_compile"].__func__

    def cache_hit_post_compile(graph: Any, *args: Any, **kwargs: Any) -> Any:
        cached = cached_graph.decode(getattr(graph, ATTRIBUTE, None))
        lost = entries.before_replay(cached)
        loaded = original_hit(graph, *args, **kwargs)
        if loaded[0] is not None:  # None: the entry could not be loaded, compile_fx compiles
            try:
                entries.replay(cached, graph, lost)
            except Exception as exc:  # noqa: BLE001 - a bug outside the stages: never break the load
                _warn(f"a cache hit not recorded: {type(exc).__name__}: {exc}")
        return loaded

    def wrap_trace(original: Any) -> Any:
        def trace_structured(name: str, metadata_fn: Any = dict, **kwargs: Any) -> Any:
            if name == "artifact" and "payload_fn" in kwargs:  # read only when it is logged
                kwargs["payload_fn"] = entries.keep_pre_grad_text(metadata_fn, kwargs["payload_fn"])
            return original(name, metadata_fn, **kwargs)

        trace_structured.__wrapped__ = original  # type: ignore[attr-defined]
        return trace_structured

    patches.wrap(FxGraphHashDetails, "__init__", lambda original: _keyed(original, component, entries))
    patches.wrap(compile_fx, "fx_codegen_and_compile", wrap_codegen)
    patches.setattr(FxGraphCache, "cache_hit_post_compile", staticmethod(cache_hit_post_compile))
    patches.wrap(compile_fx, "trace_structured", wrap_trace)


def _keyed(original: Any, component: str, entries: Entries) -> Any:
    """``FxGraphHashDetails.__init__``, adding tracking's part of the key (``key_component``
    and the graph's ``source_digest``)."""

    def __init__(details: Any, gm: Any, *args: Any, **kwargs: Any) -> None:
        original(details, gm, *args, **kwargs)
        try:
            sources = source_digest(gm)
        except Exception as exc:  # noqa: BLE001 - never break a compile: this entry is then never hit
            entries.unkeyed += 1
            sources = f"unread in process {os.getpid()}, graph {entries.unkeyed}"
            # the graph is still recorded whole: only its cache entry is lost, so no fault of it
            _warn(f"cache key: {type(exc).__name__}: {exc} (this graph's cache entry will not be hit)")
        details.spyre_provenance = f"{component}; source lines {sources}"  # hashed with every other field

    __init__.__wrapped__ = original  # type: ignore[attr-defined]
    return __init__


class Entries:
    """A session's side of the cache: what each compile stores, what each hit replays."""

    def __init__(self, session: Any) -> None:
        self.session = session
        self._pre_grad: dict[str, str] = {}  # compile id -> its before_pre_grad_graph text
        self._graph_keys = 0
        self.unkeyed = 0  # graphs whose source lines could not be read into their key

    def keep_pre_grad_text(self, metadata_fn: Any, payload_fn: Any) -> Any:
        """``payload_fn``, keeping its text when the artifact is the pre-grad graph."""

        def payload() -> Any:
            text = payload_fn()
            try:
                if metadata_fn().get("name") == PRE_GRAD_GRAPH and isinstance(text, str):
                    self._pre_grad[self._compile_id()] = text
            except Exception as exc:  # noqa: BLE001 - never break the log line; the entry lacks it
                _warn(f"the pre-grad graph not kept for the cache entry: {type(exc).__name__}: {exc}")
            return text

        return payload

    def _compile_id(self) -> str:
        try:
            return str(self.session.inductor.compile_id())
        except Exception:  # noqa: BLE001 - the graph's own stages report an unreadable id
            return "unknown"

    def store(self, compiled: Any, finished: list[GraphResult]) -> None:
        """Give ``compiled`` the stored form of the graph the hook just finished with it."""
        if not finished:
            return
        result = finished[-1]
        try:
            names = [r.name for r in result.records]
            stored = CachedGraph(
                result=result,
                pre_grad_graph=None if result.kind == "backward" else self._pre_grad.get(result.compile_id),
                bundles=self.session.backend.written_bundles(names),
            )
            setattr(compiled, ATTRIBUTE, cached_graph.encode(stored))
            if result.moved_post_grad is not None and hasattr(compiled, "inductor_post_grad_graph_str"):
                # what a hit logs as the post-grad graph: the one the kernels and handles name
                compiled.inductor_post_grad_graph_str = result.moved_post_grad
        except Exception as exc:  # noqa: BLE001 - this graph is whole; a hit of its entry says it lacks it
            _warn(f"provenance not stored with the cache entry: {type(exc).__name__}: {exc}")

    def before_replay(self, cached: CachedGraph | None) -> str | None:
        """Log the pre-grad graph a hit would not, before the hit logs the post-grad graph,
        as compile_fx orders them on a miss. Returns what failed, for the hit's graph."""
        if cached is None or cached.pre_grad_graph is None:
            return None
        try:
            from torch._logging import trace_structured

            text = cached.pre_grad_graph
            trace_structured(
                "artifact",
                metadata_fn=lambda: {"name": PRE_GRAD_GRAPH, "encoding": "string"},
                payload_fn=lambda: text,
            )
        except Exception as exc:  # noqa: BLE001 - the page then links no pre-grad node
            return f"{type(exc).__name__}: the pre-grad graph not logged: {exc}"
        return None

    def replay(self, cached: CachedGraph | None, compiled: Any, lost: str | None = None) -> None:
        """Record a hit as its miss was recorded: the graph's result, its log artifacts
        beside the ones the hit logs itself (mapping, stack traces), its files and bundles;
        ``lost``: what ``before_replay`` could not log."""
        session = self.session
        compile_id = self._compile_id()
        self._graph_keys += 1
        graph_key = -self._graph_keys  # no Inductor graph exists for a hit: a key of its own
        if lost is not None:
            session.faults.note("emit", graph_key, lost)
        if cached is None:
            result = _without_provenance(compile_id, _kind(compiled), session)
            session.faults.note(
                "record collection",
                graph_key,
                "the Inductor cache entry holds no provenance of this package's (written by a compile"
                " that failed to store it); set TORCHINDUCTOR_FORCE_DISABLE_CACHES=1 once to record it again",
            )
        else:
            result = msgspec.structs.replace(
                cached.result, index=len(session.results), compile_id=compile_id, label=session.label
            )
            result.diagnostics.cache = CACHE_STATES[1]
            session.backend.restore_bundles(cached.bundles)
        session.results.append(result)
        session.emit_replayed(result, graph_key)


def _warn(message: str) -> None:
    """A loss of the cache's alone (the graph in hand is recorded whole): said once, never a
    fault of a graph."""
    errors.warn(f"spyre-provenance: {message}", stacklevel=3)


def _kind(compiled: Any) -> str:
    """inference, forward or backward, as compile_fx was asked to compile the graph."""
    options = getattr(compiled, "fx_kwargs", None) or {}
    if options.get("is_backward"):
        return "backward"
    return "inference" if options.get("is_inference") else "forward"


def _without_provenance(compile_id: str, kind: str, session: Any) -> GraphResult:
    return GraphResult(
        index=len(session.results),
        compile_id=compile_id,
        kind=kind,
        records=[],
        node_mappings=None,
        stack_traces=None,
        opspec_handles=None,
        upstream_node_mappings=None,
        diagnostics=GraphDiagnostics(cache=CACHE_STATES[2], mapping="upstream"),
        label=session.label,
        backend=session.backend.name,
    )
