"""Getting the program (and the explanation) out of a model's reply.

Models wrap code in Markdown fences, chat before and after it, sometimes stop mid-block when
they run out of tokens, and small ones sometimes write a bare program with no fence at all.
:func:`extract_code` takes the first fenced Python block, falls back to the longest stretch of
lines that parses as a real program, and raises :class:`NoCodeError` when there is none.
"""

from __future__ import annotations

import ast
import builtins
import re
from dataclasses import dataclass

from ..errors import NoCodeError

_FENCE = re.compile(r"^[ \t]*```[ \t]*([\w+-]*)[^\n]*\n(.*?)(?:^[ \t]*```|\Z)", re.DOTALL | re.MULTILINE)
_PYTHON_TAGS = {"python", "py", "python3", "ipython", "ipython3", ""}
_MEANINGFUL = (
    ast.Assign, ast.AugAssign, ast.AnnAssign, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
    ast.Import, ast.ImportFrom, ast.For, ast.While, ast.If, ast.With, ast.Try,
)


@dataclass
class Extracted:
    code: str
    explanation: str  # the prose before the code (a repair reply's explanation), cleaned
    fenced: bool


def extract_code(reply: str) -> Extracted:
    """Return the program in ``reply``; raise NoCodeError with the reason when there is none."""
    for match in _FENCE.finditer(reply):
        tag, body = match.group(1).lower(), match.group(2)
        if tag in _PYTHON_TAGS and body.strip():
            code = _finish(body)
            return Extracted(code, clean_explanation(reply[: match.start()]), fenced=True)
    bare = _bare_program(reply)
    if bare is not None:
        return Extracted(_finish(bare), "", fenced=False)
    if not reply.strip():
        raise NoCodeError("The model returned an empty reply.")
    raise NoCodeError("The model's reply contains no Python code: " + _snippet(reply))


def clean_explanation(text: str) -> str:
    """The explanation without its label and without a lead-in to the code ("Here is the fix:")."""
    text = text.strip()
    text = re.sub(r"^\**\s*explanation\s*:?\**\s*:?\s*", "", text, flags=re.IGNORECASE)
    sentences = re.split(r"(?<=[.!?:])\s+", text.strip())
    while len(sentences) > 1 and sentences[-1].rstrip().endswith(":"):
        sentences.pop()
    return " ".join(sentences).strip()


def _finish(code: str) -> str:
    """Dedent, trim, and call a PAL-style ``solution()`` that is defined but never used."""
    lines = code.strip("\n").splitlines()
    indent = min((len(l) - len(l.lstrip()) for l in lines if l.strip()), default=0)
    code = "\n".join(l[indent:] for l in lines).rstrip()
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return code  # let the interpreter report it: that is feedback the model can learn from
    defines = any(isinstance(n, ast.FunctionDef) and n.name == "solution" for n in tree.body)
    calls = any(isinstance(n, ast.Call) and getattr(n.func, "id", None) == "solution" for n in ast.walk(tree))
    if defines and not calls:
        code += "\n\nprint(solution())"
    return code


def _is_program(text: str) -> bool:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    return any(
        isinstance(node, _MEANINGFUL) or (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call))
        for node in tree.body
    )


def _bare_program(reply: str) -> str | None:
    """The longest run of whole lines that parses as a program (prose lines dropped around it)."""
    lines = reply.strip().splitlines()
    if len(lines) > 80:  # brute force is quadratic; long prose replies are not bare code
        lines = lines[:80]
    for length in range(len(lines), 0, -1):
        for start in range(0, len(lines) - length + 1):
            candidate = "\n".join(lines[start : start + length])
            if candidate.strip() and _is_program(candidate):
                return candidate
    return None


def _snippet(text: str, limit: int = 120) -> str:
    flat = " ".join(text.split())
    return repr(flat[:limit] + ("..." if len(flat) > limit else ""))


def free_names(code: str) -> set[str]:
    """Names a program reads without defining them (the ones it expects to exist already)."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return set()
    loaded, stored = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (loaded if isinstance(node.ctx, ast.Load) else stored).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            stored.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            stored.update((a.asname or a.name).split(".")[0] for a in node.names)
    return loaded - stored - set(dir(builtins))


@dataclass
class Replacement:
    """A program binding a name the user handed over to something not derived from it."""

    name: str
    lineno: int
    line: str


def replaced_variables(code: str, names: set[str] | frozenset[str]) -> list[Replacement]:
    """Where ``code`` rebinds one of ``names`` to a value that does not use it.

    Small models, given a DataFrame ``sales``, sometimes start with ``sales = pd.DataFrame({...})``
    ("# Sample data") and answer a question about invented numbers. ``sales = sales.dropna()``
    is fine (it derives from the real data); ``sales = pd.DataFrame(...)``, ``sales =
    pd.read_csv(...)``, ``for sales in ...`` and ``def sales(...)`` are not.
    """
    if not names:
        return []
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []
    lines = code.splitlines()
    found: list[Replacement] = []

    def report(name: str, node: ast.AST) -> None:
        lineno = getattr(node, "lineno", 0)
        text = lines[lineno - 1].strip() if 0 < lineno <= len(lines) else ""
        found.append(Replacement(name, lineno, text))

    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.NamedExpr)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            value_names = _names_read(node.value) if node.value is not None else set()
            for name in _bound_names(targets) & names:
                if name not in value_names:
                    report(name, node)
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            for name in _bound_names([node.target]) & names:
                report(name, node.iter if isinstance(node, ast.comprehension) else node)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                if item.optional_vars is not None:
                    for name in _bound_names([item.optional_vars]) & names:
                        report(name, node)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name in names:
            report(node.name, node)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                bound = (alias.asname or alias.name).split(".")[0]
                if bound in names:
                    report(bound, node)
    return sorted(found, key=lambda r: r.lineno)


_OPENING_FENCE = re.compile(r"^[ \t]*```[ \t]*(?:python3?|py|ipython3?)?[ \t]*\n", re.MULTILINE | re.IGNORECASE)
_ASSIGNMENT = re.compile(r"^[ \t]*([A-Za-z_]\w*)[ \t]*(?::[^=\n]*)?=(?!=)(.*)$")


def replacement_started(reply: str, names: set[str] | frozenset[str]) -> Replacement | None:
    """The line where a program being written starts replacing one of ``names``, if it has.

    Made for a reply that is still streaming: only finished lines of the first code block are read,
    one at a time (a statement may not be complete yet, so nothing is parsed as a whole). A line
    ``sales = <anything that does not read sales>``, e.g. ``sales = pd.DataFrame({``, starts invented
    data; the model can be stopped right there instead of writing the whole table.
    :func:`replaced_variables` stays the full check of a finished program.
    """
    if not names:
        return None
    fence = _OPENING_FENCE.search(reply)
    if fence is None:
        return None
    body = reply[fence.end():]
    finished = body[: body.rfind("\n") + 1] if "\n" in body else ""
    for lineno, line in enumerate(finished.splitlines(), start=1):
        if line.strip().startswith("```"):
            return None  # the block has ended
        match = _ASSIGNMENT.match(line)
        if match and match.group(1) in names and not re.search(rf"\b{match.group(1)}\b", match.group(2)):
            return Replacement(match.group(1), lineno, line.strip())
    return None


def _bound_names(targets: list[ast.expr]) -> set[str]:
    """Plain names bound by assignment targets (``a``, ``a, b``, ``[a, *b]``; not ``a[0]`` or ``a.x``)."""
    bound: set[str] = set()
    for target in targets:
        if isinstance(target, ast.Name):
            bound.add(target.id)
        elif isinstance(target, (ast.Tuple, ast.List)):
            bound |= _bound_names(list(target.elts))
        elif isinstance(target, ast.Starred):
            bound |= _bound_names([target.value])
    return bound


def _names_read(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
