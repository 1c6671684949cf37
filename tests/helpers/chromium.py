"""Debian's chromium, headless, for the browser tests: where it is, how it starts, and what
a missing one means (a skip outside CI, a failure with CI=true).

``.ci/run`` installs it with apt-get; Playwright only drives it, it never downloads a browser.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def skip_or_fail(reason: str | None) -> None:
    """Skip where a browser-test dependency is absent outside CI; in CI (CI=true) fail."""
    if reason is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"the browser test must run in CI: {reason}")
        pytest.skip(reason)


def launched():
    """A context manager yielding the launched chromium (Playwright's Browser)."""
    import contextlib

    # a test dependency (the test extra): missing it is a broken setup, never a skip
    from playwright.sync_api import sync_playwright

    @contextlib.contextmanager
    def run():
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
            try:
                yield browser
            finally:
                browser.close()

    return run()


@pytest.fixture(scope="module")
def browser():
    """The viewer tests' chromium, one per module: skipped outside CI where it is missing,
    a failure with CI=true. A module takes it by importing it (``from helpers.chromium
    import browser``), so the viewer's test files share one fixture, not a copy each."""
    skip_or_fail(None if CHROMIUM.exists() else f"{CHROMIUM} is missing: apt-get install chromium (.ci/run does)")
    with launched() as chromium:
        yield chromium
