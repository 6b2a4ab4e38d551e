"""Drive a real IPython kernel over jupyter_client the way a notebook frontend does."""

from __future__ import annotations

import os
import textwrap
from typing import Any

import psutil
from jupyter_client import KernelManager


class UserKernel:
    """A user's kernel and a client: run code, collect outputs and the execute reply."""

    def __init__(self, env: dict[str, str] | None = None):
        self.km = KernelManager(kernel_name="python3", transport="ipc")
        self.km.start_kernel(env={**os.environ, "PAL_JUPYTER_TRACE": "/dev/null", **(env or {})})
        self.kc = self.km.blocking_client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=60)

    def run(self, code, timeout=120):
        msg_id = self.kc.execute(textwrap.dedent(code))
        outputs = []
        while True:
            msg = self.kc.get_iopub_msg(timeout=timeout)
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            kind, content = msg["msg_type"], msg["content"]
            if kind == "status" and content["execution_state"] == "idle":
                break
            if kind in ("stream", "display_data", "execute_result", "error", "update_display_data"):
                outputs.append({"output_type": kind, **content})
        reply = self.kc.get_shell_msg(timeout=timeout)
        return reply["content"], outputs

    def child_kernels(self):
        parent = psutil.Process(self.km.provisioner.process.pid)
        # A kernel is the launcher's keeper -> the kernel (in the sandbox below bwrap -> bwrap), all
        # with the launcher on their command line: count the keepers, one per kernel.
        def launcher(process: psutil.Process) -> bool:
            return "pal_jupyter.kernels.launcher" in " ".join(process.cmdline()) and process.name() != "bwrap"

        return [p for p in parent.children(recursive=True) if launcher(p) and not launcher(p.parent())]

    def close(self):
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)


def text_of(outputs: list[dict[str, Any]]) -> str:
    parts = []
    for out in outputs:
        parts.append(out.get("text", ""))
        parts.append(str(out.get("data", {}).get("text/plain", "")))
        parts.append(out.get("evalue", ""))
    return "\n".join(parts)


