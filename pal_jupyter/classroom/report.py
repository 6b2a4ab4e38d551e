"""The teacher's report: one self-contained HTML file built from a folder of class logs.

``pal-jupyter report LOGDIR`` reads every ``*.jsonl`` class log (see :mod:`pal_jupyter.classroom.classlog`)
and writes an HTML page with plots and tables: questions per student, error types met, hints
used before success, time to solution, and the questions the tutor itself could not solve.
Figures are PNGs embedded as base64 data URLs and the styles are inline, so the file can be
mailed or opened offline: it loads nothing from anywhere.

Definitions (per student and question id):

- *solved*: the first ``solved`` event, or a ``check`` event with ``succeeded: true``;
- *time to solution*: from the first ``question`` event (else the first event) to solved;
- *hints before success*: ``hint`` events logged no later than the solved event;
- *tutor could not solve*: any event with ``tutor_solved: false``.
"""

from __future__ import annotations

import base64
import html
import io
import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg  # explicit Agg: never touch pyplot's global backend
from matplotlib.figure import Figure
from tqdm import tqdm

from ..errors import PalError
from .classlog import ReadStats, log_files, read_log, writable_file

log = logging.getLogger(__name__)

KEYS = ["user", "question_id"]
COLUMNS = ["ts", "user", "event", "question_id", "question", "level", "error_type", "succeeded", "tutor_solved",
           "pack"]
MAX_BARS = 40  # more students or error types than this would make unreadable bar charts
QUESTION_CHARS = 200  # questions are cut to this in memory and in the tables


@dataclass
class ClassSummary:
    """The aggregates the report shows; every frame may be empty."""

    events: pd.DataFrame  # one row per log record (COLUMNS)
    questions: pd.DataFrame  # one row per (user, question_id)
    students: pd.DataFrame  # one row per user
    errors: pd.DataFrame  # error_type, count, students
    tutor_unsolved: pd.DataFrame  # question, students, events
    from_pack: pd.DataFrame  # per question of the teacher's pack: students, hints, checks, checks right


# ---------------------------------------------------------------------- reading and aggregating


def slim(record: dict[str, Any]) -> dict[str, Any]:
    """Only the report's columns, the question cut short: big log folders must fit in memory."""
    row = {c: record.get(c) for c in COLUMNS}
    details = record.get("details")
    if isinstance(details, dict) and details.get("pack"):  # "week3.pal-pack.json, question 2"
        row["pack"] = details["pack"]
    if isinstance(row["question"], str):
        row["question"] = row["question"][:QUESTION_CHARS]
    return row


def load_events(records: Iterable[dict[str, Any]]) -> pd.DataFrame:
    """Records -> a frame with the report's columns, oldest first."""
    frame = pd.DataFrame([slim(r) for r in records], columns=COLUMNS)
    frame["ts"] = pd.to_datetime(frame["ts"], utc=True, format="ISO8601", errors="coerce")
    for column in ("user", "question_id", "question"):
        frame[column] = frame[column].fillna("").astype(str)
    frame["level"] = pd.to_numeric(frame["level"], errors="coerce")
    return frame.sort_values("ts", kind="stable").reset_index(drop=True)


def per_question(events: pd.DataFrame) -> pd.DataFrame:
    """One row per student and question: start, success, hints before it, outcome flags."""
    grouped = events.groupby(KEYS, sort=True)
    out = pd.DataFrame({"question": grouped["question"].agg(lambda s: next((q for q in s if q), ""))})
    asked = events[events["event"] == "question"].groupby(KEYS)["ts"].min()
    out["start"] = asked.reindex(out.index).fillna(grouped["ts"].min())
    success = events[(events["event"] == "solved") | ((events["event"] == "check") & events["succeeded"].eq(True))]
    out["solved_at"] = success.groupby(KEYS)["ts"].min().reindex(out.index)
    out["solved"] = out["solved_at"].notna()
    out["seconds_to_solution"] = (out["solved_at"] - out["start"]).dt.total_seconds()

    hints = events[events["event"] == "hint"].join(out["solved_at"], on=KEYS)
    before = hints[hints["ts"] <= hints["solved_at"]].groupby(KEYS)
    out["hints_before_success"] = before.size().reindex(out.index).fillna(0).astype(int).where(out["solved"])
    for event in ("attempt", "reveal", "gave_up"):
        counts = events[events["event"] == event].groupby(KEYS).size()
        out[f"{event}s"] = counts.reindex(out.index).fillna(0).astype(int)
    out["tutor_failed"] = events["tutor_solved"].eq(False).groupby([events[k] for k in KEYS]).any().reindex(out.index)
    return out.reset_index()


def per_student(questions: pd.DataFrame, events: pd.DataFrame) -> pd.DataFrame:
    grouped = questions.groupby("user")
    table = pd.DataFrame({
        "questions": grouped.size(),
        "solved": grouped["solved"].sum().astype(int),
        "median minutes to solution": grouped["seconds_to_solution"].median() / 60,
        "mean hints before success": grouped["hints_before_success"].mean(),
        "attempts": grouped["attempts"].sum(),
        "errors met": events[events["error_type"].notna()].groupby("user").size(),
        "reveals": grouped["reveals"].sum(),
        "gave up": grouped["gave_ups"].sum(),
    })
    table["errors met"] = table["errors met"].fillna(0).astype(int)
    return table.rename_axis("student").reset_index()


def summarize(events: pd.DataFrame) -> ClassSummary:
    """All the report's aggregates from the event frame."""
    questions = per_question(events)
    errors_only = events[events["error_type"].notna() & (events["error_type"].astype(str) != "")]
    errors = (errors_only.groupby("error_type").agg(count=("user", "size"), students=("user", "nunique"))
              .sort_values("count", ascending=False).reset_index())
    failed = questions[questions["tutor_failed"].eq(True)]
    tutor_unsolved = (failed.groupby("question").agg(students=("user", "nunique"), asked=("user", "size"))
                      .sort_values(["students", "asked"], ascending=False).reset_index())
    return ClassSummary(events, questions, per_student(questions, events), errors, tutor_unsolved,
                        pack_questions(events))


def pack_questions(events: pd.DataFrame) -> pd.DataFrame:
    """The questions answered from the teacher's pack: how many students asked, hints used, checks and
    checks that were right."""
    asked = events[(events["event"] == "question") & events["pack"].notna()][KEYS + ["pack"]].drop_duplicates(KEYS)
    if asked.empty:
        return pd.DataFrame(columns=["pack question", "students", "hints", "checks", "checks right"])
    mine = events.drop(columns="pack").merge(asked, on=KEYS)
    grouped = mine.groupby("pack")
    table = pd.DataFrame({
        "students": grouped["user"].nunique(),
        "hints": grouped["event"].agg(lambda e: int((e == "hint").sum())),
        "checks": grouped["event"].agg(lambda e: int((e == "check").sum())),
        "checks right": mine[(mine["event"] == "check") & mine["succeeded"].eq(True)].groupby("pack").size(),
    })
    table["checks right"] = table["checks right"].fillna(0).astype(int)
    return table.rename_axis("pack question").reset_index()


# ---------------------------------------------------------------------- figures


def _png(figure: Figure) -> str:
    """An <img> with the figure as a base64 PNG data URL (no files next to the report)."""
    buffer = io.BytesIO()
    FigureCanvasAgg(figure).print_png(buffer)
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    return f'<img src="data:image/png;base64,{data}" alt="{html.escape(figure.get_label())}">'


def _figure(label: str, rows: int = 0) -> tuple[Figure, Any]:
    figure = Figure(figsize=(8, max(2.8, 0.28 * rows + 1.2)), dpi=100, layout="constrained")
    figure.set_label(label)
    return figure, figure.add_subplot()


def questions_figure(students: pd.DataFrame) -> str:
    top = students.nlargest(MAX_BARS, "questions").iloc[::-1]
    figure, axes = _figure("Questions per student", len(top))
    axes.barh(top["student"], top["solved"], color="#2e7d32", label="solved")
    axes.barh(top["student"], top["questions"] - top["solved"], left=top["solved"], color="#c62828", label="not solved")
    axes.set_xlabel("questions")
    axes.set_title("Questions per student")
    axes.legend(loc="lower right")
    return _png(figure)


def errors_figure(errors: pd.DataFrame) -> str:
    top = errors.head(MAX_BARS).iloc[::-1]
    figure, axes = _figure("Error types met", len(top))
    axes.barh(top["error_type"], top["count"], color="#ef6c00")
    axes.set_xlabel("times met (attempts and checks)")
    axes.set_title("Error types met")
    return _png(figure)


def hints_figure(questions: pd.DataFrame) -> str:
    counts = questions["hints_before_success"].dropna().astype(int).clip(upper=5).value_counts().sort_index()
    labels = [f"{n}+" if n == 5 else str(n) for n in counts.index]
    figure, axes = _figure("Hints used before success")
    axes.bar(labels, counts.to_numpy(), color="#1565c0")
    axes.set_xlabel("hints shown before the question was solved")
    axes.set_ylabel("solved questions")
    axes.set_title("Hints used before success")
    return _png(figure)


def time_figure(questions: pd.DataFrame) -> str:
    minutes = questions["seconds_to_solution"].dropna() / 60
    figure, axes = _figure("Time to solution")
    axes.hist(minutes, bins=min(30, max(5, len(minutes) // 3)), color="#6a1b9a")
    axes.axvline(minutes.median(), color="black", linestyle="--", label=f"median {minutes.median():.1f} min")
    axes.set_xlabel("minutes from question to solution")
    axes.set_ylabel("solved questions")
    axes.set_title("Time to solution")
    axes.legend()
    return _png(figure)


# ---------------------------------------------------------------------- HTML

STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto; max-width: 60em;
       color: #212121; padding: 0 1em; }
h1 { margin-bottom: 0.2em; } h2 { border-bottom: 1px solid #ddd; padding-bottom: 0.2em; margin-top: 2em; }
.meta { color: #555; } .counts span { display: inline-block; margin-right: 1.5em; }
.counts b { font-size: 1.4em; display: block; }
img { max-width: 100%; height: auto; display: block; margin: 1em 0; }
table.data { border-collapse: collapse; font-size: 0.92em; }
table.data th, table.data td { border-bottom: 1px solid #e0e0e0; padding: 0.3em 0.8em; text-align: left; }
table.data th { background: #f5f5f5; }
.note { color: #666; font-size: 0.9em; }
"""


def _table(frame: pd.DataFrame, empty: str) -> str:
    if frame.empty:
        return f"<p>{html.escape(empty)}</p>"
    return frame.to_html(index=False, escape=True, border=0, classes="data", na_rep="–", float_format="{:.1f}".format)


def _section(title: str, *parts: str) -> str:
    return f"<section><h2>{html.escape(title)}</h2>\n" + "\n".join(parts) + "\n</section>"


def _header(summary: ClassSummary | None, stats: ReadStats, log_dir: Path) -> str:
    now = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    parts = [f'<h1>pal-jupyter class report</h1><p class="meta">Logs in <code>{html.escape(str(log_dir))}</code>'
             f" &middot; generated {now}"]
    if summary is not None and summary.events["ts"].notna().any():
        first, last = summary.events["ts"].min(), summary.events["ts"].max()
        parts.append(f" &middot; events from {first:%Y-%m-%d %H:%M} to {last:%Y-%m-%d %H:%M} UTC")
    parts.append("</p>")
    counts = {"students": 0, "questions": 0, "solved": 0}
    if summary is not None:
        counts = {"students": len(summary.students), "questions": len(summary.questions),
                  "solved": int(summary.questions["solved"].sum())}
    counts.update({"events": stats.records, "log files": stats.files, "unreadable lines skipped": stats.skipped})
    parts.append('<p class="counts">' + "".join(f"<span><b>{v}</b>{html.escape(k)}</span>" for k, v in counts.items())
                 + "</p>")
    return "".join(parts)


def _body(summary: ClassSummary) -> list[str]:
    questions, students = summary.questions, summary.students
    solved = questions[questions["solved"]]
    shown = f'<p class="note">The {MAX_BARS} most active students are plotted.</p>' if len(students) > MAX_BARS else ""
    return [
        _section("Questions per student", questions_figure(students) + shown,
                 _table(students, "No students.")),
        _section("Error types met", errors_figure(summary.errors) if not summary.errors.empty else "",
                 _table(summary.errors.rename(columns={"error_type": "error type"}), "No errors were met.")),
        _section("Hints used before success", hints_figure(questions) if not solved.empty else "",
                 '<p class="note">Per student means are in the first table.</p>' if not solved.empty
                 else "<p>No question was solved yet.</p>"),
        _section("Time to solution",
                 time_figure(questions) if not solved.empty else "<p>No question was solved yet.</p>",
                 '<p class="note">Per student medians are in the first table.</p>'),
        _section("Questions from the teacher's pack",
                 _table(summary.from_pack, "No question was answered from a tutor pack."),
                 '<p class="note">Hints prepared with <code>pal-jupyter prepare</code>, the same for every '
                 "student; checks compared with the pack's key.</p>"),
        _section("Questions the tutor itself could not solve",
                 _table(summary.tutor_unsolved, "The tutor solved every question it was asked."),
                 '<p class="note">Worth checking by hand: the question may be ambiguous, or beyond the model.</p>'),
    ]


def render_html(summary: ClassSummary | None, stats: ReadStats, log_dir: Path) -> str:
    body = _body(summary) if summary is not None else [
        f"<p>There is no data yet: no tutoring events were found in <code>{html.escape(str(log_dir))}</code>.</p>"]
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<title>pal-jupyter class report</title>"
            f"<style>{STYLE}</style></head><body>\n{_header(summary, stats, log_dir)}\n" + "\n".join(body)
            + "\n</body></html>\n")


# ---------------------------------------------------------------------- entry point


def build_report(log_dir: str | os.PathLike[str], out_path: str | os.PathLike[str], progress: bool = True) -> Path:
    """Read every class log under ``log_dir`` and write the HTML report to ``out_path``."""
    folder = Path(log_dir).expanduser()
    if not folder.is_dir():
        raise PalError(f"No log folder at {folder}: give the folder set as TeacherPolicy.log_dir.")
    # before the logs are read: fail in a second, not a minute
    out = writable_file(Path(out_path).expanduser(), "the report")
    stats = ReadStats()
    records: list[dict[str, Any]] = []
    for path in tqdm(log_files(folder), desc="reading logs", unit="file", disable=not progress):
        records.extend(slim(r) for r in read_log(path, stats))
    if stats.skipped:
        log.warning("skipped %d unreadable line(s) (torn by a crash, or not class-log records)", stats.skipped)
    summary = summarize(load_events(records)) if records else None
    page = render_html(summary, stats, folder)
    try:
        out.write_text(page, encoding="utf-8")
    except OSError as exc:
        raise PalError(f"Could not write the report to {out}: {exc.strerror or exc}. Choose another --out.") from None
    log.info("report on %d event(s) from %d file(s) written to %s", stats.records, stats.files, out)
    return out
