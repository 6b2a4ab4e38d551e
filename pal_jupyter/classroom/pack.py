"""A tutor pack: one JSON file of verified hints for an assignment, prepared before class.

``pal-jupyter prepare`` writes it (:mod:`.prepare`); ``%pal_pack`` loads it in class, and then
``%%pal --tutor`` answers a pack question from it at once, with no model run, the same for every
student. A teacher can read and edit it: per question the question's text, the hint ladder, what
``--check`` compares with (a salted hash, :mod:`.answer_key`) and whether a program verified it.
It never holds the answer, and holds the whole program only when the teacher asked for solutions.

A student's question is matched tolerantly: case, whitespace and punctuation do not count, and a
near match (a word changed or dropped) is taken and named.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..errors import PalError
from .answer_key import AnswerKey
from .tutor import Hint, LEVEL_TITLES

FORMAT = "pal-jupyter tutor pack"
VERSION = 1
SUFFIX = ".pal-pack.json"  # a pack beside a notebook is found by this ending
NEAR = 0.85  # the least similarity (difflib's ratio of the normalised texts) a near match needs


@dataclass
class PackQuestion:
    """One question of a pack: its hints, its key, and how (or why not) it was verified."""

    id: str
    question: str
    key: AnswerKey | None
    hints: list[Hint] = field(default_factory=list)
    verified_by: str = ""  # "the teacher's solution", "a program that computes it (...)"; "" = not verified
    problem: str = ""  # why it could not be verified, for the teacher
    seconds: float = 0.0  # the time prepare spent on it

    @property
    def verified(self) -> bool:
        return bool(self.verified_by)

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "question": self.question, "verified": self.verified,
                "verified_by": self.verified_by, "problem": self.problem, "seconds": round(self.seconds, 1),
                "key": self.key.to_json() if self.key else None,
                "hints": [{"level": h.level, "title": h.title, "text": h.text, "code": h.is_code} for h in self.hints]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PackQuestion:
        hints = [Hint(int(h["level"]), str(h.get("title") or LEVEL_TITLES.get(int(h["level"]), "")), str(h["text"]),
                      bool(h.get("code", False))) for h in data.get("hints") or []]
        key = AnswerKey.from_json(data["key"]) if data.get("key") else None
        return cls(str(data["id"]), str(data["question"]), key, sorted(hints, key=lambda h: h.level),
                   str(data.get("verified_by") or ""), str(data.get("problem") or ""), float(data.get("seconds") or 0))


@dataclass
class PackMatch:
    """A student's question matched to a pack question (``exact`` unless only near)."""

    question: PackQuestion
    exact: bool
    similarity: float


@dataclass
class TutorPack:
    """The questions of one assignment, prepared; :meth:`find` matches a student's question."""

    questions: list[PackQuestion]
    assignment: str = ""
    model: str = ""
    created: str = ""
    solutions: bool = False  # whether hints include the whole program (level 3)
    path: Path | None = None

    @property
    def name(self) -> str:
        return self.path.name if self.path is not None else self.assignment

    @property
    def verified(self) -> int:
        return sum(q.verified for q in self.questions)

    def find(self, question: str) -> PackMatch | None:
        """The pack question ``question`` is, compared without case, whitespace and punctuation;
        else the most similar one when it is similar enough; else None."""
        asked = normalised(question)
        if not asked:
            return None
        texts = [(normalised(q.question), q) for q in self.questions]
        exact = next((q for text, q in texts if text == asked), None)
        if exact is not None:
            return PackMatch(exact, exact=True, similarity=1.0)
        similarity = ((difflib.SequenceMatcher(None, asked, text, autojunk=False).ratio(), q) for text, q in texts)
        score, best = max(similarity, key=lambda pair: pair[0], default=(0.0, None))
        return PackMatch(best, exact=False, similarity=score) if best is not None and score >= NEAR else None

    def to_json(self) -> dict[str, Any]:
        return {"format": FORMAT, "version": VERSION, "assignment": self.assignment, "model": self.model,
                "created": self.created or datetime.now(timezone.utc).isoformat(timespec="seconds"),
                "solutions": self.solutions, "verified": f"{self.verified} of {len(self.questions)}",
                "questions": [q.to_json() for q in self.questions]}

    def save(self, path: str | Path) -> Path:
        file = Path(path)
        file.write_text(json.dumps(self.to_json(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        self.path = file
        return file

    @classmethod
    def load(cls, path: str | Path) -> TutorPack:
        file = Path(path).expanduser()
        try:
            data = json.loads(file.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise PalError(f"No tutor pack at {file}: make one with 'pal-jupyter prepare ASSIGNMENT'.") from None
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise PalError(f"{file} is not a tutor pack (not JSON: {exc}).") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise PalError(f"{file} is not a tutor pack (it has no \"format\": \"{FORMAT}\").")
        if int(data.get("version", 0)) > VERSION:
            raise PalError(f"{file} is a tutor pack of version {data['version']}; this pal-jupyter reads version "
                           f"{VERSION}: upgrade pal-jupyter.")
        try:
            questions = [PackQuestion.from_json(q) for q in data.get("questions", [])]
        except (KeyError, TypeError, ValueError) as exc:
            raise PalError(f"{file}: a question of the pack is incomplete ({exc}); was it edited by hand?") from None
        return cls(questions, str(data.get("assignment", "")), str(data.get("model", "")),
                   str(data.get("created", "")), bool(data.get("solutions", False)), file)


def pack_path_for(assignment: str | Path) -> Path:
    """Where ``prepare`` writes the pack of ``assignment`` by default: beside it."""
    file = Path(assignment)
    return file.with_name(file.stem + SUFFIX)


def pack_beside(folder: str | Path) -> Path | None:
    """The one pack in ``folder`` (a notebook's), found without being named; None when there is
    none, or several (then the teacher names one with ``%pal_pack``)."""
    found = sorted(Path(folder).glob(f"*{SUFFIX}"))
    return found[0] if len(found) == 1 else None


def normalised(text: str) -> str:
    """A question without case, punctuation and spacing: what a tolerant match compares."""
    return " ".join(re.sub(r"[^\w\s]|_", " ", text.casefold()).split())
