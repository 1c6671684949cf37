"""``spyre-provenance view``'s page in a real browser: Debian's chromium, headless, driven by
Playwright (tests/helpers/chromium.py), opened from ``file://`` with the network off.

For each compiled case (the built-in MLP, in inference and in training with a profiled run,
zoo models in inference and training) the test clicks every element of every kind in every
graph (source line, pre-grad node, post-grad node, call site, OpSpec, bundle) and compares
the set the page lights, and the call sites it marks as their containers, with the relation
computed here from the artifact files themselves (the JSON in the graph folders and the
bundle files, never the page's embedded data), element by element:

    post-grad node -> its pre-grad nodes, the OpSpecs whose handle names it (ir_chain,
                      fused-from children's), their lines and bundles
    pre-grad node  -> its post-grad nodes, the OpSpecs naming them, their lines and bundles
    OpSpec         -> its handle's lines, the post-grad nodes it names, its bundle
    bundle         -> its OpSpecs and what each lights
    source line    -> the OpSpecs from it, the nodes they name, those nodes' pre-grad nodes
    call site      -> everything it holds and its nodes' pre-grad nodes
    a call site related only kernel-wide (mapping, stack traces) lights when none of the lit
    OpSpecs is its own; every other one holding a lit OpSpec or post-grad node is a container.

Then: search (a kernel name, a handle id), a URL fragment selecting a kernel, a backward
kernel leading to the forward graph's kernels at the line it differentiates, keyboard
navigation, and the profiled run's times (``--trace``) on the call sites.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import quote

import pytest

from helpers import chromium  # tests/helpers/chromium.py
from helpers.where import ZOO  # tests/ is on sys.path

pytestmark = [pytest.mark.browser, pytest.mark.compile]
browser = chromium.browser  # the module's chromium: one fixture for every viewer test file

MODELS = ZOO / "models.py"
#: compile arguments, each shared with another test module's session compile
CASES = {
    "mlp": ("mlp",),  # tests/compile's demo
    "mlp-inductor": ("mlp", "--backend", "inductor"),  # no OpSpecs: kernel-wide evidence alone
    "residual": ("residual", "--backend", "reference"),
    "mlp-train-profile": ("mlp", "--train", "--profile"),  # tests/compile/test_annotate.py
    "shared_block-train-profile": (f"{MODELS}:shared_block", "--backend", "reference", "--train", "--profile"),
    "attention-train": (f"{MODELS}:attention", "--backend", "reference", "--train"),  # tests/models/test_zoo.py
    "item_break": (f"{MODELS}:item_break", "--backend", "reference"),  # two graphs
}
_FRAME = re.compile(r'File "([^"]+)", line (\d+)')
_GRAPH_NAME = re.compile(r"graph_(?:(?P<label>.*?)_)?[0-9]+_.*")

Element = tuple[str, str]


def _is_users(file: str) -> bool:
    return not (
        "/torch/" in file
        or re.search(r"/lib/python3[.0-9]*/(?!site-packages/)", file)
        or ("spyre_provenance/" in file and not file.endswith("compile/examples.py"))
        or file.startswith("<")
    )  # (kind, key): what the page's rows carry as data-kind and data-key


# --- the relation, from the artifact files ----------------------------------------------------


class Relation:
    """One graph folder's elements and edges, read from its files."""

    def __init__(
        self, folder: Path, served: dict[str, str] | None = None, logged: tuple[str, dict[str, dict]] | None = None
    ) -> None:
        """``served``: the bundles (``<folder>/sdsc_<i>.json``) of torch-spyre's own bundle
        folders, each by that path and by the id of the handle it carries; ``logged``: a
        graph of a plain TORCH_TRACE log instead of a graph folder (its label, and its
        artifacts by name)."""

        def load(name: str) -> dict:
            if logged is not None:
                return logged[1].get(name, {})
            path = folder / f"{name}.json"
            return json.loads(path.read_text()) if path.is_file() else {}

        mapping = load("inductor_provenance_tracking_node_mappings")
        traces = load("inductor_provenance_tracking_kernel_stack_traces")
        opspecs = load("spyre_opspec_debug_handles")
        diagnostics = load("spyre_provenance_diagnostics")
        if logged is not None:
            label, self.label = "", logged[0]
        else:
            label = _GRAPH_NAME.fullmatch(folder.name)["label"] or folder.parent.name
            self.label = f"{label} {diagnostics['compile_id']} {diagnostics['graph']}"
        self.down: dict[Element, set[Element]] = {}
        self.up: dict[Element, set[Element]] = {}
        for pre, posts in mapping.get("preToPost", {}).items():
            self._edges(("pre", pre), (("post", p) for p in posts))
        for post, pres in mapping.get("postToPre", {}).items():
            for pre in pres:
                self._edge(("pre", pre), ("post", post))
        for key, posts in mapping.get("cppCodeToPost", {}).items():
            self.down.setdefault(("call", key), set())
            for post in posts:
                self._edge(("post", post), ("call", key))
        for post, keys in mapping.get("postToCppCode", {}).items():
            for key in keys:
                self._edge(("post", post), ("call", key))
        self.innermost: dict[str, set[str]] = {}  # call site -> the user's line each trace ends at
        for key, frames in traces.items():
            for trace in frames:
                found = _FRAME.findall(trace)
                for file, line in found:
                    self._edge(("line", f"{file}:{line}"), ("call", key))
                users = [f"{file}:{line}" for file, line in found if _is_users(file)]
                self.innermost.setdefault(key, set()).update(users[-1:])
        handles = opspecs.get("handles", {})
        bundles = folder.parent / "sdsc" / label / "inductor-spyre"
        posts = {p for kind, p in self.down if kind == "post"}
        self.named: dict[Element, set[Element]] = {}  # OpSpec -> the post-grad nodes its handle names
        for key, specs in opspecs.get("kernels", {}).items():
            written = {s.get("buffer") for s in specs}
            # the bundle folder the OpSpec artifact records for the call site
            kernel = opspecs.get("bundles", {}).get(key, {}).get("folder") or key.rsplit(":", 1)[0]
            for i, spec in enumerate(specs):
                element = ("spec", f"{key}#{i}")
                self._edge(("call", key), element)
                chain = self._chain(handles, spec.get("debug_handle"), set())
                self.named[element] = {("post", n) for n in chain if n in posts and n not in written}
                for line in self._handle_lines(handles.get(spec.get("debug_handle")), handles):
                    self._edge(("line", line), element)
                    self._edge(("line", line), ("call", key))
                if (bundles / kernel / f"sdsc_{i}.json").is_file() or f"{kernel}/sdsc_{i}.json" in (served or {}):
                    self._edge(element, ("bundle", f"{kernel}/sdsc_{i}.json"))
                elif spec.get("debug_handle") in (served or {}):
                    self._edge(element, ("bundle", served[spec["debug_handle"]]))

    def _handle_lines(self, handle: dict | None, handles: dict) -> Iterable[str]:
        if not handle:
            return
        source = handle.get("source")
        if source:
            last = source.get("end_line") or source["start_line"]
            for n in range(source["start_line"], last + 1):
                yield f"{source['file']}:{n}"
        for child in handle.get("fused_from", []):
            yield from self._handle_lines(handles.get(child), handles)

    def _chain(self, handles: dict, hid: str | None, seen: set[str]) -> list[str]:
        if hid is None or hid in seen or hid not in handles:
            return []
        seen.add(hid)
        found = list(handles[hid].get("ir_chain", []))
        for child in handles[hid].get("fused_from", []):
            found += self._chain(handles, child, seen)
        return found

    def _edge(self, a: Element, b: Element) -> None:
        self.down.setdefault(a, set()).add(b)
        self.up.setdefault(b, set()).add(a)
        self.down.setdefault(b, set())

    def _edges(self, a: Element, bs: Iterable[Element]) -> None:
        self.down.setdefault(a, set())
        for b in bs:
            self._edge(a, b)

    def _of(self, element: Element, kind: str, edges: dict[Element, set[Element]]) -> set[Element]:
        return {e for e in edges.get(element, ()) if e[0] == kind}

    def lit(self, element: Element) -> set[Element]:
        return self.lit_and_boxed(element)[0]

    def lit_and_boxed(self, element: Element) -> tuple[set[Element], set[Element]]:
        """What a click on ``element`` lights, and the call sites marked as containers."""
        kind = element[0]
        found, wide, specs = {element}, set(), set()
        if kind == "call":
            specs = self._of(element, "spec", self.down)
            nodes = self._of(element, "post", self.up)
            found |= (
                nodes | self._of(element, "line", self.up) | {q for p in nodes for q in self._of(p, "pre", self.up)}
            )
        elif kind in ("spec", "bundle"):
            specs = {element} if kind == "spec" else self._of(element, "spec", self.up)
            for s in specs:
                found |= self.named[s] | self._of(s, "line", self.up)
        elif kind == "post":
            specs = {s for s, named in self.named.items() if element in named}
            found |= self._of(element, "pre", self.up) | {line for s in specs for line in self._of(s, "line", self.up)}
            wide = self._of(element, "call", self.down)
        elif kind == "pre":
            nodes = self._of(element, "post", self.down)
            specs = {s for s, named in self.named.items() if named & nodes}
            found |= nodes | {line for s in specs for line in self._of(s, "line", self.up)}
            wide = {c for p in nodes for c in self._of(p, "call", self.down)}
        elif kind == "line":
            specs = self._of(element, "spec", self.down)
            nodes = {p for s in specs for p in self.named[s]}
            found |= nodes | {q for p in nodes for q in self._of(p, "pre", self.up)}
            wide = self._of(element, "call", self.down)
        found |= specs | {b for s in specs for b in self._of(s, "bundle", self.down)}
        held = {c for s in specs for c in self._of(s, "call", self.up)}
        found |= wide - held
        holding = held | {c for p in found if p[0] == "post" for c in self._of(p, "call", self.down)}
        return found, {c for c in holding if c not in found}

    def elements(self, kind: str) -> list[str]:
        return sorted(key for k, key in self.down if k == kind)


def relations(out: Path) -> list[Relation]:
    return [Relation(f) for f in sorted(out.rglob("graph_*")) if (f / "spyre_provenance_diagnostics.json").is_file()]


# --- the page -----------------------------------------------------------------------------------


class Page:
    """The viewer page in an offline context; every request it makes is recorded."""

    def __init__(self, browser, html: Path, fragment: str = "") -> None:
        self.context = browser.new_context(offline=True, viewport={"width": 1500, "height": 900})
        self.page = self.context.new_page()
        self.url = html.resolve().as_uri()
        self.requests: list[str] = []
        self.errors: list[str] = []
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.goto(self.url + fragment)
        self.page.wait_for_selector("body[data-ready='1']", timeout=10_000)

    def close(self) -> None:
        self.context.close()

    def show(self, label: str) -> None:
        """Show the graph ``label``: its entry in the graph selector, or a per-op compile's in
        its op's selector (the graph selector has one entry per op kind)."""
        options = self.page.eval_on_selector_all("#graph option", "os => os.map(o => [o.value, o.textContent])")
        found = [v for v, text in options if text.startswith(label + " (")]
        if found:
            (value,) = found
            self.page.select_option("#graph", value)
            return
        per_op = self.page.eval_on_selector_all("#graph option[data-per-op]", "os => os.map(o => o.value)")
        for entry in per_op:
            self.page.select_option("#graph", entry)
            compiles = self.page.eval_on_selector_all("#perop option", "os => os.map(o => [o.value, o.textContent])")
            found = [v for v, text in compiles if text.startswith(label + " (")]
            if found:
                (value,) = found
                self.page.select_option("#perop", value)
                return
        raise AssertionError(f"no graph {label} in the page's selectors")

    def keys(self, kind: str) -> list[str]:
        return self.page.eval_on_selector_all(f"#p-{kind} .row", "es => es.map(e => e.dataset.key)")

    def click(self, kind: str, key: str) -> None:
        (row,) = [r for r in self.page.query_selector_all(f"#p-{kind} .row") if r.get_attribute("data-key") == key]
        row.click()

    def lit(self) -> set[Element]:
        return {
            tuple(x)
            for x in self.page.eval_on_selector_all(".row.lit", "es => es.map(e => [e.dataset.kind, e.dataset.key])")
        }

    def boxed(self) -> set[Element]:
        return {
            tuple(x)
            for x in self.page.eval_on_selector_all(".row.box", "es => es.map(e => [e.dataset.kind, e.dataset.key])")
        }

    def visible(self, kind: str) -> list[str]:
        return self.page.eval_on_selector_all(f"#p-{kind} .row:not(.hidden)", "es => es.map(e => e.dataset.key)")


def lit_mismatches(page: Page, relation: Relation) -> list[str]:
    """Show ``relation``'s graph, check each panel lists exactly its elements, click every
    element and say where the page lit, or marked as a container, other than the relation."""
    page.show(relation.label)
    problems = []
    for kind in ("line", "pre", "post", "call", "spec", "bundle"):
        shown = page.keys(kind)
        # the page lists exactly the graph's elements of this kind
        assert sorted(shown) == relation.elements(kind), f"{relation.label}: the {kind} panel"
        for key in shown:
            page.click(kind, key)
            (want, boxes), got, boxed = relation.lit_and_boxed((kind, key)), page.lit(), page.boxed()
            if got != want:
                problems.append(
                    f"{relation.label} {kind} {key}: lit {sorted(got - want)} too many, {sorted(want - got)} missing"
                )
            if boxed != boxes:
                problems.append(f"{relation.label} {kind} {key}: containers {sorted(boxed)}, not {sorted(boxes)}")
    return problems


@pytest.fixture(scope="module", params=list(CASES), ids=list(CASES))
def viewed(request, compile_case, tmp_path_factory):
    """(the compile's --out, the page ``view`` wrote, its Relations), once per case."""
    case = compile_case(*CASES[request.param])
    assert case.returncode == 0, case.stdout + case.stderr[-3000:]
    from spyre_provenance import cli

    html = tmp_path_factory.mktemp("view") / "page.html"
    trace = next((case.out / "profile").glob("*.trace.json"), None) if (case.out / "profile").is_dir() else None
    args = [str(case.out), "-o", str(html)] + (["--trace", str(trace)] if trace else [])
    assert cli.main(["view", *args]) == 0
    return case.out, html, relations(case.out), trace


def test_every_kind_of_element_lights_exactly_its_relatives(browser, viewed):
    out, html, graphs, _ = viewed
    page = Page(browser, html)
    try:
        problems = [problem for relation in graphs for problem in lit_mismatches(page, relation)]
        assert not problems, "\n".join(problems[:10])
        if any(r.elements("spec") for r in graphs):  # stock Inductor has neither OpSpecs nor bundles
            assert any(r.elements("bundle") for r in graphs), "no bundle in the out folder: nothing tested of bundles"
        else:  # the kernel-wide rule: a post-grad node lights the call sites the mapping puts it in
            assert all(
                r.lit(("post", p)) & {("call", c) for c in r.elements("call")}
                for r in graphs
                for p in r.elements("post")
                if r.down[("post", p)]
            )
        assert page.errors == []
        # the selector groups each compile's graphs (its forward and backward) under its id
        groups = page.page.eval_on_selector_all("#graph optgroup", "gs => gs.map(g => g.label)")
        assert groups == list(dict.fromkeys(" compile ".join(r.label.rsplit(" ", 2)[:2]) for r in graphs))
        # opened from file:// with the network off: the page asked for nothing but itself
        assert [u for u in page.requests if u != page.url] == []
    finally:
        page.close()


def test_the_seed_mlps_relu_lights_its_pre_grad_node_line_and_opspec_only(browser, viewed, request):
    """Issue 47's example: on the seed MLP (one fused kernel), post-grad ``relu`` lights
    pre-grad ``h``, the line ``h = self.act(self.fc1(x))``, the ``relufwd`` OpSpec and its
    bundle, and marks the kernel as their container; nothing else."""
    out, html, graphs, _ = viewed
    if request.node.callspec.params["viewed"] != "mlp":
        pytest.skip("the seed MLP's case")
    (relation,) = graphs
    (folder,) = [f for f in out.rglob("graph_*") if f.is_dir()]
    opspecs = json.loads((folder / "spyre_opspec_debug_handles.json").read_text())
    ((key, specs),) = opspecs["kernels"].items()
    (i,) = [i for i, spec in enumerate(specs) if spec["op"] == "relufwd"]
    (bundle,) = relation.down[("spec", f"{key}#{i}")]
    source = opspecs["handles"][specs[i]["debug_handle"]]["source"]["file"]
    (line,) = [
        n for n, text in enumerate(Path(source).read_text().splitlines(), 1) if "h = self.act(self.fc1(x))" in text
    ]
    page = Page(browser, html)
    try:
        page.click("post", "relu")
        assert page.lit() == {
            ("post", "relu"),
            ("pre", "h"),
            ("line", f"{source}:{line}"),
            ("spec", f"{key}#{i}"),
            bundle,
        }
        assert page.boxed() == {("call", key)}
        assert page.page.eval_on_selector(".row.box", "e => getComputedStyle(e).outlineStyle") == "dashed"
        assert page.page.eval_on_selector(".row.lit", "e => getComputedStyle(e).outlineStyle") != "dashed"
        # issue 55 point 9: pre-grad linear_1 lights its own line 39 (fc2's), as line 39 lights
        # linear_1: the relation is the same both ways
        fc2_line = line + 1  # the seed MLP's next line: return self.fc2(h)
        assert Path(source).read_text().splitlines()[fc2_line - 1].strip() == "return self.fc2(h)"
        page.click("pre", "linear_1")
        assert ("line", f"{source}:{fc2_line}") in page.lit()
        page.click("line", f"{source}:{fc2_line}")
        assert ("pre", "linear_1") in page.lit()
    finally:
        page.close()


def _tlparse_graphs(out: Path, relation: Relation, name: str) -> list[str]:
    """tlparse's own files of ``name`` (``before_pre_grad_graph``...) in the compile folder of
    ``relation``'s graph, in log order (a training compile's forward, then its backward)."""
    label, compile_id, _ = relation.label.split(" ")
    frame, rest = compile_id.split("/")
    frame_compile, _, attempt = rest.partition("_")  # 0/0_1: attempt 1
    folder = out / "tlparse" / label / f"-_{frame}_{frame_compile}_{attempt or 0}"
    files = sorted(folder.glob(f"{name}_*.txt"), key=lambda f: int(f.stem.rsplit("_", 1)[1]))
    return [f.read_text() for f in files]


def _as_shown(text: str) -> list[str]:
    """A graph's payload as the page shows it: torch's ``# graph id`` comment (an address that
    differs in every run) and the blank lines it leaves at the end are not shown."""
    lines = [line for line in text.splitlines() if not re.fullmatch(r"\s*# graph id: \d+\s*", line)]
    while lines and not lines[-1].strip():
        lines.pop()
    return lines


_PANEL_TEXT = """body => {
  const shown = [];
  for (const e of body.querySelectorAll('.row, .ctx, .file')) {
    if (e.classList.contains('file')) break;  // the nodes on no line follow
    const ln = e.querySelector('.ln');
    shown.push([e.dataset.key || null, e.textContent.slice(ln ? ln.textContent.length : 0)]);
  }
  return shown;
}"""


def test_the_graphs_are_shown_as_tlparse_shows_them_each_node_on_its_line(browser, viewed):
    """The pre-grad and post-grad panels hold the graph's code, line for line tlparse's own
    file of it, and each node's row is the line tlparse finds it on (its name before the
    first ``=``, then the first ``:``), so the line lights with the node."""
    out, html, graphs, _ = viewed
    page = Page(browser, html)
    try:
        for relation in graphs:
            page.show(relation.label)
            nth = 1 if relation.label.endswith("backward") else 0
            for kind, name in (("pre", "before_pre_grad_graph"), ("post", "inductor_post_grad_graph")):
                texts = _tlparse_graphs(out, relation, name)
                want = _as_shown(texts[min(nth, len(texts) - 1)])  # one pre-grad graph per compile
                shown = page.page.eval_on_selector(f"#p-{kind} .body", _PANEL_TEXT)
                assert [text for _, text in shown] == want, f"{relation.label} {kind}"
                rows = {key: text for key, text in shown if key is not None}
                for key, text in rows.items():
                    assert text.split("=", 1)[0].split(":", 1)[0].strip() == key, (relation.label, key, text)
                named = {
                    text.split("=", 1)[0].split(":", 1)[0].strip() for text in want if not text.strip().startswith("#")
                }
                # every node of the relation that has a line is shown on it
                assert {k for k in relation.elements(kind) if k in named} == set(rows), f"{relation.label} {kind}"
    finally:
        page.close()


def test_a_call_site_shows_its_wrapper_call_and_handle_comment(browser, viewed):
    out, html, graphs, _ = viewed
    logged = "\n".join(p.read_text() for p in (out / "trace").glob("*.log"))
    page = Page(browser, html)
    try:
        for relation in graphs:
            page.show(relation.label)
            for key in relation.elements("call"):
                page.click("call", key)
                lines = page.page.inner_text("#bundle-view").splitlines()
                assert lines[1] == f"# [Provenance debug handles] {key}", lines
                assert key.rsplit(":", 1)[0] in lines[2] and re.search(rf"\n\t\s*{re.escape(lines[2])}\n", logged), (
                    lines
                )
    finally:
        page.close()


def test_search_filters_call_sites_by_kernel_name_and_handle_id(browser, viewed):
    out, html, graphs, _ = viewed
    relation = max(graphs, key=lambda r: len(r.elements("call")))
    folder = next(f for f in sorted(out.rglob("graph_*")) if Relation(f).label == relation.label)
    if not (folder / "spyre_opspec_debug_handles.json").is_file():
        pytest.skip("stock Inductor writes no OpSpecs: no handle id to search by")
    opspecs = json.loads((folder / "spyre_opspec_debug_handles.json").read_text())
    page = Page(browser, html)
    try:
        page.show(relation.label)
        calls = relation.elements("call")
        name = calls[-1].rsplit(":", 1)[0]
        page.page.fill("#search", name)
        # a kernel name: the call sites of that kernel (its key holds the name); nothing else here matches it
        assert page.visible("call") == [k for k in page.keys("call") if name in k.lower()] != []
        handle = opspecs["kernels"][calls[0]][0]["debug_handle"]
        page.page.fill("#search", handle)
        holders = {key for key, specs in opspecs["kernels"].items() for s in specs if s["debug_handle"] == handle}
        holders |= {
            key
            for key, specs in opspecs["kernels"].items()
            for s in specs
            if handle in opspecs["handles"][s["debug_handle"]].get("fused_from", [])
        }
        assert set(page.visible("call")) == holders
        # every OpSpec shown is one of a matching call site's
        assert {k.rsplit("#", 1)[0] for k in page.visible("spec")} == holders
        # a source line (file:line): the call sites it made, its OpSpecs' included
        lines = relation.elements("line")
        line = next(x for x in lines if not any(x in other for other in lines if other != x))  # file:4 is in file:42
        page.page.fill("#search", line)
        made = {key for kind, key in relation.down[("line", line)] if kind == "call"}
        assert set(page.visible("call")) == made != set()
        page.page.fill("#search", handle)
        page.page.press("#search", "Enter")  # selects the first match
        assert page.page.eval_on_selector("#p-call .row.sel", "e => e.dataset.key") in holders
    finally:
        page.close()


def test_a_fragment_link_selects_a_kernel_and_the_backward_leads_to_the_forward_line(browser, viewed):
    out, html, graphs, _ = viewed
    for gi, relation in enumerate(graphs):
        key = relation.elements("call")[-1]
        page = Page(browser, html, f"#g={gi}&call={quote(key, safe='')}")
        try:
            assert page.page.eval_on_selector("#p-call .row.sel", "e => e.dataset.key") == key
            assert page.lit() == relation.lit(("call", key))
            if "backward" not in relation.label:
                continue
            # the backward kernel's source lines are forward lines: a link leads to the forward kernels there
            lines = {k for kind, k in relation.lit(("call", key)) if kind == "line"}
            forward = [
                r for r in graphs if r is not relation and r.label.replace("forward", "backward") == relation.label
            ]
            assert lines and forward
            at_line = {
                key
                for (kind, key), above in forward[0].up.items()
                if kind == "call" and lines & {line for k, line in above if k == "line"}
            }
            link = page.page.query_selector(
                f"#detail a:text-is('{forward[0].label}: {len(at_line)} kernel{'s' if len(at_line) != 1 else ''}')"
            )
            assert link is not None, page.page.inner_text("#detail")
            link.click()
            assert page.page.eval_on_selector("#p-call .row.sel", "e => e.dataset.key") in at_line
        finally:
            page.close()


def test_keyboard_moves_within_and_across_panels(browser, viewed):
    out, html, graphs, _ = viewed
    if not graphs[0].elements("spec"):
        pytest.skip("stock Inductor writes no OpSpecs: no panel to the right of the call sites to move to")
    page = Page(browser, html)
    try:
        page.show(graphs[0].label)
        calls = page.keys("call")
        page.page.keyboard.press("ArrowDown")  # nothing selected: the first call site
        selected = lambda: page.page.eval_on_selector(".row.sel", "e => [e.dataset.kind, e.dataset.key]")  # noqa: E731
        assert selected() == ["call", calls[0]]
        if len(calls) > 1:
            page.page.keyboard.press("ArrowDown")
            assert selected() == ["call", calls[1]]
            page.page.keyboard.press("ArrowUp")
        page.page.keyboard.press("ArrowRight")  # into the OpSpecs: one of the kernel's
        kind, key = selected()
        assert kind == "spec" and key.rsplit("#", 1)[0] == calls[0]
        page.page.keyboard.press("ArrowLeft")
        page.page.keyboard.press("ArrowLeft")  # the post-grad nodes: one the kernel computes
        kind, key = selected()
        assert (kind, key) in graphs[0].lit(("call", calls[0]))
        page.page.keyboard.press("Escape")
        assert page.page.query_selector(".row.sel") is None
    finally:
        page.close()


def test_a_profiled_run_times_each_call_site_and_shades_its_lines(browser, viewed):
    out, html, graphs, trace = viewed
    if trace is None:
        pytest.skip("this case has no profiled run")
    events = json.loads(trace.read_text())["traceEvents"]
    # independently: each kernel event names its call site in the args annotate gave it
    expected: dict[tuple[str, str], int] = {}
    for e in events:
        args = e.get("args") or {}
        if e.get("ph") == "X" and "spyre_provenance_call_site" in args:
            site = (args["spyre_provenance_graph"], args["spyre_provenance_call_site"])
            expected[site] = expected.get(site, 0) + 1
    assert expected
    page = Page(browser, html)
    try:
        for relation in graphs:
            page.show(relation.label)
            texts = page.page.eval_on_selector_all("#p-call .row", "es => es.map(e => [e.dataset.key, e.textContent])")
            for key, text in texts:
                calls = expected.get((relation.label, key))
                if calls is None:
                    assert " call" not in text.split("OpSpec")[-1], text
                else:
                    assert re.search(rf"[0-9.]+ (us|ms), {calls} calls?\b", text), text
            shaded = page.page.eval_on_selector_all(
                "#p-line .row", "es => es.filter(e => e.style.background).map(e => e.dataset.key)"
            )
            # a line is shaded when a timed kernel's stack trace ends there (its innermost frame
            # of the user's: not torch, the standard library or this package but its examples)
            timed = {key for graph, key in expected if graph == relation.label}
            assert set(shaded) == {line for key in timed for line in relation.innermost.get(key, ())}
            # an element: the time of the kernels it lights or that hold it
            for post in relation.elements("post")[:5]:
                lit, boxes = relation.lit_and_boxed(("post", post))
                holding = {key for kind, key in lit | boxes if kind == "call" and key in timed}
                page.click("post", post)
                detail = page.page.inner_text("#detail")
                if holding:
                    n = len(holding)
                    assert re.search(rf"time of the kernels holding it: [0-9.]+ (us|ms) in {n} kernels?\b", detail)
                else:
                    assert "time of the kernels" not in detail, detail
    finally:
        page.close()


def screenshot(browser, html: Path, out: Path, shot: Path) -> list[str]:
    """The docs' picture of the page (docs/scripts/screenshot.py): the forward graph's first
    kernel clicked, so every panel shows what it lights. Problems with the lit set (the
    relation from ``out``'s files) are returned, and then no picture is written."""
    graphs = relations(out)
    relation = next((r for r in graphs if r.label.endswith("forward")), graphs[0])
    page = Page(browser, html)
    try:
        page.show(relation.label)
        key = relation.elements("call")[0]
        page.click("call", key)
        spec = next(k for kind, k in sorted(relation.lit(("call", key))) if kind == "spec")
        page.click("spec", spec)  # the OpSpec's handle and bundle in the bundle panel
        want, got = relation.lit(("spec", spec)), page.lit()
        if got != want:
            return [f"{relation.label} spec {spec}: lit {sorted(got ^ want)} differ"]
        page.page.screenshot(path=str(shot))
        return []
    finally:
        page.close()


def test_the_docs_screenshot_is_taken_of_a_checked_page(browser, viewed, tmp_path):
    out, html, graphs, _ = viewed
    if not any(r.elements("spec") for r in graphs):
        pytest.skip("stock Inductor writes no OpSpecs: the picture shows one clicked")
    assert screenshot(browser, html, out, tmp_path / "view.png") == []
    assert (tmp_path / "view.png").read_bytes().startswith(b"\x89PNG")
