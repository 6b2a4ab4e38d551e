"""Are the tutor's hints short and plain? Words and reading grade of the hints on 30 questions.

    pip install textstat==0.7.8   # readability formulas; later versions fetch NLTK data from the network
    python benchmarks/bench_hints.py [--data ../shared/data/gsm8k/test.jsonl] [--limit 30] [--model default]
    python benchmarks/bench_hints.py --programs bench-results/hints-0.jsonl --out bench-results/hints-1.jsonl

For each question the default model writes one greedy program (the tutor's own solution; a
question whose program does not run is skipped and counted), then two kinds of hint are made
as the product makes them:

* **plan**: level 1 of the hint ladder, guiding sub-questions (``classroom.tutor.plan_hint``);
* **error**: the tutor-mode explanation of a student's error (``explain_error(..., as_hint=True)``,
  what "Explain this error" gives in tutor mode), for the program with one planted error, by kind,
  in turn: a misspelt name (the last use of a variable misspelt: the commonest error of beginners
  and of the model itself), a TypeError (the last ``print(x)`` made ``print("The answer is " + x)``)
  and a name never given a value (the first assignment to a variable removed). The product answers
  these without the model (``classroom.error_hints``); ``--model-too`` also asks the model for the
  same broken program (``model_explanation``, what the product did before), side by side.

Printed: per kind, words (median, p90, max), Flesch-Kincaid grade (median, p90, max), and how
many are within the targets (at most 120 words; grade at most 8). Every hint goes to
``bench-results/hints.jsonl`` to read.
"""

from __future__ import annotations

import argparse
import ast
import collections
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from pal_jupyter import KernelPool
from pal_jupyter.backends import GenerationOptions, load_model
from pal_jupyter.backends.presets import DEFAULT_MODEL
from pal_jupyter.classroom.cell_error import located_error
from pal_jupyter.classroom.tutor import explain_error, model_explanation, plan_hint
from pal_jupyter import prompts
from pal_jupyter.engine.answers import parse_number
from pal_jupyter.engine.extraction import extract_code
from pal_jupyter.errors import NoCodeError

MAX_WORDS, MAX_GRADE = 120, 8.0


def planted_name_error(program: str) -> str | None:
    """``program`` with the last use of an assigned variable misspelt (``total`` -> ``totl``)."""
    tree = ast.parse(program)
    assigned = {t.id for n in ast.walk(tree) if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    uses = [n for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in assigned
            and len(n.id) > 2]
    if not uses:
        return None
    use = max(uses, key=lambda n: (n.lineno, n.col_offset))
    lines = program.splitlines()
    line = lines[use.lineno - 1]
    lines[use.lineno - 1] = line[:use.col_offset] + use.id[:-2] + use.id[-1] + line[use.end_col_offset:]
    return "\n".join(lines)


def planted_type_error(program: str) -> str | None:
    """``program`` whose last ``print(x)`` joins text and the number (``"The answer is " + x``): a TypeError."""
    tree = ast.parse(program)
    prints = [n for n in tree.body if isinstance(n, ast.Expr) and isinstance(n.value, ast.Call)
              and getattr(n.value.func, "id", None) == "print" and len(n.value.args) == 1 and n.lineno == n.end_lineno]
    if not prints:
        return None
    node, lines = prints[-1], program.splitlines()
    argument = ast.get_source_segment(program, node.value.args[0])
    if not isinstance(node.value.args[0], ast.Name):
        argument = f"({argument})"
    lines[node.lineno - 1] = lines[node.lineno - 1][:node.col_offset] + f'print("The answer is " + {argument})'
    return "\n".join(lines)


def planted_missing_value(program: str) -> str | None:
    """``program`` without its first assignment to a variable that is used later: a NameError."""
    tree = ast.parse(program)
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load) for n in ast.walk(tree)):
                lines = program.splitlines()
                del lines[node.lineno - 1: node.end_lineno]
                return "\n".join(lines)
    return None


def planted_errors(program: str, index: int) -> list[str]:
    """The errors to plant, in order of preference: each kind first in turn (misspelt name, text
    joined to a number, a name never given a value), the others as fall-backs."""
    kinds = [planted_name_error, planted_type_error, planted_missing_value]
    turn = kinds[index % 3:] + kinds[:index % 3]
    return [b for b in (plant(program) for plant in turn) if b is not None]


def kind_of(error: str, hint: str) -> str:
    """The row of the table: the exception's name, split for NameErrors by what the product said."""
    name = error.splitlines()[-1].split(":")[0]
    if name == "NameError":
        return "NameError, misspelt" if "spelling slip" in hint else "NameError, no value"
    return name


def readability(text: str) -> tuple[int, float]:
    import textstat

    return len(text.split()), float(textstat.flesch_kincaid_grade(text))


def summary(name: str, rows: list[tuple[int, float]]) -> str:
    if not rows:
        return f"| {name} | 0 | | | | |"
    words, grades = sorted(r[0] for r in rows), sorted(r[1] for r in rows)

    def p90(values: list[Any]) -> Any:
        return values[min(len(values) - 1, int(0.9 * len(values)))]

    within = sum(1 for w, g in rows if w <= MAX_WORDS and g <= MAX_GRADE)
    return (f"| {name} | {len(rows)} | {statistics.median(words):.0f} / {p90(words)} / {words[-1]} | "
            f"{statistics.median(grades):.1f} / {p90(grades):.1f} / {grades[-1]:.1f} | "
            f"{sum(1 for w in words if w <= MAX_WORDS)} | {sum(1 for g in grades if g <= MAX_GRADE)} | {within} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default="../shared/data/gsm8k/test.jsonl")
    parser.add_argument("--limit", type=int, default=30)
    parser.add_argument("--model", default=DEFAULT_MODEL)
    parser.add_argument("--out", default="bench-results/hints.jsonl")
    parser.add_argument("--programs", default=None,
                        help="reuse the programs (and planted errors) of an earlier run's JSONL: only the hints "
                             "are written again, so two prompts are compared on the same programs")
    parser.add_argument("--model-too", action="store_true",
                        help="also ask the model for each error hint (as the product did before it had words of "
                             "its own for these errors): both are measured on the same broken program")
    args = parser.parse_args()
    try:
        import textstat  # noqa: F401
    except ImportError:
        print("bench_hints needs textstat for the reading grade: pip install textstat==0.7.8", file=sys.stderr)
        return 2
    rows = [json.loads(line) for line in Path(args.data).read_text().splitlines()[: args.limit]]
    earlier = None
    if args.programs:
        earlier = {r["question"]: r["program"] for r in map(json.loads, Path(args.programs).read_text().splitlines())}
    backend = load_model(args.model)
    greedy = GenerationOptions(temperature=0.0)
    measured: dict[str, list[tuple[int, float]]] = collections.defaultdict(list)
    skipped, started = 0, time.time()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    with KernelPool() as pool, open(args.out, "w") as out:
        for index, row in enumerate(rows, 1):
            question = row["question"]
            try:
                program = earlier[question] if earlier is not None else \
                    extract_code(backend.generate(prompts.pal_messages(question), greedy).text).code
            except (NoCodeError, KeyError):
                skipped += 1
                continue
            result = pool.run(program)
            if not result.ok:
                skipped += 1
                continue
            answer = parse_number(result.text_output())
            plan = plan_hint(question, program, answer, backend, greedy).text
            measured["plan"].append(readability(plan))
            record = {"question": question, "program": program, "plan": plan}
            for broken in planted_errors(program, index):
                error = pool.run(broken).error
                if error is None:  # the join was of text: no error; try the other
                    continue
                code = broken.splitlines()[error.lineno - 1] if error.lineno else ""
                located = located_error(error.ename, error.evalue, error.lineno, code)
                text = located.report()
                hint = explain_error(broken, located, backend, greedy, as_hint=True)
                kind = kind_of(text, hint)
                measured[f"error: {kind}"].append(readability(hint))
                record.update(broken=broken, error=text, error_hint=hint)
                if args.model_too:
                    record["model_hint"] = model_explanation(broken, text, backend, greedy, as_hint=True)
                    measured[f"error: {kind}, the model's hint"].append(readability(record["model_hint"]))
                break
            out.write(json.dumps(record) + "\n")
            out.flush()
            print(f"[{index}/{len(rows)}] {time.time() - started:.0f} s", file=sys.stderr, flush=True)
    print(f"{len(rows)} questions from {args.data}, model {args.model}; skipped (no working program): {skipped}")
    print(f"| hint | n | words: median / p90 / max | FK grade: median / p90 / max | <= {MAX_WORDS} words | "
          f"grade <= {MAX_GRADE:g} | both |")
    print("|---|---|---|---|---|---|---|")
    for name in ["plan", *sorted(set(measured) - {"plan"})]:
        print(summary(name, measured[name]))
    print(f"hints: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
