"""Which of the user's variables a question gets: named with ``--use``, named in the question,
or used by a program without being named."""

from __future__ import annotations

import logging
import re
import types
from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import PalError
from ..kernels import pickling_problem

log = logging.getLogger(__name__)

# Values worth copying into the child kernel when a question or a program names them.
_NOT_DATA = (types.ModuleType, types.FunctionType, types.BuiltinFunctionType, type, types.MethodType)


def is_data(value: Any) -> bool:
    return not isinstance(value, _NOT_DATA) and not callable(value)


def user_data_names(text: str, namespace: Mapping[str, Any]) -> list[str]:
    """Public data variables of ``namespace`` that ``text`` mentions as whole words."""
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text))
    return sorted(n for n in words if n in namespace and not n.startswith("_") and is_data(namespace[n]))


def named_variables(use: Iterable[str], namespace: Mapping[str, Any]) -> dict[str, Any]:
    """The variables of ``--use a,b --use c``; PalError when one is missing or cannot be copied."""
    names = [n.strip() for group in use for n in group.split(",") if n.strip()]
    missing = [n for n in names if n not in namespace]
    if missing:
        raise PalError(f"--use names variables that do not exist in your notebook: {', '.join(missing)}. "
                       "Run the cell that defines them first, or check the spelling.")
    for name in names:
        problem = pickling_problem(namespace[name])
        if problem is not None:
            raise PalError(f"The variable {name!r} ({type(namespace[name]).__name__}) cannot be copied into the "
                           f"program's kernel: {problem}. Pass a plain copy instead, e.g. a DataFrame or a list.")
    return {n: namespace[n] for n in names}


def mentioned_variables(question: str, namespace: Mapping[str, Any]) -> dict[str, Any]:
    """Variables the question names and that can be copied (the others are left out quietly)."""
    mentioned = {}
    for name in user_data_names(question, namespace):
        if pickling_problem(namespace[name]) is None:
            mentioned[name] = namespace[name]
        else:
            log.info("%s is named in the question but cannot be copied; leaving it out", name)
    return mentioned


def data_namespace(namespace: Mapping[str, Any], hidden: Iterable[str], exclude: Iterable[str]) -> dict[str, Any]:
    """The user's public data variables: copied in only when a program reads them."""
    skip = set(hidden) | set(exclude)
    return {n: v for n, v in namespace.items() if not n.startswith("_") and n not in skip and is_data(v)}
