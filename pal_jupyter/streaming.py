"""Streaming from a worker thread, written once: :func:`stream_from_worker`.

A model writing programs and a batch of programs running in kernels both work in other threads,
and what they produce (text, outputs) is read in the caller's thread: a UI updates from there,
and that thread stays interruptible (Ctrl-C, a Jupyter interrupt, a stop button) where a thread
inside a C extension or a blocking call would not be. The work puts its items on a queue; the
caller's thread yields them, re-raises the work's own exception, and cancels the work when it
stops reading early.

A module of its own below every layer: the backends (llama.cpp, transformers) and the kernels
(the pool's ``run_many``) use it, and neither may import the other.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

T = TypeVar("T")

#: ``work(put, cancelled)``, run in the worker thread: ``put(item)`` hands ``item`` to the caller's
#: thread; ``cancelled()`` says whether the caller has stopped reading (or cancelled), so the work
#: should stop at its next step.
Work = Callable[[Callable[[T], None], Callable[[], bool]], Any]

_END = object()  # the work has returned (or raised)


class _Failed:
    """The work's exception, on its way to the caller's thread (an item may be an exception too)."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error


def stream_from_worker(work: Work[T], *, name: str, cancel: threading.Event | None = None,
                       wait_on_cancel: bool = False) -> Iterator[T]:
    """Run ``work(put, cancelled)`` in a daemon thread called ``name`` and yield what it puts, in
    order, in the caller's thread; the stream ends when ``work`` returns (the thread is joined).

    An exception ``work`` raises is re-raised here, after the items it put before it. On any
    exception in the caller's thread while it waits (Ctrl-C), and when the generator is closed
    before the end (use :func:`contextlib.closing`, so that an error in the caller's own loop
    closes it at once), ``cancel`` is set: ``cancelled()`` turns true and the work stops at its
    next check. With ``wait_on_cancel`` the caller then waits for the work to end (work that
    must be over before the caller goes on, e.g. one holding a model's lock); without, the worker
    is left to finish by itself.

    ``cancel``: an Event of the caller's, to cancel the work from outside as well (llama.cpp stops
    once every program is complete); the stream still reads on until the work returns.
    """
    cancel = cancel if cancel is not None else threading.Event()
    items: queue.Queue[Any] = queue.Queue()

    def worker() -> None:
        try:
            work(items.put, cancel.is_set)
        except BaseException as exc:  # re-raised in the caller's thread
            items.put(_Failed(exc))
        finally:
            items.put(_END)

    thread = threading.Thread(target=worker, name=name, daemon=True)
    thread.start()
    try:
        while (item := items.get()) is not _END:
            if isinstance(item, _Failed):
                raise item.error
            yield item
    except BaseException:  # Ctrl-C while waiting, the work's error, or closed early (GeneratorExit)
        cancel.set()
        if wait_on_cancel:
            thread.join()
        raise
    thread.join()
