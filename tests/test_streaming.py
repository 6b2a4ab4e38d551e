"""stream_from_worker: a worker thread's items read in the caller's thread, its errors re-raised
there, and the work cancelled when the caller stops reading. Its users are tested where they are
(test_llamacpp, test_executor's run_many), but for the transformers backend's interrupt, here."""

from __future__ import annotations

import threading
import time
from contextlib import closing
from pathlib import Path

import pytest

from pal_jupyter.streaming import stream_from_worker


def _threads(name: str) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == name]


def test_items_come_in_order_in_the_callers_thread_and_the_worker_is_joined():
    seen: list[tuple[int, str]] = []

    def work(put, cancelled):
        for i in range(100):
            put((i, threading.current_thread().name))

    for item in stream_from_worker(work, name="test-stream-order"):
        seen.append(item)
        assert threading.current_thread() is threading.main_thread()
    assert [i for i, _ in seen] == list(range(100))
    assert {name for _, name in seen} == {"test-stream-order"}
    assert not _threads("test-stream-order")


def test_the_works_error_comes_out_after_the_items_it_put():
    error = ValueError("the model broke")
    got: list[object] = []

    def work(put, cancelled):
        put(1)
        put(RuntimeError("an item, not an error"))
        raise error

    with pytest.raises(ValueError) as raised:
        for item in stream_from_worker(work, name="test-stream-error"):
            got.append(item)
    assert raised.value is error
    assert got[0] == 1 and isinstance(got[1], RuntimeError)


def test_stopping_early_cancels_the_work_and_can_wait_for_it():
    steps: list[int] = []

    def work(put, cancelled):
        for i in range(10_000):
            if cancelled():
                return
            steps.append(i)
            put(i)
            time.sleep(0.001)

    with pytest.raises(KeyboardInterrupt):
        with closing(stream_from_worker(work, name="test-stream-cancel", wait_on_cancel=True)) as items:
            for item in items:
                if item == 3:
                    raise KeyboardInterrupt  # the caller's own loop: closing() cancels the work
    assert not _threads("test-stream-cancel"), "wait_on_cancel: the work has ended"
    assert len(steps) < 100


def test_a_callers_event_cancels_from_outside_and_the_stream_reads_to_the_end():
    cancel = threading.Event()
    seen: list[int] = []

    def work(put, cancelled):
        i = 0
        while not cancelled():
            put(i)
            i += 1
            time.sleep(0.001)
        put(-1)  # what the work puts after the cancel still arrives

    for item in stream_from_worker(work, name="test-stream-event", cancel=cancel):
        seen.append(item)
        if item == 5:
            cancel.set()
    assert seen[:6] == list(range(6)) and seen[-1] == -1


def test_interrupting_transformers_cancels_generation_and_the_model_stays_usable(tiny_model_dir: Path):
    """Ctrl-C in the caller's thread (here in ``on_token``) stops ``generate`` at its next step, and
    the caller waits for it (it holds the model's lock): nothing is left running, the model answers."""
    pytest.importorskip("torch")
    from pal_jupyter.backends import GenerationOptions, load_model

    backend = load_model(str(tiny_model_dir), device="cpu", dtype="float32")
    messages = [{"role": "user", "content": "If a train travels 60 mph for 2.5 hours, how far does it go?"}]

    def interrupt(row: int, text: str) -> None:
        raise KeyboardInterrupt

    options = GenerationOptions(max_new_tokens=300, temperature=1.0, seed=1, stop_after_code=False)
    with pytest.raises(KeyboardInterrupt):
        backend.generate_many(messages, 2, options, on_token=interrupt)
    assert not _threads("pal-generate"), "no generation thread is left"
    assert not backend._lock.locked()
    assert backend.generate(messages, GenerationOptions(max_new_tokens=4)).completion_tokens > 0
