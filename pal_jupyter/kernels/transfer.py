"""Handing the user's variables to a program's kernel: pickled here, one by one (so a failure
names the variable), written to a file in the kernel's runtime folder (read-only in a sandbox),
loaded by a silent cell before the program runs, and deleted here before it runs.
"""

from __future__ import annotations

import keyword
from collections.abc import Mapping
from typing import Any

import cloudpickle

from ..errors import VariableError

VARIABLES_FILE = ".pal-variables.pkl"


def load_variables_code(path: str) -> str:
    """Silent execute that loads pickled variables into the program's globals."""
    return (
        "def __pal_load(path):\n"
        "    import pickle\n"
        "    with open(path, 'rb') as f:\n"
        "        blobs = pickle.load(f)\n"
        "    bad = []\n"
        "    for name, blob in blobs.items():\n"
        "        try:\n"
        "            globals()[name] = pickle.loads(blob)\n"
        "        except Exception as e:\n"
        "            bad.append(f'{name!r} ({type(e).__name__}: {e})')\n"
        "    if bad:\n"
        "        raise RuntimeError(', '.join(bad))\n"
        "try:\n"
        f"    __pal_load({path!r})\n"
        "finally:\n"
        "    del __pal_load\n"
    )


def pickling_problem(value: Any) -> str | None:
    """Why ``value`` cannot be copied into a program's kernel ('TypeError: ...'), or None."""
    try:
        cloudpickle.dumps(value)
    except Exception as exc:  # TypeError, PicklingError, RecursionError, ...
        return f"{type(exc).__name__}: {exc}"
    return None


def pickle_variables(variables: Mapping[str, Any]) -> dict[str, bytes]:
    """cloudpickle each variable on its own so a failure names the variable."""
    blobs: dict[str, bytes] = {}
    for name, value in variables.items():
        if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
            raise VariableError(f"Variable name {name!r} is not a valid Python identifier.")
        problem = pickling_problem(value)
        if problem is not None:
            raise VariableError(
                f"Variable {name!r} ({type(value).__name__}) cannot be sent to the program's "
                f"kernel: it cannot be pickled ({problem})."
            )
        blobs[name] = cloudpickle.dumps(value)
    return blobs
