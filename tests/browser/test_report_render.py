"""The teacher's report in headless Chromium: every plot decodes and renders, nothing is fetched.

Self-contained on purpose (no Jupyter server): it opens the HTML file from a file:// URL and
saves test-artifacts/report.png. Without /usr/bin/chromium or Playwright it skips, unless $CI
is set, where it fails.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path


from html_render import render_html

from pal_jupyter.classroom.classlog import ClassLog
from pal_jupyter.classroom.report import build_report

ROOT = Path(__file__).resolve().parents[2]
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


def test_report_plots_render_in_chromium(browser, tmp_path: Path) -> None:
    write_logs(tmp_path / "logs")
    report = build_report(tmp_path / "logs", tmp_path / "report.html", progress=False)
    rendered = render_html(browser, report, ROOT / "test-artifacts" / "report.png")
    images, fetched, errors = rendered["images"], rendered["fetched"], rendered["errors"]

    assert len(images) >= 3, images
    assert all(image["ok"] and image["w"] > 0 and image["h"] > 0 for image in images), images
    assert {"Questions per student", "Error types met", "Time to solution"} <= {image["alt"] for image in images}
    assert [url for url in fetched if not url.startswith(("file:", "data:"))] == []  # self-contained
    assert errors == []
