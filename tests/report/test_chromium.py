"""Every page as a person sees it, in headless Chromium (Debian's ``chromium`` package; the
tests skip with the reason when it is absent): it loads with no console message, requests
nothing from the network (Chromium's own NetLog of the page's requests), and its screenshot
is not blank.

A canary page with an external image and a ``console.error`` checks that these checks can
fail.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from tests.report.test_pages import VERBS

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--enable-logging=stderr", "--v=0", "--hide-scrollbars",
         "--host-resolver-rules=MAP * ~NOTFOUND"]      # nothing could be fetched anyway

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(),
                                reason=f"{CHROMIUM} is absent (apt-get install chromium)")


def _chromium(page: Path, tmp: Path, *extra: str) -> tuple[str, str, list[str]]:
    """(stdout, stderr, URLs the page requested) of one headless Chromium run."""
    profile = tmp / f"profile-{len(list(tmp.iterdir()))}"
    netlog = tmp / f"{profile.name}.netlog.json"
    proc = subprocess.run([str(CHROMIUM), *FLAGS, f"--user-data-dir={profile}",
                           f"--log-net-log={netlog}", *extra, page.resolve().as_uri()],
                          capture_output=True, text=True, timeout=180)
    return proc.stdout, proc.stderr, _page_requests(netlog)


def _page_requests(netlog: Path) -> list[str]:
    """URLs of the requests a page loaded from a file started (the browser's own background
    requests have another network isolation key)."""
    data = json.loads(netlog.read_text())
    start = data["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    return [e["params"]["url"] for e in data["events"]
            if e["type"] == start and "file://" in e["params"].get("network_isolation_key", "")
            and not e["params"]["url"].startswith(("file:", "data:"))]


def _console(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


def _colours(png: Path) -> int:
    from PIL import Image

    with Image.open(png) as image:
        colours = image.convert("RGB").getcolors(maxcolors=1 << 16)
    return 1 << 16 if colours is None else len(colours)


def test_checks_can_fail(tmp_path):
    canary = tmp_path / "canary.html"
    canary.write_text('<!DOCTYPE html><html><body><p id="x">hi</p>'
                      '<img src="https://example.com/a.png">'
                      '<script>console.error("boom")</script></body></html>')
    dom, stderr, requests = _chromium(canary, tmp_path, "--dump-dom")
    assert 'id="x"' in dom
    assert requests == ["https://example.com/a.png"]
    assert any("boom" in line for line in _console(stderr))


@pytest.mark.parametrize("verb", VERBS)
def test_page_in_chromium(pages, verb, tmp_path):
    page = pages[verb].html
    dom, stderr, requests = _chromium(page, tmp_path, "--dump-dom")
    assert 'id="verdict"' in dom and 'id="provenance"' in dom     # it loaded and rendered
    assert re.search(r"<img [^>]*src=\"data:image/", dom)
    assert requests == []
    assert _console(stderr) == []
    shot = tmp_path / f"{verb}.png"
    _chromium(page, tmp_path, f"--screenshot={shot}", "--window-size=1280,1400")
    assert shot.stat().st_size > 10_000
    assert _colours(shot) > 50          # text, tables and a figure: far from a single colour
