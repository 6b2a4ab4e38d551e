"""Open an HTML file in headless Debian chromium and report what rendered (shared by tests)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def require_chromium() -> None:
    """Skip without chromium or Playwright, except in CI ($CI set), where that is a failure."""
    reason = None
    if not CHROMIUM.exists():
        reason = f"{CHROMIUM} is missing: apt-get install chromium"
    else:
        try:
            import playwright.sync_api  # noqa: F401
        except ImportError:
            reason = "playwright is not installed: pip install playwright"
    if reason and os.environ.get("CI"):
        pytest.fail(reason + " (CI is set, so this fails instead of skipping)")
    if reason:
        pytest.skip(reason)


def render_html(browser: Any, path: Path, screenshot: Path) -> dict[str, Any]:
    """Load ``path`` from a file:// URL in ``browser`` (the session's chromium); return its images,
    the URLs it fetched and its console errors, and save a screenshot."""
    screenshot.parent.mkdir(parents=True, exist_ok=True)
    page = browser.new_page(viewport={"width": 1100, "height": 900})
    try:
        fetched: list[str] = []
        page.on("request", lambda request: fetched.append(request.url))
        errors: list[str] = []
        page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
        page.goto(path.as_uri(), wait_until="load")
        images = page.eval_on_selector_all(
            "img", "imgs => imgs.map(i => ({alt: i.alt, ok: i.complete, w: i.naturalWidth, h: i.naturalHeight}))")
        page.screenshot(path=str(screenshot), full_page=True)
    finally:
        page.close()
    return {"images": images, "fetched": fetched, "errors": errors}
