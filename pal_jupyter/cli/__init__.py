"""The ``pal-jupyter`` command: ask, bench, leti, models, report."""

from .main import main

__all__ = ["main"]
