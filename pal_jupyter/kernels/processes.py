"""Process trees from ``/proc``: who started whom, and ending everything below a process.

Standard library only: the kernel's launcher imports this before ipykernel exists, and the
parent (:class:`.kernel.ChildKernel`) uses the same walk when it shuts a kernel down. Linux;
elsewhere nothing is found.
"""

from __future__ import annotations

import os
import signal
import time


def children_by_parent() -> dict[int, list[int]]:
    """Every process's children, from /proc."""
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return children
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read().decode(errors="replace")
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])  # the command may hold spaces and ")"
        children.setdefault(ppid, []).append(int(entry))
    return children


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (not ``pid`` itself)."""
    children = children_by_parent()
    found, todo = [], list(children.get(pid, []))
    while todo:
        child = todo.pop()
        found.append(child)
        todo.extend(children.get(child, []))
    return found


def kill_descendants(pid: int | None, rounds: int = 5) -> None:
    """SIGKILL every descendant of ``pid`` (not ``pid`` itself), again while new ones appear
    (a fork bomb keeps forking while it is being killed)."""
    if not pid:
        return
    for _ in range(rounds):
        found = descendants(pid)
        if not found:
            return
        for child in found:
            try:
                os.kill(child, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.02)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True
