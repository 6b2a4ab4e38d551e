"""Command-line style option types shared by the ``pal-jupyter`` CLI and the ``%%pal`` magic.

Both build their arguments with :mod:`argparse` (IPython's ``magic_arguments`` is argparse
underneath), so a type function here gives the same one-line message in both places.
"""

from __future__ import annotations

import argparse

from .loop import DEFAULT_SAMPLES, MAX_SAMPLES, check_samples


def samples_argument(text: str) -> int:
    """``--samples``: programs per attempt, 1 to MAX_SAMPLES."""
    try:
        return check_samples(int(text))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a whole number from 1 to {MAX_SAMPLES} (programs written and run per attempt; "
            f"{DEFAULT_SAMPLES} is the default), not {text!r}"
        ) from None
