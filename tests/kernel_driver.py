"""Drive a real IPython kernel over jupyter_client the way a notebook frontend does."""

from __future__ import annotations

import os
import textwrap
from typing import Any

import psutil
from jupyter_client import KernelManager


class UserKernel:
    """A user's kernel and a client: run code, collect outputs and the execute reply."""

    def __init__(self, env: dict[str, str] | None = None, arguments: list[str] | None = None):
        self.km = KernelManager(kernel_name="python3", transport="ipc")
        self.km.start_kernel(env={**os.environ, "PAL_JUPYTER_TRACE": "/dev/null", **(env or {})},
                             extra_arguments=arguments or [])  # e.g. --PalMagics.seed=0, as a kernel spec passes
        self.kc = self.km.blocking_client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=60)
        self.comm_messages: list[dict[str, Any]] = []  # comm_open / comm_msg the kernel sent

    def run(self, code, timeout=120, cell_id: str | None = None):
        """Execute ``code`` as a notebook cell (``cell_id``: the cell's id, as JupyterLab sends it)."""
        content = {"code": textwrap.dedent(code), "silent": False, "store_history": True,
                   "user_expressions": {}, "allow_stdin": False, "stop_on_error": True}
        request = self.kc.session.msg("execute_request", content, metadata={"cellId": cell_id} if cell_id else {})
        self.kc.shell_channel.send(request)
        msg_id = request["header"]["msg_id"]
        outputs = []
        while True:
            msg = self.kc.get_iopub_msg(timeout=timeout)
            if msg["msg_type"] in ("comm_open", "comm_msg"):
                self.comm_messages.append(msg["content"])
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            kind, content = msg["msg_type"], msg["content"]
            if kind == "status" and content["execution_state"] == "idle":
                break
            if kind in ("stream", "display_data", "execute_result", "error", "update_display_data"):
                outputs.append({"output_type": kind, **content})
        while True:  # replies to earlier requests (a comm's) may come first
            reply = self.kc.get_shell_msg(timeout=timeout)
            if reply["parent_header"].get("msg_id") == msg_id:
                return reply["content"], outputs

    def answer_hello(self, frontend: str = "test-frontend") -> None:
        """Answer the extension's hello on its comm, as the JupyterLab extension does."""
        opened = next(c for c in self.comm_messages if c.get("target_name") == "pal_jupyter")
        reply = {"comm_id": opened["comm_id"], "data": {"action": "hello", "frontend": frontend, "version": "0.1.0"}}
        self.kc.shell_channel.send(self.kc.session.msg("comm_msg", reply))

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


