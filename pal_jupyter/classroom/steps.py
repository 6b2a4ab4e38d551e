"""Which step of a student's program to re-check, found by running it, not by asking the model.

A program that runs and prints a wrong number needs a pointer, not the answer. Both programs,
the student's and the tutor's verified one, run statement by statement in a child kernel with
the value of every top-level step recorded (assignments, bare expressions, and the numbers a
statement prints). The first step of the student's whose number appears nowhere in the tutor's
steps is the one to re-check: a number copied wrong (``students = 58``), or an operation that
does not fit (``3 * 58``). Only the student's own values are ever shown, so the pointer cannot
give the answer away. When every number matches, the steps are right and what is printed is
not: the hint says so.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from ..engine.answers import numbers_match
from ..kernels import ExecutorLimits, KernelPool

MARKER = "__pal_steps__:"
NUMBER = re.compile(r"-?\d+(?:,\d{3})*(?:\.\d+)?")

# Runs SOURCE one top-level statement at a time in one namespace, as the cell would, recording
# each step's numbers; a bare expression becomes an assignment so it is evaluated only once.
RECORDER = r'''
import ast as _pal_ast, contextlib as _pal_ctx, io as _pal_io, json as _pal_json, re as _pal_re, sys as _pal_sys

def _pal_record(source):
    namespace = {"__name__": "__main__"}
    steps = []
    for node in _pal_ast.parse(source).body:
        target = None
        if isinstance(node, _pal_ast.Expr):
            target = "_pal_value"
            node = _pal_ast.copy_location(_pal_ast.Assign([_pal_ast.Name(target, _pal_ast.Store())], node.value), node)
        elif isinstance(node, (_pal_ast.Assign, _pal_ast.AugAssign, _pal_ast.AnnAssign)):
            names = node.targets if isinstance(node, _pal_ast.Assign) else [node.target]
            target = [t.id for t in names if isinstance(t, _pal_ast.Name)]
        module = _pal_ast.fix_missing_locations(_pal_ast.Module([node], []))
        printed = _pal_io.StringIO()
        with _pal_ctx.redirect_stdout(printed):
            exec(compile(module, "<program>", "exec"), namespace)
        _pal_sys.stdout.write(printed.getvalue())
        values = [namespace.get(n) for n in ([target] if isinstance(target, str) else target or [])]
        numbers = [float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
        numbers += [float(n.replace(",", "")) for n in _pal_re.findall(NUMBER, printed.getvalue())]
        steps.append([node.lineno, numbers])
    print("\n" + MARKER + _pal_json.dumps(steps))

_pal_record(SOURCE)
'''


@dataclass
class Step:
    line: int  # 1-based line of the statement in the program
    numbers: list[float]


@dataclass
class StepCheck:
    """The first of the student's steps whose numbers the tutor's steps do not have, if any."""

    step: Step | None
    code_line: str = ""

    def hint(self) -> str:
        if self.step is None:
            return ("Every number your program computes also appears in a correct solution: the steps are "
                    "right. Check which of them your program prints at the end, and what the question asks for.")
        shown = ", ".join(f"{n:g}" for n in self.step.numbers[:3])
        return (f"Re-check `{self.code_line}`: it gives {shown}, which no step of a correct solution gives. "
                "Compare each number and each operation in it with the question.")


def record_steps(code: str, pool: KernelPool, limits: ExecutorLimits | None = None) -> list[Step] | None:
    """The numbers of each top-level step of ``code``, run in a child kernel; None if it fails."""
    program = (f"SOURCE = {code!r}\nMARKER = {MARKER!r}\nNUMBER = {NUMBER.pattern!r}\n" + RECORDER)
    result = pool.run(program, limits=limits)
    if not result.ok:
        return None
    for printed in reversed(result.text_output().splitlines()):
        if printed.startswith(MARKER):
            return [Step(line, numbers) for line, numbers in json.loads(printed[len(MARKER):])]
    return None


def first_unmatched_step(student: list[Step], reference: list[Step]) -> Step | None:
    """The first student step with a number that matches no number of any reference step."""
    known = [n for step in reference for n in step.numbers]
    for step in student:
        if any(not any(numbers_match(n, k) for k in known) for n in step.numbers):
            return step
    return None


def step_to_recheck(code: str, reference: str, pool: KernelPool,
                    limits: ExecutorLimits | None = None) -> StepCheck | None:
    """Where ``code`` parts from the verified ``reference``; None when either cannot be traced."""
    student, tutor = record_steps(code, pool, limits), record_steps(reference, pool, limits)
    if not student or not tutor:
        return None
    step = first_unmatched_step(student, tutor)
    lines = code.splitlines()
    text = lines[step.line - 1].strip() if step is not None and 0 < step.line <= len(lines) else ""
    return StepCheck(step, text)
