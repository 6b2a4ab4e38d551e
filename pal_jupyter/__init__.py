"""pal-jupyter: program-aided tutoring in Jupyter.

A local model writes a Python program for a question, an isolated child kernel runs it, and
failures are explained and repaired from the interpreter's feedback::

    from pal_jupyter import solve
    session = solve("If a train travels 60 mph for 2.5 hours, how far does it go?")
    print(session.answer)
"""

from __future__ import annotations

from .errors import EmptyQuestionError, KernelError, ModelLoadError, NoCodeError, PalError
from .executor import ChildKernel, ExecutorLimits, KernelPool
from .loop import SolveObserver, solve
from .model import GenerationOptions, ModelBackend, ScriptedBackend, TransformersBackend, load_model, register_model
from .records import Attempt, ErrorInfo, ExecutionResult, Session, StopReason

__version__ = "0.1.0"

__all__ = [
    "Attempt", "ChildKernel", "EmptyQuestionError", "ErrorInfo", "ExecutionResult", "ExecutorLimits",
    "GenerationOptions", "KernelError", "KernelPool", "ModelBackend", "ModelLoadError", "NoCodeError",
    "PalError", "ScriptedBackend", "Session", "SolveObserver", "StopReason", "TransformersBackend",
    "load_model", "register_model", "solve",
]


def load_ipython_extension(ipython):  # noqa: ANN001 - IPython's extension hook
    """``%load_ext pal_jupyter``: register the magics, warm a kernel, greet the frontend."""
    from .magic import load_ipython_extension as load

    load(ipython)


def unload_ipython_extension(ipython):  # noqa: ANN001
    """``%unload_ext pal_jupyter``: close child kernels and the frontend comm."""
    from .magic import unload_ipython_extension as unload

    unload(ipython)
