"""Whether the bubblewrap sandbox can run here: tests of it skip without it, and fail in CI."""

from __future__ import annotations

import os

import pytest

from pal_jupyter.kernels.sandbox import bubblewrap_problem


def require_sandbox() -> None:
    """Skip a sandbox test where bubblewrap cannot run, except in CI ($CI set), where that fails."""
    problem = bubblewrap_problem()
    if problem is None:
        return
    if os.environ.get("CI"):
        pytest.fail(f"{problem} (CI is set: `make test` installs bubblewrap, so this fails instead of skipping)")
    pytest.skip(problem)
