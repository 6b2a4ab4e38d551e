"""ClassLog: round trip, torn lines, concurrent writers, and a writer killed mid-record."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from pal_jupyter.classroom.classlog import ClassLog, ReadStats, read_log, read_log_dir, safe_file_stem

ROOT = Path(__file__).resolve().parent.parent
PAYLOAD = 200_000  # characters per crash-test record: a write big enough to be cut

# The writer the crash test kills. Each record's question is "<seq>:" followed by PAYLOAD copies of
# one letter, so any damage inside a line is detectable. In "mid-record" mode the write of record 5
# stops halfway (as a short write would), tells the parent, and waits to be killed: a torn line every
# time. In "anywhere" mode the real writer runs flat out and the kill lands wherever it lands.
WRITER = """
import sys, time
from pal_jupyter.classroom import classlog

log_dir, mode, payload = sys.argv[1], sys.argv[2], int(sys.argv[3])
real_write_all = classlog._write_all
seq = 0

def half_then_wait(handle, data):
    if seq == 5:
        real_write_all(handle, data[: len(data) // 2])
        print("MID", flush=True)
        time.sleep(60)
    real_write_all(handle, data)

if mode == "mid-record":
    classlog._write_all = half_then_wait
log = classlog.ClassLog(log_dir, user="crash")
while True:
    log.attempt(f"q{seq}", f"{seq}:" + "abcdefghij"[seq % 10] * payload, details={"seq": seq})
    print(seq, flush=True)
    seq += 1
"""


def test_round_trip(tmp_path: Path) -> None:
    log = ClassLog(tmp_path, user="alice")
    log.question("q1", "What is 6 * 7?", tutor_solved=True)
    log.hint("q1", level=2, details={"text": "multiply"})
    log.attempt("q1", error_type="NameError", succeeded=False)
    log.check("q1", succeeded=True)
    log.solved("q1", seconds=12.5)
    records = list(read_log(log.path))
    assert [r["event"] for r in records] == ["question", "hint", "attempt", "check", "solved"]
    assert all(r["user"] == "alice" and r["question_id"] == "q1" for r in records)
    assert all(r["question"] == "What is 6 * 7?" for r in records)  # repeated: every line stands alone
    assert records[0]["tutor_solved"] is True and records[1]["level"] == 2
    assert records[1]["details"] == {"text": "multiply"}
    assert records[2]["error_type"] == "NameError" and records[2]["succeeded"] is False
    assert records[4]["seconds"] == 12.5 and "level" not in records[4]  # None fields are left out
    assert records[0]["ts"].endswith("+00:00")
    assert log.path == tmp_path / "alice.jsonl"


def test_unknown_event_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown class-log event"):
        ClassLog(tmp_path, user="a").record("cheated", "q1")


def test_user_and_file_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUPYTERHUB_USER", "bob@school.edu")
    assert ClassLog(tmp_path).path.name == "bob@school.edu.jsonl"
    for hostile in ("../../etc/passwd", ".hidden", "a b", "", "Ünïcode/ä"):
        stem = safe_file_stem(hostile)
        assert "/" not in stem and not stem.startswith(".") and stem
    assert safe_file_stem("a b") != safe_file_stem("a_b")  # replaced characters do not merge students


def test_torn_and_invalid_lines_are_skipped(tmp_path: Path) -> None:
    log = ClassLog(tmp_path, user="carol")
    log.question("q1", "first")
    log.solved("q1")
    with open(log.path, "ab") as handle:
        handle.write(b'not json\n[1, 2]\n{"no_event": 1}\n{"ts": "2025-01-01", "event": "hint", "quest')
    stats = ReadStats()
    assert [r["event"] for r in read_log(log.path, stats)] == ["question", "solved"]
    assert (stats.files, stats.records, stats.skipped) == (1, 2, 4)
    # The next record starts on its own line, so the torn one does not swallow it.
    log.hint("q1", level=1)
    stats = ReadStats()
    assert [r["event"] for r in read_log(log.path, stats)] == ["question", "solved", "hint"]
    assert stats.skipped == 4


def test_read_log_dir_reads_every_student(tmp_path: Path) -> None:
    for user in ("a", "b"):
        ClassLog(tmp_path, user=user).question("q", "?")
    ClassLog(tmp_path / "class-2", user="c").question("q", "?")
    stats = ReadStats()
    assert sorted(r["user"] for r in read_log_dir(tmp_path, stats)) == ["a", "b", "c"]
    assert stats.files == 3


def test_threads_share_one_log(tmp_path: Path) -> None:
    log = ClassLog(tmp_path, user="t")

    def write(worker: int) -> None:
        for n in range(20):
            log.attempt(f"w{worker}-{n}", "x" * 5000)

    threads = [threading.Thread(target=write, args=(w,)) for w in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    stats = ReadStats()
    assert len({r["question_id"] for r in read_log(log.path, stats)}) == 80 and stats.skipped == 0


def _run_writer_and_kill(log_dir: Path, mode: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(log_dir), mode, str(PAYLOAD)],
                              stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert writer.stdout is not None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = writer.stdout.readline()
            assert line, f"the writer exited early (rc {writer.poll()})"
            if line.strip() == "MID" or (mode == "anywhere" and line.strip() == "5"):
                break
        else:
            pytest.fail("the writer did not get going within 60 s")
        if mode == "anywhere":
            time.sleep(0.05)  # let it get into the next records: the kill lands wherever it lands
        os.kill(writer.pid, signal.SIGKILL)
    finally:
        writer.kill()
        writer.wait(timeout=30)
        if writer.stdout is not None:
            writer.stdout.close()
    assert writer.returncode == -signal.SIGKILL


@pytest.mark.parametrize("mode", ["mid-record", "anywhere"])
def test_writer_killed_mid_write_loses_at_most_one_record(tmp_path: Path, mode: str) -> None:
    _run_writer_and_kill(tmp_path, mode)
    path = tmp_path / "crash.jsonl"
    data = path.read_bytes()
    *complete, tail = data.split(b"\n")
    torn = tail != b""
    if mode == "mid-record":
        assert torn and len(complete) == 5, "the kill must land inside record 5"

    # Every complete line is an intact record, in order, with its payload untouched.
    assert len(complete) >= 5
    for seq, line in enumerate(complete):
        record = json.loads(line)
        assert record["details"] == {"seq": seq}
        assert record["question"] == f"{seq}:" + "abcdefghij"[seq % 10] * PAYLOAD
    if torn:
        with pytest.raises(ValueError):
            json.loads(tail)

    # The reader yields exactly the complete records and counts the torn one; it never raises.
    stats = ReadStats()
    assert [r["details"]["seq"] for r in read_log(path, stats)] == list(range(len(complete)))
    assert stats.skipped == int(torn)

    # A new writer appends after the torn line, on a line of its own.
    ClassLog(tmp_path, user="crash").solved("after", "the next session")
    stats = ReadStats()
    records = list(read_log(path, stats))
    assert len(records) == len(complete) + 1 and stats.skipped == int(torn)
    assert records[-1]["question_id"] == "after" and records[-1]["event"] == "solved"
