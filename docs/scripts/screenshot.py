"""The pictures of the provenance page (README, the docs' home page) and of the viewer's page.

    python docs/scripts/screenshot.py      # writes docs/img/provenance_page_mlp.png
    python docs/scripts/screenshot.py view # writes docs/img/viewer_mlp_train.png

The viewer's picture: ``compile mlp --train --profile``, ``view`` with its trace, taken by
the viewer's browser test's helper (``tests/browser/test_viewer.screenshot``), which clicks
the forward graph's first kernel and one of its OpSpecs and writes the picture only when
the page lights exactly the relation computed from the artifact files.

Runs ``compile mlp --backend reference`` into a scratch folder, ``open``s it, and takes the
screenshot through the browser test's own helper (``tests/browser/test_browser.check_in_browser``:
Debian's chromium, headless, driven by Playwright), which hovers the first kernel call
line, so the picture shows a kernel and the post-grad and pre-grad nodes it lights up. The
helper's check must pass (every kernel lights exactly its mapped nodes) or nothing is written.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TARGET = ROOT / "docs" / "img" / "provenance_page_mlp.png"
VIEW_TARGET = ROOT / "docs" / "img" / "viewer_mlp_train.png"


def view_main() -> int:
    sys.path[:0] = [str(ROOT / "tests" / "browser"), str(ROOT / "tests")]
    import test_viewer  # the viewer's browser test: the same page, the same check

    from helpers.chromium import launched

    exe = Path(sys.executable).parent / "spyre-provenance"
    work = Path(tempfile.mkdtemp(prefix="spyre-provenance-shot-"))
    try:
        out = work / "out"
        subprocess.run([exe, "compile", "mlp", "--train", "--profile", "--no-tlparse", "--out", out], check=True)
        html = work / "view.html"
        trace = out / "profile" / "mlp.trace.json"
        subprocess.run([exe, "view", out, "-o", html, "--trace", trace], check=True)
        with launched() as browser:
            problems = test_viewer.screenshot(browser, html, out, work / "view.png")
        if problems:
            print("\n".join(problems), file=sys.stderr)
            return 1
        shutil.copyfile(work / "view.png", VIEW_TARGET)
        print(f"{VIEW_TARGET.relative_to(ROOT)}: {VIEW_TARGET.stat().st_size} bytes")
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> int:
    # the browser test and the helpers it imports (tests/ is on its path, as pytest puts it)
    sys.path[:0] = [str(ROOT / "tests" / "browser"), str(ROOT / "tests")]
    import test_browser  # the browser test's helpers: the same page, the same check
    from playwright.sync_api import sync_playwright

    exe = Path(sys.executable).parent / "spyre-provenance"
    work = Path(tempfile.mkdtemp(prefix="spyre-provenance-shot-"))
    try:
        subprocess.run(
            [exe, "compile", "mlp", "--backend", "reference", "--no-tlparse", "--out", work / "out"], check=True
        )
        opened = subprocess.run(
            [exe, "open", work / "out", "--no-browser"], check=True, stdout=subprocess.PIPE, text=True
        )
        html = Path(opened.stdout.splitlines()[0].split("  ", 1)[1].strip())
        (log,) = (work / "out" / "trace").glob("*.log")
        mapping = test_browser._mapping_of(log)
        shot = work / "page.png"
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=str(test_browser.CHROMIUM), args=test_browser.CHROMIUM_ARGS
            )
            try:
                problems = test_browser.check_in_browser(browser, html, mapping, shot)
            finally:
                browser.close()
        if problems:
            print("\n".join(problems), file=sys.stderr)
            return 1
        TARGET.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, TARGET)
        print(f"{TARGET.relative_to(ROOT)}: {TARGET.stat().st_size} bytes")
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(view_main() if sys.argv[1:] == ["view"] else main())
