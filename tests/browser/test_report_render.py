"""The teacher's report in headless Chromium: every plot decodes and renders, nothing is fetched.

Self-contained on purpose (no Jupyter server): it opens the HTML file from a file:// URL and
saves test-artifacts/report.png. Without /usr/bin/chromium or Playwright it skips, unless $CI
is set, where it fails.
"""

from __future__ import annotations

import os
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from pal_jupyter.classlog import ClassLog
from pal_jupyter.report import build_report

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def _unavailable(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(reason + " (CI is set, so this fails instead of skipping)")
    pytest.skip(reason)


def write_logs(log_dir: Path) -> None:
    """A small class: hints, errors, solutions and one question the tutor could not solve."""
    start = datetime(2025, 3, 3, 9, 0, tzinfo=timezone.utc)
    for index, user in enumerate(["alice", "bob", "carol", "dan"]):
        log = ClassLog(log_dir, user=user)
        for q in range(index + 1):
            t0 = start + timedelta(minutes=15 * q)
            qid = f"q{q}"
            log.question(qid, f"Question {q}", ts=t0.isoformat(), tutor_solved=q != 2)
            for h in range(q % 3):
                log.hint(qid, level=h + 1, ts=(t0 + timedelta(minutes=h + 1)).isoformat())
            log.attempt(qid, error_type=["NameError", "TypeError", "IndexError"][q % 3], succeeded=False,
                        ts=(t0 + timedelta(minutes=4)).isoformat())
            log.solved(qid, ts=(t0 + timedelta(minutes=5 + 2 * q + index)).isoformat())


def test_report_plots_render_in_chromium(tmp_path: Path) -> None:
    if not CHROMIUM.exists():
        _unavailable(f"{CHROMIUM} is missing: apt-get install chromium")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("playwright is not installed: pip install playwright")

    write_logs(tmp_path / "logs")
    report = build_report(tmp_path / "logs", tmp_path / "report.html", progress=False)
    artifacts = ROOT / "test-artifacts"
    artifacts.mkdir(exist_ok=True)

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1100, "height": 900})
            fetched: list[str] = []
            page.on("request", lambda request: fetched.append(request.url))
            errors: list[str] = []
            page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
            page.goto(report.as_uri(), wait_until="load")
            images = page.eval_on_selector_all(
                "img", "imgs => imgs.map(i => ({alt: i.alt, ok: i.complete, w: i.naturalWidth, h: i.naturalHeight}))")
            page.screenshot(path=str(artifacts / "report.png"), full_page=True)
        finally:
            browser.close()

    assert len(images) >= 3, images
    assert all(image["ok"] and image["w"] > 0 and image["h"] > 0 for image in images), images
    assert {"Questions per student", "Error types met", "Time to solution"} <= {image["alt"] for image in images}
    assert [url for url in fetched if not url.startswith(("file:", "data:"))] == []  # self-contained
    assert errors == []
