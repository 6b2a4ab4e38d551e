"""Child kernels: each generated program runs in a fresh, resource-limited IPython kernel.

Layers, each importing only those before it: ``charts`` (what a program's figures draw, read
back by ``figure_reader``, which runs inside the kernel), ``results`` (what a run produced), ``tracebacks``
(IPython's made plain), ``processes``, ``environment``, ``cgroups``, ``sandbox`` (bubblewrap)
<- ``limits`` (:class:`ExecutorLimits`) <- ``command`` (the kernel's command and environment),
``transfer`` (variables in), ``outputs`` (what a program shows) <- ``kernel``
(:class:`ChildKernel`) <- ``pool`` (:class:`KernelPool`). ``launcher`` is the kernel process's
entry point.
"""

from .charts import Chart, Series
from .kernel import ChildKernel, close_thread_loop
from .limits import ExecutorLimits
from .pool import KernelPool, sweep_leftovers
from .results import ErrorInfo, ExecutionResult, StopReason
from .transfer import pickling_problem

__all__ = ["Chart", "ChildKernel", "ErrorInfo", "ExecutionResult", "ExecutorLimits", "KernelPool", "Series", "StopReason",
           "close_thread_loop", "pickling_problem", "sweep_leftovers"]
