"""The teacher's HTML report: numbers, embedded plots, torn lines, empty folders, the CLI."""

from __future__ import annotations

import base64
import io
import re
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from PIL import Image

from pal_jupyter.cli import main as cli_main
from pal_jupyter.classroom.classlog import ClassLog
from pal_jupyter.errors import PalError
from pal_jupyter.classroom.report import build_report

ROOT = Path(__file__).resolve().parent.parent
START = datetime(2025, 3, 3, 9, 0, tzinfo=timezone.utc)
IMG = re.compile(r'<img src="data:image/png;base64,([A-Za-z0-9+/=]+)"')


def at(minutes: float) -> str:
    return (START + timedelta(minutes=minutes)).isoformat()


def write_class(log_dir: Path) -> None:
    """Three students with known figures (minutes from question to solution in brackets).

    alice: q1 solved after 1 hint (4 min), q2 solved after 2 hints (10 min), q3 solved, no hint (6 min)
    bob:   q1 solved after 3 hints (20 min), q2 gave up after a reveal; the tutor could not solve q2
    carol: q1 solved after 0 hints (2 min)
    """
    alice = ClassLog(log_dir, user="alice")
    alice.question("q1", "Area of a 3 by 4 rectangle?", ts=at(0), tutor_solved=True)
    alice.hint("q1", level=1, ts=at(1))
    alice.attempt("q1", error_type="NameError", succeeded=False, ts=at(2))
    alice.solved("q1", ts=at(4))
    alice.question("q2", "Sum of 1..100?", ts=at(10), tutor_solved=True)
    alice.hint("q2", level=1, ts=at(11))
    alice.hint("q2", level=2, ts=at(12))
    alice.attempt("q2", error_type="TypeError", succeeded=False, ts=at(13))
    alice.check("q2", succeeded=True, ts=at(20))  # a passing check counts as solved
    alice.question("q3", "Mean of [2, 4, 6]?", ts=at(30), tutor_solved=True)
    alice.solved("q3", ts=at(36))
    alice.hint("q3", level=1, ts=at(40))  # after success: not a hint *before* success

    bob = ClassLog(log_dir, user="bob")
    bob.question("q1", "Area of a 3 by 4 rectangle?", ts=at(0), tutor_solved=True)
    for n in range(3):
        bob.hint("q1", level=n + 1, ts=at(n + 1))
        bob.attempt("q1", error_type="NameError", succeeded=False, ts=at(n + 2))
    bob.solved("q1", ts=at(20))
    bob.question("q2", "Prove the Riemann hypothesis <b>now</b>", ts=at(30), tutor_solved=False)
    bob.attempt("q2", error_type="ZeroDivisionError", succeeded=False, ts=at(31))
    bob.reveal("q2", ts=at(32))
    bob.gave_up("q2", ts=at(33))

    carol = ClassLog(log_dir, user="carol")
    carol.question("q1", "Area of a 3 by 4 rectangle?", ts=at(5), tutor_solved=True)
    carol.solved("q1", ts=at(7))


def flat(html: str) -> str:
    """The HTML without whitespace between tags, so table rows can be matched as text."""
    return re.sub(r">\s+<", "><", html)


def row(*cells: object) -> str:
    return "".join(f"<td>{c}</td>" for c in cells)


@pytest.fixture
def class_logs(tmp_path: Path) -> Path:
    log_dir = tmp_path / "logs"
    write_class(log_dir)
    return log_dir


def test_report_numbers_and_plots(class_logs: Path, tmp_path: Path) -> None:
    html = build_report(class_logs, tmp_path / "out" / "report.html", progress=False).read_text()
    text = flat(html)
    # Header: counts and date range.
    assert "<b>3</b>students" in text and "<b>6</b>questions" in text and "<b>5</b>solved" in text
    assert "events from 2025-03-03 09:00 to 2025-03-03 09:40 UTC" in text
    # Per student: questions, solved, median minutes, mean hints before success, attempts, errors, reveals, gave up.
    assert row("alice", 3, 3, "6.0", "1.0", 2, 2, 0, 0) in text
    assert row("bob", 2, 1, "20.0", "3.0", 4, 4, 1, 1) in text
    assert row("carol", 1, 1, "2.0", "0.0", 0, 0, 0, 0) in text
    # Error types: count and how many students met them.
    assert row("NameError", 4, 2) in text and row("TypeError", 1, 1) in text and row("ZeroDivisionError", 1, 1) in text
    # The question the tutor could not solve, escaped.
    assert row("Prove the Riemann hypothesis &lt;b&gt;now&lt;/b&gt;", 1, 1) in text
    assert "<b>now</b>" not in html


def test_plots_are_embedded_pngs(class_logs: Path, tmp_path: Path) -> None:
    html = build_report(class_logs, tmp_path / "report.html", progress=False).read_text()
    images = IMG.findall(html)
    assert len(images) >= 3
    for data in images:
        picture = Image.open(io.BytesIO(base64.b64decode(data)))
        assert picture.format == "PNG" and picture.width > 100 and picture.height > 100
        picture.verify()
    # Self-contained: nothing to fetch once the images are set aside.
    rest = IMG.sub("", html)
    assert not re.search(r"https?://|<script|<link|@import|url\(", rest)


def test_progress_bar(class_logs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    build_report(class_logs, tmp_path / "report.html", progress=True)
    assert "reading logs" in capsys.readouterr().err


def test_torn_line_does_not_break_the_report(class_logs: Path, tmp_path: Path) -> None:
    with open(class_logs / "bob.jsonl", "ab") as handle:
        handle.write(b'{"ts": "2025-03-03T10:00:00+00:00", "user": "bob", "event": "hi')
    text = flat(build_report(class_logs, tmp_path / "report.html", progress=False).read_text())
    assert "<b>1</b>unreadable lines skipped" in text
    assert row("bob", 2, 1, "20.0", "3.0", 4, 4, 1, 1) in text


def test_empty_log_dir(tmp_path: Path) -> None:
    (tmp_path / "logs").mkdir()
    html = build_report(tmp_path / "logs", tmp_path / "report.html", progress=False).read_text()
    assert "There is no data yet" in html and not IMG.search(html)


def test_missing_log_dir_is_a_user_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(PalError, match="No log folder"):
        build_report(tmp_path / "nope", tmp_path / "report.html")
    assert cli_main(["report", str(tmp_path / "nope")]) == 2
    assert "No log folder" in capsys.readouterr().err


def test_cli_report(class_logs: Path, tmp_path: Path) -> None:
    out = tmp_path / "class.html"
    done = subprocess.run(
        [sys.executable, "-m", "pal_jupyter.cli", "report", str(class_logs), "--out", str(out), "--no-progress"],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(out)
    assert "reading logs" not in done.stderr
    assert len(IMG.findall(out.read_text())) >= 3
