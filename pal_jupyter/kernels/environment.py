"""The environment of a program's kernel: an allow-list, at every isolation level.

A notebook server's environment often holds tokens and keys (``OPENAI_API_KEY``,
``JUPYTERHUB_API_TOKEN``, cloud credentials); none of it is a program's business. A kernel
starts from the allow-listed variables only (locale, ``PATH``, thread counts, the Python
path), plus what pal-jupyter itself sets for it.
"""

from __future__ import annotations

from collections.abc import Mapping

ALLOWED_ENVIRONMENT = frozenset({
    "PATH", "LANG", "LANGUAGE", "TZ", "TERM", "PYTHONPATH", "PYTHONUNBUFFERED", "PYTHONHASHSEED",
    "PYTHONIOENCODING", "MPLBACKEND", "CUDA_VISIBLE_DEVICES", "MALLOC_ARENA_MAX", "OMP_NUM_THREADS",
    "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "PAL_JUPYTER_CHILD_KERNEL", "VIRTUAL_ENV",
})


def allowed_environment(env: Mapping[str, str]) -> dict[str, str]:
    """The allow-listed part of ``env`` (``LC_*`` locale variables included)."""
    return {k: v for k, v in env.items() if k in ALLOWED_ENVIRONMENT or k.startswith("LC_")}
