"""Worked programs from GSM8K's training solutions: the bank the prompt's examples are chosen from.

GSM8K's reference solutions mark every calculation, ``Natalia sold 48/2 = <<48/2=24>>24 clips
in May.``. Each marked step becomes one assignment, named from the words that follow its result
(``clips_in_may = 48 / 2``) under the sentence it came from as a comment; a number that an
earlier step computed becomes that step's name, so the program reads as a chain of steps. A
solution is kept only if every step computes the value its annotation says and the program,
run, prints the reference answer: the bank holds programs verified by execution, nothing typed
by hand.

Build (the packaged file, ``pal_jupyter/prompts/worked_programs.jsonl.gz``)::

    python -m pal_jupyter.training.worked_programs ../shared/data/gsm8k/train.jsonl
"""

from __future__ import annotations

import argparse
import ast
import builtins
import contextlib
import gzip
import io
import json
import keyword
import math
import re
import sys
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path

from ..prompts.retrieval import BANK_PATH, WorkedProgram

ANNOTATION = re.compile(r"<<([^=<>]*)=([^<>]*)>>")
NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.])")
WORD = re.compile(r"[A-Za-z]+(?:'[a-z]+)?")
# Words that make poor variable names at either end of a name.
FILLER = frozenset(
    "a an the and so of to in on for is are was were he she they it his her their its this that then which "
    "there has have had with at by from as be will would can per each more than left all now we you i gets "
    "get got makes make made does did do if after before into out up over one".split()
)
ARITHMETIC = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Constant, ast.Name, ast.Load, ast.Add, ast.Sub,
              ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow, ast.USub, ast.UAdd)


class Unconvertible(ValueError):
    """A solution that does not become a verified program (the reason says which check failed)."""


def convert(question: str, solution: str) -> WorkedProgram:
    """One GSM8K training row as a verified program; :class:`Unconvertible` when it cannot be."""
    *lines, final = solution.strip().split("\n")
    answer = _number(final.replace("####", ""))
    in_question = set(NUMBER.findall(question.replace(",", "")))
    steps: list[tuple[str, float]] = []  # (name, value), in order
    program: list[str] = []
    for line in lines:
        marks = list(ANNOTATION.finditer(line))
        if not marks:
            continue
        program.append("# " + " ".join(ANNOTATION.sub("", line).split()))
        start = 0
        for mark in marks:
            expression = _chain(_python(mark.group(1)), steps, in_question)
            value = _evaluate(expression, dict(steps))
            if not _close(value, _number(mark.group(2))):
                raise Unconvertible(f"step {mark.group(1)!r} does not compute {mark.group(2)!r}")
            name = _name(line[mark.end():], line[start:mark.start()], {n for n, _ in steps})
            start = mark.end()
            steps.append((name, value))
            program.append(f"{name} = {expression}")
    if not steps or not _close(steps[-1][1], answer):
        raise Unconvertible("the last marked step is not the answer")
    program.append(f"print({steps[-1][0]})")
    text = "\n".join(program)
    if not _close(_number(_run(text)), answer):
        raise Unconvertible("the program does not print the answer")
    return WorkedProgram(question=question, program=text, answer=answer)


def _python(expression: str) -> str:
    """An annotation's arithmetic as Python (GSM8K writes 1,000, 2^3, 3x4 and $5)."""
    for old, new in ((",", ""), ("^", "**"), ("x", "*"), ("X", "*"), ("$", ""), ("\u00d7", "*"), ("\u00f7", "/")):
        expression = expression.replace(old, new)
    return expression.strip()


def _chain(expression: str, steps: list[tuple[str, float]], in_question: set[str]) -> str:
    """Numbers an earlier step computed become that step's name (the latest one, when two match),
    unless the question itself states the number; spacing made uniform by ``ast.unparse``."""

    def name_for(match: re.Match[str]) -> str:
        number = match.group(0)
        if number not in in_question:
            for name, value in reversed(steps):
                if _close(float(number), value):
                    return name
        return number

    try:
        return ast.unparse(ast.parse(NUMBER.sub(name_for, expression), mode="eval"))
    except SyntaxError:
        raise Unconvertible(f"not arithmetic: {expression!r}") from None


def _evaluate(expression: str, names: dict[str, float]) -> float:
    tree = ast.parse(expression, mode="eval")
    if not all(isinstance(node, ARITHMETIC) for node in ast.walk(tree)):
        raise Unconvertible(f"not arithmetic: {expression!r}")
    try:
        return float(eval(compile(tree, "<step>", "eval"), {"__builtins__": {}}, names))  # arithmetic only, checked above
    except (ArithmeticError, NameError, TypeError) as error:
        raise Unconvertible(f"{expression!r}: {error}") from None


def _run(program: str) -> str:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(program, {"__builtins__": {"print": print}})  # assignments of checked arithmetic, and one print
    return printed.getvalue()


def _name(after: str, before: str, taken: set[str]) -> str:
    """A name from the words after the result ('24 clips in May.' -> clips_in_may), else before it."""
    after = re.sub(r"^\$?[\d.,]+", "", after)
    phrase = [w.lower() for w in WORD.findall(re.split(r"[.,;:!?]", after, maxsplit=1)[0])]
    words = _trimmed(_trimmed(phrase[:4])[:3])
    if not words:
        words = [w.lower() for w in WORD.findall(before) if w.lower() not in FILLER][-2:]
    name = "_".join(w.replace("'", "_") for w in words) or "step"
    if keyword.iskeyword(name) or hasattr(builtins, name):
        name += "_value"
    unique, n = name, 2
    while unique in taken:
        unique, n = f"{name}_{n}", n + 1
    return unique


def _trimmed(words: list[str]) -> list[str]:
    while words and words[0] in FILLER:
        words.pop(0)
    while words and words[-1] in FILLER:
        words.pop()
    return [w for w in words if not w.endswith("'s")] or words


def _number(text: str) -> float:
    try:
        return float(text.replace(",", "").replace("$", "").strip())
    except ValueError:
        raise Unconvertible(f"not a number: {text!r}") from None


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-4, abs_tol=1e-6)


def build(rows: Iterable[dict[str, str]]) -> tuple[list[WorkedProgram], Counter[str]]:
    """The verified programs of ``rows`` (GSM8K ``question``/``answer``) and why the others were left out."""
    kept, left_out = [], Counter()
    for row in rows:
        try:
            kept.append(convert(row["question"], row["answer"]))
        except Unconvertible as reason:
            left_out[str(reason).split(":")[0].split("'")[0].strip()] += 1
    return kept, left_out


def write(programs: Iterable[WorkedProgram], path: Path) -> None:
    # No name or time in the header: the same bank gives the same bytes, so a rebuild shows no change in git.
    with open(path, "wb") as raw, gzip.GzipFile(filename="", fileobj=raw, mode="wb", mtime=0) as out:
        for entry in programs:
            out.write((json.dumps(entry.as_json(), ensure_ascii=False) + "\n").encode("utf-8"))


def _rows(path: Path) -> Iterator[dict[str, str]]:
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            if line.strip():
                yield json.loads(line)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("train", type=Path, help="GSM8K train.jsonl")
    parser.add_argument("--out", type=Path, default=BANK_PATH)
    args = parser.parse_args(argv)
    if not args.train.is_file():
        parser.error(f"no GSM8K train file at {args.train} (it is ../shared/data/gsm8k/train.jsonl in this project)")
    kept, left_out = build(_rows(args.train))
    write(kept, args.out)
    print(f"{len(kept)} verified programs written to {args.out}; left out: "
          + (", ".join(f"{n} ({why})" for why, n in left_out.most_common()) or "none"), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
