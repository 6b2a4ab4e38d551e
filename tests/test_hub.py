"""A class behind a real JupyterHub: three students ask the tutor at the same moment.

Everything is the real thing on loopback: JupyterHub with its proxy (configurable-http-proxy),
the shared-password login, JupyterHub's local spawner (one single-user server per student, with
a home of its own), the class policy in a read-only folder that every student's kernel loads, a
vLLM server with the lite model (``make vllm``), and notebook cells executed over each kernel's
websocket through the proxy, as JupyterLab does. Then the teacher's side: one log per student in
the class log folder, and ``pal-jupyter report`` over it.

Slow (8 minutes on a shared 2-core machine, 5 of them vLLM's start): ``make test`` and ``make test-hub`` (this test
alone, marker ``hub``) install the hub's parts. Without the hub's parts or vLLM it skips,
except in CI ($CI set), where it fails.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hub import ClassHub, Student, final_text, missing_parts, run_to_end
from model_server import free_port
from pal_jupyter.classroom.vllm_server import VllmServer, find_vllm_python
from pal_jupyter.errors import ModelLoadError

pytestmark = [pytest.mark.slow, pytest.mark.hub]

STUDENTS = ["ada", "grace", "alan"]
QUESTION = "Tom has 3 boxes with 12 pencils in each box. He gives 5 pencils away. How many pencils does he have left?"
TUTOR_ANSWERED = ("Hint 1", "I am not sure about this one")  # hints, or the tutor's own doubt: both answers


def _require(missing: str) -> None:
    if missing and os.environ.get("CI"):
        pytest.fail(f"{missing} (CI is set: `make test-hub` installs it, so this fails instead of skipping)")
    if missing:
        pytest.skip(missing)


@pytest.fixture(scope="module")
def vllm(tmp_path_factory: pytest.TempPathFactory):
    """The class's model server: vLLM on this CPU with the lite model (the default one is 3x slower)."""
    _require(missing_parts())
    try:
        python = find_vllm_python()
    except ModelLoadError as exc:
        _require(str(exc))
    server = VllmServer.for_model("lite", python, port=free_port(), kv_cache_gib=2,
                                  log_path=tmp_path_factory.mktemp("vllm") / "vllm.log")
    with server:
        yield server


async def _class_asks(hub: ClassHub) -> dict[str, tuple[str, str, float]]:
    """Every student opens a notebook (all at once), checks the policy, then asks the same question
    at the same moment; per student: the policy cell's text, the tutor cell's text, its seconds."""
    await hub.create_users(STUDENTS)
    students = await asyncio.gather(*(hub.student(name) for name in STUDENTS))
    try:
        policies = await asyncio.gather(*(s.execute('%pal_policy\n%config TeacherPolicy.mode = "assist"')
                                          for s in students))
        turns = await asyncio.gather(*(_timed(s, f"%%pal --tutor\n{QUESTION}") for s in students))
    finally:
        for student in students:
            student.close()
    return {s.name: (final_text(p), text, seconds) for s, p, (text, seconds) in zip(students, policies, turns)}


async def _timed(student: Student, cell: str) -> tuple[str, float]:
    start = time.perf_counter()
    outputs = await student.execute(cell)
    assert not [o for o in outputs if o["output_type"] == "error"], (student.name, outputs)
    return final_text(outputs), time.perf_counter() - start


def test_three_students_ask_the_tutor_at_once_through_a_real_hub(vllm: VllmServer, tmp_path: Path) -> None:
    hub = ClassHub(tmp_path / "hub", vllm.source)
    try:
        with hub:
            answers = run_to_end(_class_asks(hub))  # not asyncio.run: see run_to_end
    finally:
        assert hub.leftovers() == [], "processes of the hub outlived it"
    policy_file = str(hub.work / "class" / "ipython_config.py")
    for name, (policy, tutor, seconds) in answers.items():
        assert policy_file in policy and "mode             = 'tutor'" in policy, (name, policy)  # the class's file
        assert "TeacherPolicy.mode is locked by your teacher's policy" in policy, (name, policy)
        assert tutor.startswith(f"%%pal --tutor: {QUESTION}"), (name, tutor)
        assert any(mark in tutor for mark in TUTOR_ANSWERED), (name, tutor, vllm.log_tail())
    logs = sorted(path.name for path in hub.log_dir.glob("*.jsonl"))
    assert logs == sorted(f"{name}.jsonl" for name in STUDENTS)  # one file per student, named by the hub
    for name in STUDENTS:
        assert f'"user": "{name}"' in (hub.log_dir / f"{name}.jsonl").read_text()
    report = tmp_path / "report.html"
    result = subprocess.run([sys.executable, "-m", "pal_jupyter.cli", "report", str(hub.log_dir), "--out", str(report)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    html = report.read_text()
    assert all(name in html for name in STUDENTS) and "data:image/png;base64," in html
    print({name: f"{seconds:.1f} s" for name, (_, _, seconds) in answers.items()})
