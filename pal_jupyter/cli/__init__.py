"""The ``pal-jupyter`` command: ask, bench, collect, train, compare, leti, models, doctor, report, serve."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    """The console script. Importing the commands takes a moment (torch, jupyter_client): a Ctrl-C
    then is the same one line and exit 130 as a Ctrl-C later, not a traceback through importlib."""
    try:
        from .commands import main as run
    except KeyboardInterrupt:
        print("pal-jupyter: interrupted", file=sys.stderr)
        return 130
    return run(argv)


__all__ = ["main"]
