"""Worked examples chosen for the question: the most similar solved questions from a verified bank.

The bank (``worked_programs.jsonl.gz``, built by :mod:`pal_jupyter.training.worked_programs`
from GSM8K's training solutions) holds programs that were run and printed the reference answer.
Similarity is BM25 over the questions' words: no second model, a few milliseconds per question,
and a question about shirts and discounts finds solved questions about prices and discounts.
"""

from __future__ import annotations

import functools
import gzip
import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

BANK_PATH = Path(__file__).with_name("worked_programs.jsonl.gz")
WORD = re.compile(r"[a-z]+")
# Words every word problem has: they say nothing about which problem it is.
COMMON = frozenset(
    "a an the and or but so of to in on for is are was were be been he she they it his her their its him them "
    "this that these those then than there which who what how many much does did do has have had with at by from "
    "as if will would can could into out up over one two three all some more less each per print just number".split()
)


@dataclass(frozen=True)
class WorkedProgram:
    """A solved question: a program that, run, printed ``answer`` (the data set's reference)."""

    question: str
    program: str
    answer: float

    def reply(self) -> str:
        """As the assistant's turn of a worked example."""
        return f"```python\n{self.program}\n```"

    def as_json(self) -> dict[str, Any]:
        return {"question": self.question, "program": self.program, "answer": self.answer}


class HasQuestion(Protocol):
    @property
    def question(self) -> str: ...


Solved = TypeVar("Solved", bound=HasQuestion)


def terms(text: str) -> list[str]:
    """The words that tell questions apart: lower case, common words dropped, a plural's s cut."""
    words = (w for w in WORD.findall(text.lower()) if w not in COMMON and len(w) > 1)
    return [w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w for w in words]


class SimilarQuestions(Generic[Solved]):
    """A BM25 index over the questions of a bank of solved examples (Robertson's k1 and b at
    their usual values)."""

    def __init__(self, bank: Sequence[Solved], k1: float = 1.5, b: float = 0.75) -> None:
        self.bank = tuple(bank)
        self.k1 = k1
        self._counts = [Counter(terms(entry.question)) for entry in self.bank]
        lengths = [sum(c.values()) for c in self._counts]
        mean_length = sum(lengths) / max(len(lengths), 1)
        # BM25's length normalisation depends on the entry only: computed once, not per query.
        self._norms = [k1 * (1 - b + b * length / mean_length) for length in lengths]
        self._postings: dict[str, list[int]] = {}
        for index, counts in enumerate(self._counts):
            for term in counts:
                self._postings.setdefault(term, []).append(index)
        n = len(self.bank)
        self._idf = {t: math.log(1 + (n - len(p) + 0.5) / (len(p) + 0.5)) for t, p in self._postings.items()}

    def scores(self, question: str) -> dict[int, float]:
        """BM25 score of every bank entry that shares a term with ``question``."""
        scores: dict[int, float] = {}
        for term in set(terms(question)):
            idf = self._idf.get(term)
            if idf is None:
                continue
            for index in self._postings[term]:
                tf = self._counts[index][term]
                scores[index] = scores.get(index, 0.0) + idf * tf * (self.k1 + 1) / (tf + self._norms[index])
        return scores

    def most_similar(self, question: str, k: int) -> list[Solved]:
        """The ``k`` entries most like ``question`` (fewer when fewer share a word with it), least
        similar first: the closest example then sits next to the question in the prompt. The
        question itself, if banked, is skipped."""
        scores = self.scores(question)
        ranked = sorted(scores, key=lambda i: (-scores[i], i))
        chosen = [self.bank[i] for i in ranked if self.bank[i].question.strip() != question.strip()][:k]
        return chosen[::-1]


def read_bank(path: Path) -> list[WorkedProgram]:
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        return [WorkedProgram(**json.loads(line)) for line in lines if line.strip()]


@functools.cache
def packaged_index() -> SimilarQuestions[WorkedProgram]:
    """The index over the packaged bank, built once per process (about 0.25 s for 7,001 entries here)."""
    return SimilarQuestions(read_bank(BANK_PATH))


def similar_examples(question: str, k: int) -> Iterable[tuple[str, str]]:
    """(question, reply) turns of the ``k`` packaged worked programs most like ``question``."""
    return [(entry.question, entry.reply()) for entry in packaged_index().most_similar(question, k)]
