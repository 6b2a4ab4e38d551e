"""The ``pal-jupyter`` command: ask, bench, leti, models, report."""

from .commands import main

__all__ = ["main"]
