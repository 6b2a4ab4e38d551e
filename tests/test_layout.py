"""The package's architecture, checked: every import points down a layer, and nothing imports in a circle.

    errors, streaming
    backends, kernels
    prompts
    engine
    classroom, evaluation, training
    notebook, cli

A module may import from its own package or from a lower layer (lazy imports inside functions
count too). ``pal_jupyter/__init__.py`` is the public API and may name anything.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "pal_jupyter"
LAYERS = {"errors": 0, "streaming": 0, "backends": 1, "kernels": 1, "prompts": 2, "engine": 3, "classroom": 4,
          "evaluation": 4, "training": 4, "notebook": 5, "cli": 5}


def modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def imports_of(name: str, path: Path) -> set[str]:
    """The pal_jupyter modules ``name`` imports (resolved to module names)."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    known = modules()
    targets = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if module.startswith("pal_jupyter"):
                submodules = {f"{module}.{alias.name}" for alias in node.names}  # "from . import prompts"
                # "from .. import prompts" imports the prompts package, not the public API's names
                targets.update(submodules if submodules <= set(known) else submodules | {module})
        elif isinstance(node, ast.Import):
            targets.update(a.name for a in node.names if a.name.startswith("pal_jupyter"))
    return {t for t in targets if t in known and t != name}


def unit(module: str) -> str:
    """The package a module belongs to, for layering ('engine', 'errors', ...)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "pal_jupyter"


def test_every_module_is_in_a_layer():
    assert {unit(m) for m in modules()} - {"pal_jupyter"} <= set(LAYERS), sorted({unit(m) for m in modules()})


def test_imports_point_down_the_layers():
    upward = []
    for name, path in modules().items():
        if unit(name) == "pal_jupyter":
            continue
        for target in imports_of(name, path):
            here, there = unit(name), unit(target)
            if there == "pal_jupyter" or (there != here and LAYERS[there] >= LAYERS[here]):
                upward.append(f"{name} -> {target}")
    assert upward == []


def test_no_module_imports_itself_through_others():
    graph = {name: imports_of(name, path) for name, path in modules().items() if unit(name) != "pal_jupyter"}
    # A package's __init__ re-exporting its modules is not a cycle of the modules themselves.
    graph = {name: {t for t in targets if not (t == name.rsplit(".", 1)[0])} for name, targets in graph.items()}
    cycles = []

    def visit(node: str, trail: list[str]) -> None:
        for target in graph.get(node, ()):
            if target in trail:
                cycles.append(" -> ".join(trail[trail.index(target):] + [target]))
            elif len(trail) < 30:
                visit(target, trail + [target])

    for start in graph:
        visit(start, [start])
    assert cycles == []
