"""Waiting in tests for a condition, not for a fixed time: fast when things are fast, patient when
a shared machine is slow, and a failure that says what never happened."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(condition: Callable[[], T], timeout: float = 10.0, interval: float = 0.05, what: str = "") -> T:
    """``condition()``'s first truthy value, asked every ``interval`` seconds; an AssertionError
    naming ``what`` (and the last value) if none came within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"waited {timeout:g} s{' for ' + what if what else ''}; last: {value!r}")
        time.sleep(interval)
