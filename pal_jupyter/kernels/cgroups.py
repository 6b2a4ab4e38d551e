"""A process cap for kernels started by root: a ``pids`` cgroup per kernel, where one can be made.

RLIMIT_NPROC stops a fork bomb of an ordinary user (in the sandbox it counts per user
namespace), but root is exempt from it. When pal-jupyter runs as root (containers, CI, some
hubs) and the cgroup ``pids`` controller is writable, each kernel gets a cgroup whose
``pids.max`` caps everything it and its programs start. Elsewhere nothing is made, and the pid
namespace and the timeout are what end a fork bomb.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable

V1_PIDS = "/sys/fs/cgroup/pids"
V2_ROOT = "/sys/fs/cgroup"
PARENT = "pal-jupyter"
_OWNED = re.compile(r"^k-(\d+)-")


def _base() -> str | None:
    """The writable pids hierarchy (cgroup v1 or v2), or None."""
    if os.path.isfile(os.path.join(V1_PIDS, "cgroup.procs")) and os.access(V1_PIDS, os.W_OK):
        return V1_PIDS
    controllers = os.path.join(V2_ROOT, "cgroup.controllers")
    try:
        if "pids" in open(controllers).read().split() and os.access(V2_ROOT, os.W_OK):
            return V2_ROOT
    except OSError:
        pass
    return None


def pids_cgroup(name: str, limit: int) -> str | None:
    """A new cgroup ``<base>/pal-jupyter/<name>`` capped at ``limit`` processes, or None (not root,
    no writable pids controller, or the kernel refused)."""
    if os.geteuid() != 0 or limit <= 0:
        return None
    base = _base()
    if base is None:
        return None
    parent = os.path.join(base, PARENT)
    path = os.path.join(parent, name)
    try:
        os.makedirs(parent, exist_ok=True)
        if base == V2_ROOT:  # v2: a child only gets the controller its parent hands down
            with open(os.path.join(parent, "cgroup.subtree_control"), "w") as handle:
                handle.write("+pids")
        os.mkdir(path)
        with open(os.path.join(path, "pids.max"), "w") as handle:
            handle.write(str(limit))
    except OSError:
        remove(path)
        return None
    return path


def join_command(path: str, argv: list[str]) -> list[str]:
    """``argv`` run by a shell that first moves itself into the cgroup (its children inherit it)."""
    return ["/bin/sh", "-c", f'echo $$ > "{path}/cgroup.procs" && exec "$@"', "pal-kernel", *argv]


def remove(path: str | None, attempts: int = 20) -> None:
    """Remove an (emptied) cgroup; the kernel may take a moment to let go of its last process."""
    if not path:
        return
    for _ in range(attempts):
        try:
            os.rmdir(path)
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.05)


def sweep(alive: Callable[[int], bool]) -> None:
    """Remove the cgroups of owners that are gone (``alive(pid)`` tells)."""
    base = _base()
    if base is None or os.geteuid() != 0:
        return
    parent = os.path.join(base, PARENT)
    try:
        names = os.listdir(parent)
    except OSError:
        return
    for name in names:
        match = _OWNED.match(name)
        if match and not alive(int(match.group(1))):
            remove(os.path.join(parent, name), attempts=1)
