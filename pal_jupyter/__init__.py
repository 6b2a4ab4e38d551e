"""pal-jupyter: program-aided tutoring in Jupyter.

A local model writes Python programs for a question, isolated child kernels run them, the answer
most of them agree on wins, and failures are explained and repaired from the interpreter's
feedback::

    from pal_jupyter import solve
    session = solve("If a train travels 60 mph for 2.5 hours, how far does it go?")
    print(session.answer, session.agreement)

The package is layered; each layer imports only from the ones below it:

    errors
    backends (models)        kernels (child kernels)
    prompts (every chat the model is sent)
    engine (programs, the vote, the repair loop)
    classroom (tutor, policy, class log, report)    benchmark
    notebook (magics, widgets, cells)                cli

The public names below are imported on first use, so that ``import pal_jupyter`` (which every
child kernel does to reach its launcher) stays cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

from .errors import EmptyQuestionError, KernelError, ModelLoadError, NoCodeError, PalError

__version__ = "0.1.0"

_PUBLIC = {
    "Program": "engine.records", "Session": "engine.records", "Vote": "engine.records",
    "PromptContext": "engine.records",
    "SolveObserver": "engine.loop", "solve": "engine.loop",
    "ChildKernel": "kernels", "ExecutorLimits": "kernels", "KernelPool": "kernels",
    "ErrorInfo": "kernels", "ExecutionResult": "kernels", "StopReason": "kernels",
    "GenerationOptions": "backends", "ModelBackend": "backends", "ScriptedBackend": "backends",
    "TransformersBackend": "backends", "load_model": "backends", "register_model": "backends",
}

__all__ = sorted([*_PUBLIC, "EmptyQuestionError", "KernelError", "ModelLoadError", "NoCodeError", "PalError"])


def __getattr__(name: str) -> Any:
    if name in _PUBLIC:
        value = getattr(importlib.import_module(f".{_PUBLIC[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_PUBLIC])


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext pal_jupyter``: register the magics, warm a kernel, greet the frontend."""
    from .notebook.magics import load_ipython_extension as load

    load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    """``%unload_ext pal_jupyter``: close child kernels and the frontend comm."""
    from .notebook.magics import unload_ipython_extension as unload

    unload(ipython)
