"""A real JupyterHub for a class, driven the way students' browsers drive it: through its REST API
and the proxy, with notebook cells executed over a kernel's websocket.

The hub (``jupyterhub``, its proxy ``configurable-http-proxy`` from npm, ``make hub-deps``) runs
with JupyterHub's own ``SharedPasswordAuthenticator`` (one class password; it replaced
``DummyAuthenticator.password`` in JupyterHub 5.3) and ``SimpleLocalProcessSpawner`` (every
student's server runs as the hub's user, with a home folder of its own under ``homes/``).

The teacher's policy sits in a read-only class folder that the students' servers load:

``class/ipython_config.py``
    the policy (tutor mode, the class log folder, the model server; locked)
``class/jupyter/kernels/python3/kernel.json``
    the kernel every notebook starts: ipykernel with ``--config=class/ipython_config.py``

and the spawner puts ``class/jupyter`` first on ``JUPYTER_PATH``. A kernelspec rather than
``IPYTHONDIR``: IPython ignores a read-only ``IPYTHONDIR`` (it warns and uses an empty temporary
one), and a file given with ``--config`` is read *after* the student's own profile, so a
student's ``~/.ipython`` cannot shadow the class's values.

::

    with ClassHub(tmp_path, model="openai:lite@http://127.0.0.1:8000/v1") as hub:
        async def ask():
            await hub.create_users(["ada", "bob"])
            student = await hub.student("ada")          # token, server started, kernel, websocket
            return await student.execute("%%pal --tutor\\nWhat is 2 + 2?")
        outputs = run_to_end(ask())

:class:`ClassHub` stops the hub, its proxy, every student's server and their kernels when it
exits, whatever happened (the whole process tree, by pid, killed if it does not end in time).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
import secrets
import subprocess
import sys
import textwrap
import time
import uuid
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psutil

from model_server import free_port
from waiting import wait_until

ROOT = Path(__file__).resolve().parents[1]
PROXY = ROOT / ".hub-proxy" / "node_modules" / ".bin" / "configurable-http-proxy"  # `make hub-deps`
BIN = Path(sys.executable).parent
PASSWORD = "class-password-2026"  # the students' shared password (SharedPasswordAuthenticator: 8+ characters)
START_TIMEOUT_S = 300  # a student's server on a loaded 2-core machine


def run_to_end(coroutine: Any) -> Any:
    """``asyncio.run`` on a thread of its own.

    In a whole test session this thread's event loop is marked running: the session's browser
    (Playwright's sync API) runs its loop on this thread, between greenlet switches, so a plain
    ``asyncio.run`` here fails with "cannot be called from a running event loop".
    """
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


def missing_parts() -> str:
    """What this machine lacks to run a hub ('' when nothing): `make hub-deps` installs it."""
    missing = [str(p) for p in (BIN / "jupyterhub", BIN / "jupyterhub-singleuser", PROXY) if not p.exists()]
    return f"not installed: {', '.join(missing)} (`make hub-deps`)" if missing else ""


# -- the teacher's files ------------------------------------------------------------------------------

def class_policy(model: str, log_dir: Path) -> str:
    """The class's ipython_config.py: what every student's kernel runs under."""
    return textwrap.dedent(f"""\
        c = get_config()  # noqa: F821
        c.InteractiveShellApp.extensions = ["pal_jupyter"]
        c.TeacherPolicy.model = {model!r}
        c.TeacherPolicy.mode = "tutor"
        c.TeacherPolicy.log_dir = {str(log_dir)!r}
        c.TeacherPolicy.locked = ["model", "mode", "log_dir"]
        c.PalMagics.server_timeout = 600  # a CPU class server answers ten students slowly
        """)


def write_class_folder(folder: Path, model: str, log_dir: Path) -> Path:
    """The read-only class folder (policy + the kernelspec that loads it); returns its JUPYTER_PATH entry."""
    kernel = folder / "jupyter" / "kernels" / "python3"
    kernel.mkdir(parents=True)
    (folder / "ipython_config.py").write_text(class_policy(model, log_dir))
    spec = {"argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}",
                     f"--config={folder / 'ipython_config.py'}"],
            "display_name": "Python 3 (class)", "language": "python"}
    (kernel / "kernel.json").write_text(json.dumps(spec, indent=1))
    for path in sorted(folder.rglob("*"), reverse=True):  # files, then their folders
        path.chmod(0o555 if path.is_dir() else 0o444)
    folder.chmod(0o555)
    return folder / "jupyter"


def hub_config(work: Path, port: int, admin_token: str, jupyter_path: Path, api_base: str) -> str:
    """jupyterhub_config.py: the class's hub on loopback, as docs/classroom.md shows it."""
    environment = {"JUPYTER_PATH": str(jupyter_path), "PAL_JUPYTER_API_BASE": api_base,
                   "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}  # the checkout under test
    return textwrap.dedent(f"""\
        c = get_config()  # noqa: F821
        c.JupyterHub.ip = "127.0.0.1"
        c.JupyterHub.port = {port}
        c.JupyterHub.hub_port = {free_port()}
        c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{free_port()}"
        c.ConfigurableHTTPProxy.command = [{str(PROXY)!r}]
        c.JupyterHub.db_url = "sqlite:///{work / 'jupyterhub.sqlite'}"
        c.JupyterHub.cookie_secret_file = {str(work / 'jupyterhub_cookie_secret')!r}
        c.JupyterHub.pid_file = {str(work / 'jupyterhub.pid')!r}

        c.JupyterHub.authenticator_class = "shared-password"
        c.SharedPasswordAuthenticator.user_password = {PASSWORD!r}
        c.Authenticator.allow_existing_users = True  # the students the teacher adds, and nobody else

        c.JupyterHub.spawner_class = "simple"
        c.SimpleLocalProcessSpawner.home_dir_template = {str(work / 'homes' / '{username}')!r}
        c.Spawner.cmd = [{str(BIN / 'jupyterhub-singleuser')!r}]
        c.Spawner.args = ["--allow-root"]  # CI runs as root; harmless otherwise
        c.Spawner.environment = {environment!r}
        c.Spawner.start_timeout = {START_TIMEOUT_S}
        c.Spawner.http_timeout = {START_TIMEOUT_S}

        # The teacher's scripts (and this test) create the class's users with this token.
        c.JupyterHub.services = [{{"name": "teacher", "api_token": {admin_token!r}}}]
        c.JupyterHub.load_roles = [{{"name": "teacher", "scopes": ["admin:users", "admin:servers"],
                                     "services": ["teacher"]}}]
        """)


# -- the hub --------------------------------------------------------------------------------------

@dataclass
class ClassHub:
    """A JupyterHub in ``work`` whose students' kernels use ``model`` under the class policy."""

    work: Path
    model: str  # openai:NAME@URL
    port: int = field(default_factory=free_port)
    admin_token: str = field(default_factory=lambda: secrets.token_hex(16))
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log_dir(self) -> Path:
        return self.work / "class-logs"

    @property
    def log_path(self) -> Path:
        return self.work / "jupyterhub.log"

    def start(self, timeout: float = 120) -> None:
        self.work.mkdir(parents=True, exist_ok=True)
        self.log_dir.mkdir()
        api_base = self.model.partition("@")[2]
        jupyter_path = write_class_folder(self.work / "class", self.model, self.log_dir)
        config = self.work / "jupyterhub_config.py"
        config.write_text(hub_config(self.work, self.port, self.admin_token, jupyter_path, api_base))
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen([str(BIN / "jupyterhub"), "-f", str(config)], cwd=self.work,
                                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        wait_until(self._up, timeout=timeout, interval=0.5, what=f"the hub at {self.url} ({self.log_path})")

    def _up(self) -> bool:
        if self.process is not None and self.process.poll() is not None:
            raise RuntimeError(f"jupyterhub exited with {self.process.returncode}:\n{self.log_tail()}")
        try:
            return httpx.get(f"{self.url}/hub/api/", timeout=5).status_code == 200
        except httpx.HTTPError:
            return False

    def log_tail(self, lines: int = 40) -> str:
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def stop(self, grace_s: float = 30) -> None:
        """SIGTERM to the hub (it stops the servers and the proxy it started), then SIGKILL to
        whatever of its tree is left: the servers run in sessions of their own, so the tree is
        collected by pid before the hub goes, not by process group."""
        if self.process is None:
            return
        tree = _tree(self.process.pid)
        if self.process.poll() is None:
            self.process.terminate()  # the hub's clean shutdown
            try:
                self.process.wait(grace_s)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        tree += [p for p in _tree_of(tree) if p not in tree]
        _, alive = psutil.wait_procs(tree, timeout=10)
        for process in alive:
            with suppress(psutil.Error):  # it ended while we looked
                process.kill()
        psutil.wait_procs(alive, timeout=10)

    def leftovers(self) -> list[str]:
        """Processes still running whose command line names this hub's folder (none after stop())."""
        found = []
        for process in psutil.process_iter(["pid", "cmdline", "environ"]):
            with suppress(psutil.Error):  # it ended while we looked
                text = " ".join(process.info["cmdline"] or []) + " ".join((process.info["environ"] or {}).values())
                if str(self.work) in text and process.pid != os.getpid():
                    found.append(f"{process.pid}: {' '.join(process.info['cmdline'] or [])[:200]}")
        return found

    def __enter__(self) -> ClassHub:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- the REST API -----------------------------------------------------------------------------

    def _teacher(self) -> httpx.AsyncClient:
        """The hub's REST API with the 'teacher' service's token (it may add users, stop servers)."""
        return httpx.AsyncClient(base_url=f"{self.url}/hub/api", timeout=60,
                                 headers={"Authorization": f"token {self.admin_token}"})

    async def create_users(self, names: list[str]) -> None:
        """The teacher adds the class."""
        async with self._teacher() as client:
            response = await client.post("/users", json={"usernames": names})
            assert response.status_code == 201, response.text

    async def stop_server(self, name: str) -> None:
        """The teacher stops a student's server (and its kernels), and waits until it is gone."""
        async with self._teacher() as client:
            response = await client.delete(f"/users/{name}/server")
            assert response.status_code in (202, 204), response.text
            deadline = time.monotonic() + START_TIMEOUT_S
            while (await client.get(f"/users/{name}")).json().get("servers"):
                assert time.monotonic() < deadline, f"{name}'s server did not stop:\n{self.log_tail()}"
                await asyncio.sleep(0.5)

    async def student(self, name: str) -> Student:
        """A student logs in with the class password, starts their server and opens a notebook kernel."""
        async with httpx.AsyncClient(base_url=f"{self.url}/hub/api", timeout=60) as client:
            response = await client.post(f"/users/{name}/tokens", json={
                "auth": {"username": name, "password": PASSWORD}, "note": "notebook"})
            assert response.status_code == 201, response.text
            token = response.json()["token"]
            client.headers["Authorization"] = f"token {token}"
            response = await client.post(f"/users/{name}/server")
            assert response.status_code in (201, 202), response.text
            await self._server_ready(client, name)
        student = Student(name, f"{self.url}/user/{name}", token)
        await student.open_kernel()
        return student

    async def _server_ready(self, client: httpx.AsyncClient, name: str) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            server = (await client.get(f"/users/{name}")).json().get("servers", {}).get("")
            if server and server.get("ready"):
                return
            if not server:
                raise AssertionError(f"{name}'s server failed to start:\n{self.log_tail()}")
            await asyncio.sleep(0.5)
        raise AssertionError(f"{name}'s server was not ready after {START_TIMEOUT_S} s:\n{self.log_tail()}")


def _tree(pid: int) -> list[psutil.Process]:
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def _tree_of(processes: list[psutil.Process]) -> list[psutil.Process]:
    """Every live process in the trees of ``processes`` (children started since they were listed)."""
    found: list[psutil.Process] = []
    for process in processes:
        with suppress(psutil.Error):  # it ended while we looked
            found += [process, *process.children(recursive=True)]
    return found


# -- a student's notebook kernel, through the proxy -----------------------------------------------

@dataclass
class Student:
    """One student's kernel on their single-user server: the same REST and websocket calls JupyterLab makes."""

    name: str
    server_url: str  # through the proxy: http://hub/user/NAME
    token: str
    kernel_id: str = ""
    session: str = field(default_factory=lambda: uuid.uuid4().hex)
    socket: Any = None

    async def open_kernel(self) -> None:
        from tornado.httpclient import HTTPRequest
        from tornado.websocket import websocket_connect

        headers = {"Authorization": f"token {self.token}"}
        async with httpx.AsyncClient(timeout=120, headers=headers) as client:
            response = await client.post(f"{self.server_url}/api/kernels", json={"name": "python3"})
            assert response.status_code == 201, response.text
            self.kernel_id = response.json()["id"]
        channels = f"/api/kernels/{self.kernel_id}/channels?session_id={self.session}"
        url = self.server_url.replace("http", "ws", 1) + channels
        self.socket = await websocket_connect(HTTPRequest(url, headers=headers), max_message_size=64 * 2**20)

    async def execute(self, code: str, timeout: float = 900) -> list[dict[str, Any]]:
        """Run one cell; its outputs (iopub messages of that execution) once the kernel is idle again."""
        msg_id = uuid.uuid4().hex
        header = {"msg_id": msg_id, "msg_type": "execute_request", "username": self.name, "session": self.session,
                  "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "version": "5.3"}
        content = {"code": code, "silent": False, "store_history": True, "user_expressions": {},
                   "allow_stdin": False, "stop_on_error": True}
        await self.socket.write_message(json.dumps({"header": header, "parent_header": {}, "metadata": {},
                                                    "content": content, "channel": "shell", "buffers": []}))
        return await asyncio.wait_for(self._outputs(msg_id), timeout)

    async def _outputs(self, msg_id: str) -> list[dict[str, Any]]:
        outputs: list[dict[str, Any]] = []
        replied = idle = False
        while not (replied and idle):
            raw = await self.socket.read_message()
            if raw is None:
                raise AssertionError(f"{self.name}'s kernel websocket closed")
            if isinstance(raw, bytes):
                continue  # a binary frame (a widget's buffers): no text output in it
            message = json.loads(raw)
            if message.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind = message["header"]["msg_type"]
            if message["channel"] == "shell" and kind == "execute_reply":
                replied = True
            elif kind == "status":
                idle = message["content"]["execution_state"] == "idle"
            elif kind in ("stream", "display_data", "update_display_data", "execute_result", "error"):
                outputs.append({"output_type": kind, **message["content"]})
        return outputs

    def close(self) -> None:
        if self.socket is not None:
            self.socket.close()


def final_text(outputs: list[dict[str, Any]]) -> str:
    """The cell's text as a notebook would keep it: streams, errors, and each display's last version
    (a display updated in place, as the tutor's is, shows only what it said last)."""
    order: list[str] = []
    texts: dict[str, str] = {}
    for index, output in enumerate(outputs):
        kind = output["output_type"]
        if kind == "stream":
            key, text = f"stream-{index}", output["text"]
        elif kind == "error":
            key, text = f"error-{index}", f"{output['ename']}: {output['evalue']}"
        else:
            key = output.get("transient", {}).get("display_id") or f"display-{index}"
            text = output.get("data", {}).get("text/plain", "")
        if key not in texts:
            order.append(key)
        texts[key] = text
    return "\n".join(texts[key] for key in order)
