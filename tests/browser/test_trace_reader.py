"""An annotated profiler trace read back by an independent reader: speedscope.

speedscope (the npm package's web build, ``tests/browser/reader/``, which ``.ci/run``
installs with ``npm ci``) imports Chrome's Trace Event Format on its own; it runs in Debian's
chromium, serves itself and the trace from a local folder, loads the trace by
``#profileURL=``, and its Export button writes the profile as speedscope read it. Every
frame of that export is an event's name followed by its ``args`` as JSON: the kernel event's
provenance fields must come back there exactly as the mapping states them, and every event
that speedscope read from the raw trace must still be there.

The input is torch 2.15.0's own CPU profiler trace of a compiled MLP
(``tests/data/torch-2.15.0/profiler_trace.json``) annotated from that compile's log
(``timeline.log``). A whole profiler run of ours adds kineto's instant events on the process
``Traces``, which speedscope cannot import whether annotated or not; torch's trace, as the
fixture keeps it, it reads.
"""

from __future__ import annotations

import functools
import http.server
import json
import shutil
import threading
from pathlib import Path

import pytest

from helpers.chromium import CHROMIUM, launched, skip_or_fail  # tests/helpers/chromium.py
from helpers.where import DATA, TESTS
from spyre_provenance.logs import tracelog
from spyre_provenance.model.names import NODE_MAPPINGS

pytestmark = pytest.mark.browser

SPEEDSCOPE = TESTS / "browser" / "reader" / "node_modules" / "speedscope" / "dist" / "release"
RELEASE = DATA / "torch-2.15.0"
KERNEL = "graph_0_cpp_fused_relu_0"


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def browser():
    skip_or_fail(None if CHROMIUM.exists() else f"{CHROMIUM} is missing: apt-get install chromium (.ci/run does)")
    with launched() as chromium:
        yield chromium


@pytest.fixture(scope="module")
def speedscope(tmp_path_factory):
    """A local copy of speedscope's web build served on 127.0.0.1: (folder, base URL)."""
    if not (SPEEDSCOPE / "index.html").is_file():
        skip_or_fail(f"speedscope is missing: cd {SPEEDSCOPE.parents[3]} && npm ci (.ci/run does)")
    folder = tmp_path_factory.mktemp("speedscope") / "site"
    shutil.copytree(SPEEDSCOPE, folder)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(folder)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield folder, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


def read_by_speedscope(browser, speedscope, trace: Path) -> list[str]:
    """The frames speedscope made of ``trace``: each an event's name and its args as JSON."""
    folder, base = speedscope
    shutil.copy(trace, folder / "trace.json")
    page = browser.new_page(accept_downloads=True)
    try:
        console: list[str] = []
        page.on("console", lambda message: console.append(message.text))
        page.goto(f"{base}/index.html#profileURL={base}/trace.json&title=trace", timeout=30000)
        page.wait_for_function("document.title.endsWith(' - speedscope')", timeout=30000)
        assert "Importing as Trace Event Format profile" in console, console
        with page.expect_download() as download:
            page.get_by_text("Export").click()
        exported = json.loads(Path(download.value.path()).read_text())
    finally:
        page.close()
    return [frame["name"] for frame in exported["shared"]["frames"]]


def test_speedscope_reads_the_annotated_trace_and_its_provenance(browser, speedscope, run_cli, tmp_path):
    annotated = tmp_path / "annotated.json"
    code, out, err = run_cli(
        "annotate", RELEASE / "profiler_trace.json", "--from", RELEASE / "timeline.log", "-o", annotated
    )
    assert code == 0 and "annotated 1 of 1 kernel events" in out, out + err

    raw = read_by_speedscope(browser, speedscope, RELEASE / "profiler_trace.json")
    read = read_by_speedscope(browser, speedscope, annotated)
    assert [name.split(" {")[0] for name in read] == [name.split(" {")[0] for name in raw]  # no event lost

    (frame,) = [name for name in read if name.startswith(KERNEL + " ")]
    args = json.loads(frame.removeprefix(KERNEL + " "))
    (mapping,) = [
        json.loads(text) for _, _, text in tracelog.artifact_payloads(RELEASE / "timeline.log", {NODE_MAPPINGS})
    ]
    key = args["spyre_provenance_call_site"]
    assert key.rsplit(":", 1)[0] == KERNEL.removeprefix("graph_0_")
    assert args["spyre_provenance_post_grad_nodes"] == mapping["cppCodeToPost"][key]
    pre_grad = {pre for post in mapping["cppCodeToPost"][key] for pre in mapping["postToPre"].get(post, [])}
    assert set(args["spyre_provenance_pre_grad_nodes"]) == pre_grad
    assert "stack" in args and args["External id"] is not None  # upstream's field, and the profiler's kept
