"""`make lab` as a user runs it: JupyterLab on examples/, with the pal-jupyter labextension.

The venv is installed already (`make test`'s install is a lab install too), so the target only
finds its stamps fresh and starts the server: no network. The test adds what a user would type
after it in LAB_ARGS (a free port, a token, --no-browser) and keeps its settings, workspaces and
runtime files in a temporary folder, not in ~/.jupyter. Then it checks, in headless chromium, that
the extension's plugin is active (by its exact id) and that the file browser lists the example
notebooks, and that SIGTERM to make's process group stops the server on its own.
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
from pathlib import Path

import psutil
import pytest
from jupyter_browser import ROOT, USER_SETTINGS, JupyterServer, artifact_name

PLUGIN_ID = "pal-jupyter-labextension:plugin"  # labextension/src/index.ts
EXTENSION = "pal-jupyter-labextension"
EXTENSION_VERSION = json.loads((ROOT / "pal_jupyter" / "labextension" / "package.json").read_text())["version"]
EXAMPLES = ROOT / "examples"
# A fresh-stamp `make lab` answers in ~10 s here; a stale stamp means a pip install first.
START_TIMEOUT_S = 240
STOP_GRACE_S = 20


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def start_make_lab(base: Path) -> tuple[JupyterServer, int]:
    """`make lab LAB_ARGS=...` in the repository root, in a session of its own; waits for the API."""
    settings_dir = base / "user-settings"
    for name, values in USER_SETTINGS.items():  # no news or update checks (network, toasts)
        target = settings_dir / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(values))
    for folder in ("config", "data", "runtime", "ipython", "workspaces"):
        (base / folder).mkdir()
    port, token = free_port(), secrets.token_hex(16)
    lab_args = " ".join([
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--LabApp.workspaces_dir={base / 'workspaces'}",
        f"--LabApp.user_settings_dir={settings_dir}",
        "--LabApp.extension_manager=readonly",  # the "pypi" one would query PyPI
        "--LabApp.expose_app_in_browser=True",  # window.jupyterapp: its plugin registry
    ])  # fmt: skip
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(base / "config"),
        "JUPYTER_DATA_DIR": str(base / "data"),  # sys.prefix/share/jupyter is still searched
        "JUPYTER_RUNTIME_DIR": str(base / "runtime"),
        "IPYTHONDIR": str(base / "ipython"),
    }
    # A user's shell, not a sub-make of `make test` (whose jobserver descriptors do not travel).
    for name in ("JUPYTER_PATH", "MAKEFLAGS", "MFLAGS", "MAKELEVEL"):
        env.pop(name, None)
    log_path = base / "make-lab.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            ["make", "lab", f"VENV={sys.prefix}", f"LAB_ARGS={lab_args}"],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    server = JupyterServer(f"http://127.0.0.1:{port}/", token, EXAMPLES, log_path, process)
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        if process.poll() is not None:
            raise AssertionError(f"make lab exited with {process.returncode}:\n{server.log_tail()}")
        try:
            server.api("api/status", timeout=5)
            return server, port
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            if time.monotonic() > deadline:
                stop_make_lab(server)
                raise AssertionError(f"no server within {START_TIMEOUT_S} s:\n{server.log_tail()}") from None
            time.sleep(0.3)


def stop_make_lab(server: JupyterServer) -> list[psutil.Process]:
    """SIGTERM to make's process group (make, the server); returns what outlived the grace, killed."""
    try:
        tree = [psutil.Process(server.process.pid), *psutil.Process(server.process.pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        tree = []
    try:
        os.killpg(server.process.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    _, alive = psutil.wait_procs(tree, timeout=STOP_GRACE_S)
    for proc in alive:
        try:
            proc.kill()
        except psutil.NoSuchProcess:
            pass
    server.process.wait(timeout=10)
    return alive


@pytest.fixture
def make_lab(tmp_path):
    server, port = start_make_lab(tmp_path)
    try:
        yield server, port
    finally:
        if server.process.poll() is None:
            stop_make_lab(server)


def test_make_lab_opens_the_examples_with_the_extension(make_lab, page, request):
    server, port = make_lab
    log = server.log_tail(20_000)
    assert "pip install" not in log, f"make lab installed again although its stamps are fresh:\n{log}"

    # The server side: the extension is installed, enabled and the built version.
    extensions = {e["name"]: e for e in server.api("lab/api/extensions")}
    assert EXTENSION in extensions, sorted(extensions)
    entry = extensions[EXTENSION]
    assert entry["enabled"] and entry["status"] == "ok" and entry["installed_version"] == EXTENSION_VERSION, entry

    # The page: the extension's plugin is registered and activated (it starts automatically).
    page.goto(server.url("lab"))
    page.wait_for_function(
        "(id) => !!window.jupyterapp && window.jupyterapp.hasPlugin(id) && window.jupyterapp.isPluginActivated(id)",
        arg=PLUGIN_ID,
    )
    ours = page.evaluate("() => window.jupyterapp.listPlugins().filter(id => id.startsWith('pal-jupyter'))")
    assert ours == [PLUGIN_ID], ours

    # The file browser shows examples/ (its notebooks, and not the repository root's files).
    notebooks = sorted(p.name for p in EXAMPLES.glob("*.ipynb"))
    assert notebooks, "examples/ has no notebooks"
    items = page.locator(".jp-FileBrowser .jp-DirListing-item .jp-DirListing-itemText")
    items.filter(has_text=notebooks[-1]).first.wait_for()
    shown = items.all_inner_texts()
    assert sorted(name for name in shown if name.endswith(".ipynb")) == notebooks, shown
    assert "Makefile" not in shown and "pyproject.toml" not in shown, shown
    page.screenshot(path=str(artifact_name(request, "examples")))

    # A clean stop: SIGTERM to the group ends make and the server within the grace period.
    alive = stop_make_lab(server)
    assert alive == [], f"still running after SIGTERM: {alive}\n{server.log_tail()}"
    assert not port_open(port)
    log = server.log_tail(20_000)
    assert re.search(r"received signal 15, stopping\s.*Shutting down \d+ extensions", log, re.S), log
