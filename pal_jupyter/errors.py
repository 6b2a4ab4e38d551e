"""User-facing errors.

Every error a user can provoke by ordinary use (an empty question, a model that is not
installed, a model that writes no code, a kernel that cannot start) is a :class:`PalError`.
Front ends (CLI, magic) print ``str(error)`` without a traceback: the message itself must
say what went wrong and what to do about it.
"""

from __future__ import annotations


class PalError(Exception):
    """Base class for errors whose message is meant for the user, not for a debugger."""


class EmptyQuestionError(PalError, ValueError):
    """The question was empty or only whitespace."""

    def __init__(self) -> None:
        super().__init__(
            "The question is empty: write a question in plain words, for example "
            "'If a train travels 60 mph for 2.5 hours, how far does it go?'"
        )


class ModelLoadError(PalError):
    """A model could not be found, assembled, or loaded."""


class ModelServerError(ModelLoadError):
    """A model server (openai:MODEL@URL) is down, busy, slow, refused the key or cut a reply off."""


class NoCodeError(PalError):
    """The model's reply contained no Python code."""


class KernelError(PalError):
    """A child kernel could not be started or talked to."""


class SettingError(PalError, ValueError):
    """A setting has a value it cannot take (the message names it and what it can be)."""


class VariableError(PalError, ValueError):
    """A variable cannot be handed to a program (not an identifier, cannot be pickled or unpickled)."""


# ---------------------------------------------------------------- classroom: teacher policy


class PolicyError(PalError):
    """A notebook tried to change a setting that the teacher's policy locks, or to set a bad value."""


def unexpected_error_message(error: BaseException) -> str:
    """One line for an error nobody expected, naming the file that keeps its full traceback."""
    import os
    import tempfile
    import traceback

    text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    try:
        handle, path = tempfile.mkstemp(prefix="pal-jupyter-error-", suffix=".txt")
        with os.fdopen(handle, "w", encoding="utf-8", errors="replace") as file:
            file.write(text)
        where = f"the full traceback is in {path}"
    except OSError:
        where = "the traceback could not be saved"
    detail = str(error).strip().splitlines()[0][:200] if str(error).strip() else ""
    return (f"pal-jupyter hit an unexpected error ({type(error).__name__}{': ' + detail if detail else ''}); "
            f"{where}. Please report it.")
