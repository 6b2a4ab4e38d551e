"""Reading a numeric answer out of program output and comparing it with a reference."""

from __future__ import annotations

import math
import re

_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?|-?\.\d+")


def parse_number(text: str | None) -> float | None:
    """The last number in ``text`` ('1,234.5' -> 1234.5), or None when there is none."""
    if not text:
        return None
    matches = _NUMBER.findall(text)
    for raw in reversed(matches):
        try:
            value = float(raw.replace(",", ""))
        except ValueError:
            continue
        if math.isfinite(value):
            return value
    return None


def reference_answer(record: dict) -> float | None:
    """A data set row's answer: GSM8K's ``answer`` ('... #### 72') or a numeric ``target``."""
    if "target" in record and record["target"] is not None:
        try:
            return float(record["target"])
        except (TypeError, ValueError):
            return parse_number(str(record["target"]))
    answer = record.get("answer")
    if isinstance(answer, (int, float)):
        return float(answer)
    if isinstance(answer, str):
        return parse_number(answer.split("####")[-1])
    return None


def numbers_match(got: float | None, expected: float | None, tolerance: float = 1e-3) -> bool:
    """Equal within 1e-3, relative to the size of the expected value when it is large."""
    if got is None or expected is None:
        return False
    return abs(got - expected) <= tolerance * max(1.0, abs(expected))
