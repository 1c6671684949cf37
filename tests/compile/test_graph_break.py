"""Several graphs in one log: a graph break gives Dynamo two frames, two compile folders.

Every compile folder gets its page from ``open``, each with its own pre-grad graph, code
and mapping, every kernel linked (the per-kernel check for these cases is in
tests/compile/test_open.py). Compiles shared through the session ``open_case`` fixture.
"""

from __future__ import annotations

import pytest

from helpers import tlparse_page
from spyre_provenance.logs import tlparse_render
from spyre_provenance.logs.graphs import read_log_graphs

pytestmark = [
    pytest.mark.compile,
    pytest.mark.skipif(tlparse_render.tlparse_binary() is None, reason="tlparse is not installed"),
]


@pytest.mark.parametrize("backend", ["reference", "inductor"])
def test_each_frame_gets_a_linked_page_of_its_own(backend, open_case):
    opened = open_case("graph_break", *(["--backend", "inductor"] if backend == "inductor" else []))
    assert opened.case.returncode == 0, opened.case.stdout + opened.case.stderr[-3000:]
    assert opened.returncode == 0, opened.stderr
    logged = read_log_graphs(opened.case.log)
    assert len({graph.compile_id for graph in logged}) == len(logged) == 2
    # Dynamo restarts the first frame's analysis at the break ([0/0] -> [0/0_1]): tlparse
    # writes a page of the attempt that compiled nothing, and open lists it as that
    compiled = [(label, path) for label, path in opened.pages if not label.endswith(" no compiled graph")]
    assert [label for label, _ in opened.pages if label.endswith(" no compiled graph")] == ["[0/0] no compiled graph"]
    assert [label.split()[0] for label, _ in compiled] == [graph.compile_id for graph in logged]
    pages = [tlparse_page.parse_page(path.read_text()) for _, path in compiled]
    assert pages[0].pre_grad != pages[1].pre_grad  # each frame its own pre-grad graph
    assert pages[0].code != pages[1].code
    for (label, _), page, graph in zip(compiled, pages, logged, strict=True):
        keys = [kernel.key for kernel in tlparse_page.kernel_lines(page) if kernel.post_grad_lines]
        assert keys and keys == list(graph.node_mappings["cppCodeToPost"]), label
        assert page.links.get("preToPost"), f"{label}: the pre-grad panel links nothing"
