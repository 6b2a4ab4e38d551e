"""What ``%%pal --check`` compares a student's printed answer with, without holding the answer.

A tutor pack is handed to students, so it keeps a salted SHA-256 of the answer, never the answer.
That gives a student nothing ``--check`` does not already give: both say only whether a guess is
right, and a guess can be tried against either (a number can be found by trying them all, which
``--check`` allows too). The salt is per question, so one pack's hashes say nothing about another's.

A number is compared rounded to the cent (``18``, ``18.0`` and ``18.004`` are one answer), as a
teacher reads a printed result; a text answer by its words, in any case.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass
from typing import Any

from ..engine.answers import parse_number

_WORDS = re.compile(r"[^\w.%-]+")


def canonical(value: float | str) -> str:
    """The form an answer is hashed in: a number to two decimals, a text's words in lower case."""
    if isinstance(value, (int, float)):
        rounded = round(float(value), 2)
        return f"{rounded + 0.0:.2f}"  # + 0.0: -0.00 is 0.00
    return " ".join(_WORDS.sub(" ", value.casefold()).split()).strip(" .")


@dataclass(frozen=True)
class AnswerKey:
    """A salted hash of one answer (``kind`` "number" or "text"); :meth:`matches` says if a printed answer is it."""

    kind: str
    salt: str
    sha256: str
    name: str | None = None  # the variable the teacher's solution leaves the answer in, when it prints nothing

    @classmethod
    def of(cls, answer: float | str, name: str | None = None, salt: str | None = None) -> AnswerKey:
        number = answer if isinstance(answer, (int, float)) else parse_number(answer) if _is_number(answer) else None
        kind, value = ("number", float(number)) if number is not None else ("text", str(answer))
        salt = salt or secrets.token_hex(8)
        return cls(kind, salt, _digest(salt, canonical(value)), name)

    def matches(self, printed: str | float | None) -> bool:
        """Whether ``printed`` (what a program printed, or a number) is the answer: a number's last
        number printed; a text answer's last line printed."""
        if printed is None:
            return False
        if self.kind == "number":
            value = printed if isinstance(printed, (int, float)) else parse_number(str(printed))
            return value is not None and _digest(self.salt, canonical(float(value))) == self.sha256
        lines = [line for line in str(printed).splitlines() if line.strip()]
        return bool(lines) and _digest(self.salt, canonical(lines[-1])) == self.sha256

    def to_json(self) -> dict[str, Any]:
        named = {"name": self.name} if self.name else {}
        return {"kind": self.kind, "salt": self.salt, "sha256": self.sha256, **named}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> AnswerKey:
        return cls(str(data["kind"]), str(data["salt"]), str(data["sha256"]), data.get("name"))


def _digest(salt: str, text: str) -> str:
    return hashlib.sha256(f"{salt}:{text}".encode()).hexdigest()


def _is_number(text: str) -> bool:
    return re.fullmatch(r"\s*[-+$]?[\d,]*\.?\d+(?:e[-+]?\d+)?\s*%?\s*", str(text), re.IGNORECASE) is not None
