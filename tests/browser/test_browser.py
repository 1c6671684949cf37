"""The provenance page in a real browser: Debian's chromium, headless, driven by Playwright.

Loads the page ``open`` makes from ``compile mlp`` output (each handle comment followed by
the call ``<kernel>.run(...)``, as torch-spyre main writes it), hovers every kernel call line
of the generated code, and reads which ``.line`` elements of the post-grad and pre-grad panels
get the ``highlight`` class. Exactly the nodes the mapping names must light up: the mapping
is the artifact in the log, the node names come from the page's own text. A second test
removes one kernel key from the mapping (a copy of the log, payload and MD5 rewritten),
reruns ``open``, and checks the same assertion then fails for exactly that kernel.

Chromium is /usr/bin/chromium (``.ci/run`` installs it with apt-get); Playwright only
drives it, it never downloads a browser. Outside CI a missing chromium skips; with
CI=true it fails. The screenshot path is printed (``pytest -s`` or ``-rA`` shows it).
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from pathlib import Path

import pytest

from helpers.chromium import CHROMIUM, launched, skip_or_fail  # tests/helpers/chromium.py
from spyre_provenance.logs import tlparse_render, tracelog, wrapper_code
from spyre_provenance.logs.graphs import read_log_graphs
from spyre_provenance.model.names import NODE_MAPPINGS

pytestmark = [pytest.mark.browser, pytest.mark.compile]

_NODE = re.compile(r"^\s*([A-Za-z_]\w*)\s*(?::\s*\"[^\"]*\")?\s*=")


def _unavailable() -> str | None:
    if not CHROMIUM.exists():
        return f"{CHROMIUM} is missing: apt-get install chromium (.ci/run does)"
    if tlparse_render.tlparse_binary() is None:
        return "tlparse is missing: pip install 'spyre-provenance[tlparse]'"
    return None


@pytest.fixture(scope="module")
def browser():
    skip_or_fail(_unavailable())
    with launched() as chromium:
        yield chromium


def _mapping_of(log: Path) -> dict:
    (payload,) = [text for _, name, text in tracelog.artifact_payloads(log, {NODE_MAPPINGS}) if name == NODE_MAPPINGS]
    return json.loads(payload)


def _open(run_cli, log: Path, out: Path) -> Path:
    code, printed, err = run_cli("open", log, "--out", out, "--no-browser")
    assert code == 0, err
    (line,) = [x for x in printed.splitlines() if not x.startswith("viewer ")]  # the viewer's page: test_viewer.py
    return Path(line.split("  ", 1)[1].strip())


def _line_texts(page, panel: str) -> list[str]:
    return page.eval_on_selector_all(
        f"#{panel} .line", "els => els.map(e => e.querySelector('.line-content').textContent)"
    )


def _highlighted(page, panel: str) -> list[str]:
    return page.eval_on_selector_all(
        f"#{panel} .line.highlight", "els => els.map(e => e.querySelector('.line-content').textContent)"
    )


def _names(lines: list[str]) -> set[str]:
    return {m[1] for line in lines if (m := _NODE.match(line))}


def check_in_browser(browser, html: Path, mapping: dict, screenshot: Path | None = None) -> list[str]:
    """Hover each kernel call line; return one problem per kernel whose highlights are not
    exactly the mapping's post-grad nodes and their pre-grad nodes ([] when all are)."""
    page = browser.new_page(viewport={"width": 1600, "height": 900})
    try:
        page.goto(html.resolve().as_uri())
        page.wait_for_selector("#generatedCode .line")
        code = _line_texts(page, "generatedCode")
        post_to_pre = mapping.get("postToPre", {})
        # kernel call lines as the page shows them: the line after the handle comment
        # naming the kernel (wrapper_code.call_sites reads the page's own text)
        calls = {site.key: site.line for site in wrapper_code.call_sites("\n".join(code)) if site.key}
        marked = page.eval_on_selector_all(
            "#generatedCode .line",
            "els => els.flatMap((e, i) => e.querySelector('.line-content.has-match') ? [i + 1] : [])",
        )
        problems = [
            f"code line {line} is marked as linked but announces no kernel"
            for line in marked
            if line not in calls.values()
        ]
        for key, nodes in mapping["cppCodeToPost"].items():
            line = calls.get(key)
            if line is None:
                problems.append(f"{key}: no handle comment announces it on the page")
                continue
            if line not in marked:
                problems.append(f"{key}: call line {line} is not highlighted as linked")
            page.locator(f"#generatedCode .line:nth-child({line})").hover()
            post = _names(_highlighted(page, "postGradGraph"))
            pre = _names(_highlighted(page, "preGradGraph"))
            want_pre = {p for n in nodes for p in post_to_pre.get(n, ())}
            if post != set(nodes):
                problems.append(f"{key}: post-grad lit {sorted(post)}, mapping says {sorted(nodes)}")
            if pre != want_pre:
                problems.append(f"{key}: pre-grad lit {sorted(pre)}, mapping says {sorted(want_pre)}")
            if screenshot is not None and not screenshot.exists():
                page.screenshot(path=str(screenshot))
        return problems
    finally:
        page.close()


@pytest.fixture(scope="module")
def demo(compile_case):
    case = compile_case("mlp")
    assert case.returncode == 0, case.stdout + case.stderr[-3000:]
    return case


def test_hovering_each_kernel_lights_up_exactly_its_mapped_nodes(browser, demo, run_cli, tmp_path_factory):
    started = time.monotonic()
    out = tmp_path_factory.mktemp("browser")
    html = _open(run_cli, demo.log, out / "tlparse")
    mapping = _mapping_of(demo.log)
    assert mapping["cppCodeToPost"] and mapping["postToPre"]
    # as torch-spyre main: the handle comment, then ``<kernel>.run(...)``; the page must
    # light up that call
    (graph,) = read_log_graphs(demo.log)
    sites = wrapper_code.call_sites(graph.output_code)
    lines = graph.output_code.splitlines()
    assert sites and all(lines[s.line - 1].lstrip().startswith(f"{s.name}.run(") for s in sites)
    screenshot = out / "provenance_page_mlp.png"
    assert check_in_browser(browser, html, mapping, screenshot) == []
    assert screenshot.stat().st_size > 10_000
    print(f"\nscreenshot: {screenshot} ({time.monotonic() - started:.1f} s)")


def test_the_backward_page_lights_each_gradient_kernels_pre_grad_nodes(browser, open_case):
    """Training on the reference backend: every backward kernel reaches the pre-grad nodes
    of the forward op it differentiates (through autograd's seq_nr), and hovering it on
    the backward page lights exactly those in the pre-grad panel (the forward's graph)."""
    opened = open_case("mlp", "--train")
    assert opened.case.returncode == 0 and opened.returncode == 0, opened.case.stdout + opened.stderr
    ((_, backward_page),) = [(label, path) for label, path in opened.pages if label.endswith("backward")]
    _, backward = read_log_graphs(opened.case.log)
    mapping = backward.node_mappings
    reached = {
        key: {p for n in nodes for p in mapping["postToPre"].get(n, ())}
        for key, nodes in mapping["cppCodeToPost"].items()
    }
    assert reached and all(reached.values()), reached  # every gradient kernel leads to a pre-grad node
    assert check_in_browser(browser, backward_page, mapping) == []


def test_a_removed_mapping_key_fails_the_check_for_that_kernel(browser, demo, run_cli, tmp_path):
    mapping = _mapping_of(demo.log)
    removed = list(mapping["cppCodeToPost"])[-1]
    log = tmp_path / "trace" / "damaged.log"
    log.parent.mkdir()
    log.write_bytes(_without_key(demo.log.read_bytes(), removed))
    assert not [p for p in tracelog.read_trace(log) if not isinstance(p, tracelog.TraceEntry) or p.problems]
    html = _open(run_cli, log, tmp_path / "tlparse")
    problems = check_in_browser(browser, html, mapping)
    assert problems and all(p.startswith(f"{removed}:") for p in problems), problems
    assert any("not highlighted" in p for p in problems) and any("post-grad lit []" in p for p in problems)
    print("\n" + "\n".join(problems))


def _without_key(log: bytes, key: str) -> bytes:
    """The log with ``key`` gone from its mapping payload, ``has_payload`` recomputed."""
    lines = log.split(b"\n")
    for index, line in enumerate(lines):
        if NODE_MAPPINGS.encode() not in line or line.startswith(b"\t"):
            continue
        mapping = json.loads(lines[index + 1][1:])
        del mapping["cppCodeToPost"][key]
        mapping["postToCppCode"] = {
            node: kept for node, keys in mapping["postToCppCode"].items() if (kept := [k for k in keys if k != key])
        }
        payload = json.dumps(mapping).encode()
        digest = re.search(rb'"has_payload": "([0-9a-f]{32})"', line)
        assert digest is not None
        lines[index] = line.replace(digest[1], hashlib.md5(payload).hexdigest().encode())
        lines[index + 1] = b"\t" + payload
        return b"\n".join(lines)
    raise AssertionError("no mapping record in the log")


def test_missing_chromium_skips_outside_ci_and_fails_in_ci(monkeypatch):
    monkeypatch.setattr(f"{__name__}.CHROMIUM", Path("/nonexistent/chromium"))
    reason = _unavailable()
    assert reason and "apt-get install chromium" in reason
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="must run in CI"):
        skip_or_fail(reason)
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception):
        skip_or_fail(reason)
