"""Helpers for browser tests: a throwaway Jupyter server and notebooks driven in a real page.

The fixtures in conftest.py use the server part; tests use the notebook part directly:

    from jupyter_browser import Notebook, write_notebook

    write_notebook(jupyter_server.root_dir, "a.ipynb", ["x = 1", "print(x)"])
    nb = Notebook(jupyter_server, page, "a.ipynb", frontend="notebook").open()  # or "lab"
    nb.run_cell(1)
    nb.wait_for_output(1, r"^1$")
    saved = nb.save_and_read(until=lambda n: bool(n.cells[1].outputs))

Cells are run by keyboard and effects awaited on the page or on disk, never by awaiting a
"run cell" command. The server exposes the app as `window.jupyterapp` (off by default), used
to know when the kernel connection is ready and, in `notebook_json`, to read the live model;
what a user would keep is checked in the file saved with Ctrl+S.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat
import psutil
import pytest


ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
SERVER_START_TIMEOUT_S = 90
KERNEL_TIMEOUT_MS = 60_000  # a cold kernel on a busy 2-core machine
UI_TIMEOUT_MS = 30_000
MOD = "Meta" if sys.platform == "darwin" else "Control"

# JupyterLab asks whether to fetch news and check for updates; both would reach the network
# and their toasts can cover the notebook.
USER_SETTINGS = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false",
        "checkForUpdates": False,
    },
}

# --------------------------------------------------------------------------- server


@dataclass
class JupyterServer:
    """A running `jupyter lab` process (which also serves Notebook 7 pages at /notebooks/)."""

    base_url: str  # ends with "/"
    token: str
    root_dir: Path
    log_path: Path
    process: subprocess.Popen[bytes] = field(repr=False)

    def url(self, path: str) -> str:
        """A page or API URL with the token, e.g. url("lab/tree/a.ipynb")."""
        sep = "&" if "?" in path else "?"
        return f"{self.base_url}{path.lstrip('/')}{sep}token={self.token}"

    def api(self, path: str, method: str = "GET", body: Any = None, timeout: float = 30) -> Any:
        """Calls the REST API (path like "api/sessions") and returns the decoded JSON, if any."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            self.url(path),
            data=data,
            method=method,
            headers={"Authorization": f"token {self.token}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=timeout) as response:
            payload = response.read()
        return json.loads(payload) if payload else None

    def kernel_id(self, notebook_name: str) -> str:
        """The id of the kernel of the session the frontend opened for a notebook."""
        for session in self.api("api/sessions"):
            if session.get("path") == notebook_name:
                return session["kernel"]["id"]
        raise LookupError(f"no session for {notebook_name}")

    def log_tail(self, chars: int = 4000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _write_user_settings(settings_dir: Path) -> None:
    for name, values in USER_SETTINGS.items():
        target = settings_dir / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(values))


def _stop_process_tree(process: subprocess.Popen[bytes], grace_s: float = 15) -> None:
    """SIGTERM lets the server shut its kernels down; then kill whatever is left.

    Kernels run in sessions of their own (jupyter_client starts them so), so killing the
    server's process group alone would leave them behind: collect the tree first.
    """
    try:
        tree = psutil.Process(process.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        tree = []
    try:
        os.killpg(process.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    try:
        process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
    _, alive = psutil.wait_procs(tree, timeout=5)
    for proc in alive:
        try:
            proc.kill()
        except psutil.NoSuchProcess:
            pass

def start_jupyter_server(base: Path) -> JupyterServer:
    """Starts `python -m jupyter lab` with everything under `base`; waits for its HTTP API.

    Stop it with `stop_jupyter_server`. It also serves Notebook 7 pages (/notebooks/NAME).
    """
    root_dir = base / "root"
    config_dir = base / "config"  # also holds the default lab/user-settings of Notebook 7
    settings_dir = config_dir / "lab" / "user-settings"
    workspaces_dir = base / "workspaces"
    for folder in (root_dir, config_dir, workspaces_dir, base / "data", base / "runtime", base / "ipython"):
        folder.mkdir(parents=True, exist_ok=True)
    _write_user_settings(settings_dir)

    port = _free_port()
    token = secrets.token_hex(16)
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(config_dir),
        "JUPYTER_DATA_DIR": str(base / "data"),  # sys.prefix/share/jupyter is still searched
        "JUPYTER_RUNTIME_DIR": str(base / "runtime"),
        "IPYTHONDIR": str(base / "ipython"),
        "HF_HUB_OFFLINE": "1",
        "CUDA_VISIBLE_DEVICES": "",
    }
    env.pop("JUPYTER_PATH", None)
    command = [
        sys.executable, "-m", "jupyter", "lab",
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root_dir}",
        "--ServerApp.terminals_enabled=False",
        f"--LabApp.workspaces_dir={workspaces_dir}",
        f"--LabApp.user_settings_dir={settings_dir}",
        "--LabApp.extension_manager=readonly",  # the "pypi" one would query PyPI
        # window.jupyterapp, to tell when the page's kernel connection is ready (see Notebook).
        "--LabApp.expose_app_in_browser=True",
        "--JupyterNotebookApp.expose_app_in_browser=True",
    ]  # fmt: skip
    if os.geteuid() == 0:  # containers and CI runners
        command.append("--allow-root")
    log_path = base / "server.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            command, cwd=root_dir, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    server = JupyterServer(f"http://127.0.0.1:{port}/", token, root_dir, log_path, process)
    try:
        _wait_for_api(server)
    except BaseException:
        stop_jupyter_server(server)
        raise
    return server


def stop_jupyter_server(server: JupyterServer) -> None:
    _stop_process_tree(server.process)


def _wait_for_api(server: JupyterServer) -> None:
    deadline = time.monotonic() + SERVER_START_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"jupyter lab exited with {server.process.returncode}:\n{server.log_tail()}")
        try:
            server.api("api/status", timeout=5)
            return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.3)
    raise TimeoutError(f"jupyter lab did not answer within {SERVER_START_TIMEOUT_S} s:\n{server.log_tail()}")


def artifact_name(request: pytest.FixtureRequest, suffix: str) -> Path:
    """test-artifacts/<test name, parameters included>-<suffix>.png"""
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name).strip("_")
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS / f"{name}-{suffix}.png"


# --------------------------------------------------------------------------- notebooks


def write_notebook(root_dir: Path, name: str, sources: list[str]) -> Path:
    """Writes a notebook of code cells (with the python3 kernelspec, so no kernel dialog)."""
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in sources]
    path = root_dir / name
    nbformat.write(notebook, path)
    return path


# JS: the notebook panel of file `path` in the main area (JupyterLab's tabs, or Notebook 7's
# only one), else undefined. Needs the server's expose_app_in_browser setting.
_PANEL_JS = """(path) => {
  const shell = window.jupyterapp?.shell;
  return shell ? [...shell.widgets('main')].find(w => w.context?.path === path) : undefined;
}"""


@dataclass
class Notebook:
    """One notebook file opened in a page of JupyterLab ("lab") or Notebook 7 ("notebook")."""

    server: JupyterServer
    page: Any
    name: str
    frontend: str = "lab"

    @property
    def path(self) -> Path:
        return self.server.root_dir / self.name

    @property
    def cells(self) -> Any:
        """Locator of the cells of this notebook (the visible notebook panel only)."""
        return self.page.locator(".jp-NotebookPanel:visible .jp-Notebook .jp-Cell")

    def open(self) -> Notebook:
        # A workspace of its own, so JupyterLab does not also reopen earlier tests' notebooks.
        workspace = re.sub(r"[^A-Za-z0-9-]+", "-", self.name) + "-" + secrets.token_hex(3)
        route = f"lab/workspaces/{workspace}/tree/{self.name}" if self.frontend == "lab" else f"notebooks/{self.name}"
        self.page.goto(self.server.url(route))
        self.cells.first.wait_for(state="visible", timeout=KERNEL_TIMEOUT_MS)
        self.wait_for_kernel_idle()
        return self

    def wait_for_kernel_idle(self, timeout_ms: int = KERNEL_TIMEOUT_MS) -> None:
        """Waits until the page's own kernel connection is connected and idle.

        The toolbar's execution indicator is no good for this: JupyterLab shows "idle" there
        before the kernel connection exists, and a cell run then is silently dropped.
        """
        self.page.wait_for_function(
            f"(path) => {{ const k = ({_PANEL_JS})(path)?.sessionContext?.session?.kernel; "
            "return !!k && k.connectionStatus === 'connected' && k.status === 'idle'; }",
            arg=self.name,
            timeout=timeout_ms,
        )

    def notebook_json(self) -> dict[str, Any]:
        """The notebook as the page's model holds it now (nbformat JSON; nothing saved)."""
        return self.page.evaluate(f"(path) => ({_PANEL_JS})(path).content.model.sharedModel.toJSON()", self.name)

    def run_cell(self, index: int) -> None:
        """Runs one cell by keyboard (Ctrl+Enter: run and stay, so no new cell is added at the end).

        Returns once the keystroke is sent; wait for the effect (outputs, file) separately.
        """
        cell = self.cells.nth(index)
        cell.locator(".jp-InputArea-editor").click()
        self.page.keyboard.press(f"{MOD}+Enter")

    def output_text(self, index: int) -> str:
        return self.cells.nth(index).locator(".jp-OutputArea").inner_text()

    def wait_for_output(self, index: int, pattern: str, timeout_ms: int = KERNEL_TIMEOUT_MS) -> str:
        """Waits until cell `index` shows output matching the regular expression; returns it."""
        locator = self.cells.nth(index).locator(".jp-OutputArea-output")
        locator.filter(has_text=re.compile(pattern)).first.wait_for(timeout=timeout_ms)
        return self.output_text(index)

    def sources(self) -> list[str]:
        """The cells' sources as the page shows them."""
        return [text.replace("\u200b", "") for text in self.cells.locator(".jp-InputArea-editor .cm-content").all_inner_texts()]

    def wait_for_source(self, index: int, text: str, timeout_ms: int = UI_TIMEOUT_MS) -> None:
        """Waits until cell `index` shows exactly `text` as its source."""
        deadline = time.monotonic() + timeout_ms / 1000
        while True:
            sources = self.sources()
            if index < len(sources) and sources[index] == text:
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"cell {index} never showed {text!r}; the page shows {sources}")
            self.page.wait_for_timeout(100)

    def wait_for_cell_count(self, count: int, timeout_ms: int = UI_TIMEOUT_MS) -> None:
        deadline = time.monotonic() + timeout_ms / 1000
        while self.cells.count() != count:
            if time.monotonic() > deadline:
                raise TimeoutError(f"expected {count} cells, the page shows {self.cells.count()}")
            self.page.wait_for_timeout(100)

    def save_and_read(
        self,
        until: Callable[[nbformat.NotebookNode], bool] = lambda nb: True,
        timeout_ms: int = UI_TIMEOUT_MS,
    ) -> nbformat.NotebookNode:
        """Saves with Ctrl+S and reads the file back until `until(notebook)` holds.

        Focus goes to the notebook (command mode) first so that the keystroke reaches
        JupyterLab's shortcut, not the browser's "save page".
        """
        before = self.path.stat().st_mtime_ns
        self.cells.first.locator(".jp-InputPrompt").click()
        self.page.keyboard.press(f"{MOD}+s")
        deadline = time.monotonic() + timeout_ms / 1000
        last_error: Exception | None = None
        while time.monotonic() < deadline:
            try:
                if self.path.stat().st_mtime_ns != before:
                    notebook = nbformat.read(self.path, as_version=4)
                    if until(notebook):
                        return notebook
            except (OSError, ValueError) as error:  # caught mid-write
                last_error = error
            self.page.wait_for_timeout(150)
        raise TimeoutError(f"{self.path.name} on disk never matched after saving (last error: {last_error})")

    def restart_kernel(self) -> None:
        """Restarts the kernel from the page (as the menu does, without the dialog); waits for idle."""
        self.page.evaluate(
            f"async (path) => {{ await ({_PANEL_JS})(path).sessionContext.session.kernel.restart(); }}", self.name
        )
        self.wait_for_kernel_idle()

    def screenshot(self, request: pytest.FixtureRequest, suffix: str) -> Path:
        path = artifact_name(request, suffix)
        self.page.screenshot(path=str(path), full_page=True)
        return path


# ---------------------------------------------------------------------- %%pal notebooks


def setup_and_connect(nb: "Notebook", config_index: int = 1) -> None:
    """Run the setup cell, then `%pal_config`, which must report the extension as connected.

    The extension's hello reply reaches the kernel only once the setup cell has finished
    (comm replies travel on the shell channel), hence two cells.
    """
    nb.run_cell(0)
    nb.wait_for_output(0, r"setup done", timeout_ms=KERNEL_TIMEOUT_MS)
    nb.run_cell(config_index)
    text = nb.wait_for_output(config_index, r"JupyterLab extension:")
    assert re.search(r"JupyterLab extension: connected \(jupyterlab\)", text), text


def wait_until_idle(nb: "Notebook", index: int, timeout_ms: int) -> None:
    """The cell's prompt shows an execution count (not "[*]"): the magic has returned."""
    prompt = nb.cells.nth(index).locator(".jp-InputPrompt")
    deadline = time.monotonic() + timeout_ms / 1000
    while not re.search(r"\[\d+\]", prompt.inner_text()):
        assert time.monotonic() < deadline, f"cell {index} still running: {prompt.inner_text()!r}"
        nb.page.wait_for_timeout(150)


def shot(nb: "Notebook", request: Any, suffix: str, target: Any) -> None:
    """A screenshot with `target` scrolled into view (notebooks scroll inside their panel)."""
    target.scroll_into_view_if_needed()
    nb.screenshot(request, suffix)
