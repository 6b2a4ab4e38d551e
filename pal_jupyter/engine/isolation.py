"""Which isolation the programs get, said to the user when it is less than they would expect.

``auto`` (the default) runs programs in the bubblewrap sandbox where it works and as plain child
processes elsewhere (:mod:`pal_jupyter.kernels.sandbox`). That fallback must not be silent: the CLI
and the notebook both say it, in the one line :func:`fallback_note` writes, and ``pal-jupyter
doctor`` reports it. Choosing ``process`` explicitly is the user's decision and is not warned about;
requiring ``sandbox`` where it cannot run is an error, never a fallback.
"""

from __future__ import annotations

from ..kernels.sandbox import bubblewrap_problem, check_level

# The short form of kernels.sandbox.INSTALL_HINT: one line in a terminal or above a widget.
SANDBOX_HOWTO = ("install bubblewrap (sudo apt-get install bubblewrap) and allow unprivileged user namespaces "
                 "(see docs/sandbox.md), or choose isolation 'process' to accept plain processes")


def sandbox_fallback(level: str) -> str | None:
    """Why programs of isolation ``level`` run as plain processes although a sandbox was wanted: the
    reason when ``auto`` found no working bubblewrap; None when the sandbox runs, when ``process``
    was chosen, or for ``sandbox`` (which fails instead of falling back)."""
    return bubblewrap_problem() if check_level(level) == "auto" else None


def fallback_note(level: str) -> str | None:
    """The one line (lower-case start, for the caller to prefix) that says programs run without the
    sandbox ``auto`` wanted, why, and how to get it; None when there is nothing to say."""
    problem = sandbox_fallback(level)
    if problem is None:
        return None
    return f"programs run as plain processes (no sandbox) because {problem}; to get the sandbox, {SANDBOX_HOWTO}."
