"""Child kernels: each generated program runs in a fresh, resource-limited IPython kernel.

``results`` (what a run produced) <- ``tracebacks`` (cleaning IPython's) <- ``executor``
(:class:`ChildKernel`, :class:`KernelPool`). ``launcher`` is the kernel process's entry point.
"""

from .executor import ChildKernel, ExecutorLimits, KernelPool
from .results import ErrorInfo, ExecutionResult, StopReason

__all__ = ["ChildKernel", "ErrorInfo", "ExecutionResult", "ExecutorLimits", "KernelPool", "StopReason"]
