"""The fault suite: hostile programs under the ``sandbox`` and the ``process`` isolation levels.

Each test runs one kind of hostile program at both levels and checks what happens: the sandbox
must stop it; the process level documents what a plain child process can still do (docs/sandbox.md's
table is this file). The test process plays the user's kernel: its files, its environment and its
connection file are the targets, and they must come through untouched.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from pal_jupyter.errors import KernelError, SettingError
from pal_jupyter.kernels import ExecutorLimits, KernelPool, StopReason
from pal_jupyter.kernels.sandbox import resolve_level
from sandboxing import require_sandbox
from waiting import wait_until

LEVELS = ["sandbox", "process"]


@pytest.fixture(scope="module")
def secrets(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    """A home with a secret, a Jupyter runtime folder with the user's kernel connection file, a
    secret in the environment, and a folder programs should not write to."""
    root = tmp_path_factory.mktemp("user")
    home = root / "home"
    home.mkdir()
    (home / ".bashrc").write_text("export API_KEY=top-secret\n")
    runtime = root / "jupyter-runtime"
    runtime.mkdir()
    (runtime / "kernel-user.json").write_text(json.dumps({"key": "user-kernel-hmac-key", "transport": "tcp"}))
    outside = root / "elsewhere"
    outside.mkdir()
    saved = {k: os.environ.get(k) for k in ("HOME", "JUPYTER_RUNTIME_DIR", "PAL_TEST_SECRET_TOKEN")}
    os.environ.update(HOME=str(home), JUPYTER_RUNTIME_DIR=str(runtime), PAL_TEST_SECRET_TOKEN="sk-do-not-leak")
    try:
        yield {"home": home, "runtime": runtime, "outside": outside}
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture(scope="module", params=LEVELS)
def pool(request: pytest.FixtureRequest, secrets: dict[str, Path]) -> Iterator[KernelPool]:
    if request.param == "sandbox":
        require_sandbox()
    limits = ExecutorLimits(warm_imports=(), timeout_s=10, grace_s=2, isolation=request.param,
                            max_file_bytes=64 * 1024**2)
    with KernelPool(limits) as p:
        yield p


def run(pool: KernelPool, code: str, **variables: object) -> str:
    result = pool.run(code, variables)
    assert result.reason is StopReason.OK, (result.reason, result.error)
    return result.stdout.strip()


def sandboxed(pool: KernelPool) -> bool:
    return pool.isolation == "sandbox"


def test_no_way_back_into_the_users_kernel(pool, secrets):
    """The user's kernel: its connection file, its pid, its process."""
    code = ("import os\n"
            "parent = os.environ.get('JPY_PARENT_PID')\n"
            "try:\n    key = open(connection).read()\nexcept OSError as e:\n    key = type(e).__name__\n"
            "print(parent is not None, 'user-kernel-hmac-key' in key, os.path.exists(f'/proc/{host}/cmdline'))")
    out = run(pool, code, connection=str(secrets["runtime"] / "kernel-user.json"), host=os.getpid())
    # No JPY_PARENT_PID at either level (the keeper watches the parent); a plain process can still
    # read the connection file and see the parent's process.
    assert out == ("False False False" if sandboxed(pool) else "False True True")


def test_files_outside_its_folder(pool, secrets):
    code = ("results = []\n"
            "for path in (target, '/etc/pal-pwned'):\n"
            "    try:\n        open(path, 'w').write('x')\n        results.append('written')\n"
            "    except OSError as e:\n        results.append(type(e).__name__)\n"
            "try:\n    results.append('secret' if 'top-secret' in open(bashrc).read() else 'read')\n"
            "except OSError as e:\n    results.append(type(e).__name__)\n"
            "print(results)")
    target = secrets["outside"] / "pwned.txt"
    out = run(pool, code, target=str(target), bashrc=str(secrets["home"] / ".bashrc"))
    if sandboxed(pool):
        assert out == "['FileNotFoundError', 'OSError', 'FileNotFoundError']" and not target.exists()
    else:  # a plain process can write and read as the user (root here: /etc too)
        assert out.startswith("['written'") and "secret" in out and target.exists()
        target.unlink()
    Path("/etc/pal-pwned").unlink(missing_ok=True)


def test_the_network(pool):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = listener.getsockname()[1]
    code = ("import socket\nresults = []\n"
            "for host, p in (('127.0.0.1', port), ('1.1.1.1', 80)):\n"
            "    try:\n        socket.create_connection((host, p), timeout=2).close()\n        results.append('connected')\n"
            "    except OSError as e:\n        results.append(type(e).__name__)\n"
            "try:\n    socket.getaddrinfo('example.com', 80)\n    results.append('resolved')\n"
            "except OSError as e:\n    results.append(type(e).__name__)\n"
            "print(results)")
    try:
        out = run(pool, code, port=port)
    finally:
        listener.close()
    if sandboxed(pool):  # its own network namespace: not even loopback reaches us
        assert out.startswith("['ConnectionRefusedError', ") and "connected" not in out and "resolved" not in out
    else:
        assert out.startswith("['connected'")


def test_the_environment(pool):
    out = run(pool, "import os\nprint(sorted(k for k in os.environ if 'SECRET' in k or 'TOKEN' in k or 'KEY' in k))")
    assert out == "[]"  # an allow-list at both levels


def test_no_secret_in_any_environment_it_can_read(pool):
    """Not in its own, nor in that of any process it can see: the sandbox's first process (bwrap,
    started with the kernel's environment) included."""
    code = ("import glob\nhits = []\n"
            "for path in glob.glob('/proc/[0-9]*/environ'):\n"
            "    try:\n        if b'sk-do-not-leak' in open(path, 'rb').read():\n            hits.append(path)\n"
            "    except OSError:\n        pass\nprint(hits)")
    assert run(pool, code) == "[]"


def test_proc_snooping_and_signals_to_the_parent(pool):
    code = ("import os, ctypes\n"
            "pids = [int(p) for p in os.listdir('/proc') if p.isdigit()]\n"
            "try:\n    os.kill(host, 0)\n    signal = 'allowed'\nexcept OSError as e:\n    signal = type(e).__name__\n"
            "print(host in pids, len(pids) < 20, signal)")
    out = run(pool, code, host=os.getpid())
    assert out == ("False True ProcessLookupError" if sandboxed(pool) else "True False allowed")


def test_ptrace_of_the_parent_is_impossible_in_the_sandbox(pool):
    if not sandboxed(pool):
        pytest.skip("a plain process of the same user may ptrace its parent: not attempted on the test runner")
    code = ("import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
            "print(libc.ptrace(16, host, 0, 0), os.strerror(ctypes.get_errno()))")  # 16 = PTRACE_ATTACH
    assert run(pool, code, host=os.getpid()) == "-1 No such process"


def test_another_kernels_connection_file(pool):
    other = pool.acquire()  # another program's kernel, alive beside this one
    try:
        code = "import os\nprint(os.path.exists(path), os.path.exists(folder))"
        out = run(pool, code, path=os.path.join(other.runtime_dir, "connection.json"), folder=other.runtime_dir)
        assert out == ("False False" if sandboxed(pool) else "True True")
    finally:
        other.shutdown()


def test_a_detached_process_does_not_outlive_its_kernel(pool):
    code = ("import subprocess\n"
            "p = subprocess.Popen(['sleep', '321'], start_new_session=True)\n"
            "q = subprocess.Popen(['sh', '-c', '(setsid sleep 321 &) ; exit 0'])\n"
            "q.wait()\nprint('started')")
    assert run(pool, code) == "started"
    wait_until(lambda: not [p for p in psutil.process_iter(["cmdline"]) if p.info["cmdline"] == ["sleep", "321"]],
               timeout=5, what="the detached sleeps to end with their kernel")


def test_a_program_that_kills_its_own_kernel_leaves_nothing_behind(pool):
    code = ("import os, subprocess, time\n"
            "subprocess.Popen(['sleep', '4322'], start_new_session=True)\ntime.sleep(0.2)\n"
            "os.kill(os.getpid(), 9)")
    assert pool.run(code).reason is StopReason.DIED
    gone, alive = psutil.wait_procs([p for p in psutil.process_iter(["cmdline"]) if p.info["cmdline"] == ["sleep", "4322"]],
                                    timeout=5)
    assert alive == []


def test_disk_fill_is_cut(pool):
    code = ("import os\nwritten = 0\nchunk = b'0' * (1024 * 1024)\n"
            "try:\n    with open('big.bin', 'wb') as f:\n        for _ in range(1024):\n"
            "            f.write(chunk)\n            written += 1\nexcept OSError as e:\n"
            "    print(type(e).__name__, e.errno, written)\nelse:\n    print('wrote 1 GiB')")
    out = run(pool, code)
    name, errno, megabytes = out.split()
    assert name == "OSError" and int(megabytes) <= 64  # RLIMIT_FSIZE (64 MiB here): EFBIG, not a full disk
    assert errno == "27"


FILL_CODE = """\
import errno, os
def fill(folder):
    written = 0
    try:
        for i in range(4096):  # many 1 MiB files: a cap per file is not enough
            with open(os.path.join(folder, f'fill-{i}.bin'), 'wb') as f:
                f.write(b'0' * 1048576)
            written += 1
    except OSError as e:
        return errno.errorcode[e.errno], written
    return 'no limit', written
from ipykernel import get_connection_file
places = {'work': '.', 'tmp': '/tmp', 'shm': '/dev/shm', 'run': '/run', 'var_tmp': '/var/tmp', 'dev': '/dev',
          'runtime': os.path.dirname(get_connection_file())}
print({name: fill(folder) for name, folder in places.items()})
"""


def test_every_writable_place_is_capped(pool):
    """Its folder, /tmp and /dev/shm are size-capped memory (ENOSPC, within a quarter of the memory
    limit in all); everything else, the host folder with its sockets and connection file included,
    is read-only."""
    if not sandboxed(pool):
        pytest.skip("a plain process writes to the real disk: only the file-size limit bounds it")
    result = pool.run(FILL_CODE)
    assert result.reason is StopReason.OK, result.error
    out = eval(result.stdout)
    assert {name: code for name, (code, _) in out.items()} == {
        "work": "ENOSPC", "tmp": "ENOSPC", "shm": "ENOSPC",
        "run": "EROFS", "var_tmp": "EROFS", "dev": "EROFS", "runtime": "EROFS"}
    written = sum(megabytes for _, megabytes in out.values())
    assert 0 < written <= ExecutorLimits().memory_bytes // 4 // 1024**2
    assert out["runtime"][1] == 0


def test_a_fork_bomb_ends_with_its_kernel(pool):
    # A bounded bomb: 300 sleeping children, some of them detached; none may survive the kernel.
    code = ("import os, time\nstarted = 0\n"
            "try:\n    for _ in range(300):\n        if os.fork() == 0:\n            os.setsid()\n"
            "            time.sleep(60)\n            os._exit(0)\n        started += 1\n"
            "except OSError as e:\n    print('stopped', e.errno)\n"
            "print(started)")
    result = pool.run(code)
    assert result.reason is StopReason.OK, result.error
    wait_until(lambda: not [p for p in psutil.process_iter(["cmdline"]) if "time.sleep(60)" in " ".join(p.info["cmdline"] or [])],
               timeout=5, what="the bomb's sleepers to end with their kernel")


def test_data_plots_and_tables_still_come_back(pool):
    import pandas as pd

    sales = pd.DataFrame({"region": ["East", "West"], "units": [3, 4]})
    code = ("import matplotlib\nmatplotlib.use('module://matplotlib_inline.backend_inline')\n"
            "import matplotlib.pyplot as plt\nplt.plot(sales.units)\nplt.show()\nsales")
    result = pool.run(code, {"sales": sales})
    assert result.reason is StopReason.OK, result.error
    kinds = [sorted(o["data"]) for o in result.outputs]
    assert ["image/png", "text/plain"] in kinds and ["text/html", "text/plain"] in kinds


def test_readable_paths_are_read_only(tmp_path):
    require_sandbox()
    data = tmp_path / "data"
    data.mkdir()
    (data / "sales.csv").write_text("region,units\nEast,3\n")
    limits = ExecutorLimits(warm_imports=(), isolation="sandbox", readable_paths=(str(data),))
    with KernelPool(limits) as pool:
        code = ("import pandas as pd\nprint(pd.read_csv(path).units.sum())\n"
                "try:\n    open(path, 'a').write('x')\nexcept OSError as e:\n    print(type(e).__name__)")
        assert run(pool, code, path=str(data / "sales.csv")) == "3\nOSError"
    mine = f"pal-kernel-{os.getpid()}-", f"pal-ipc-{os.getpid()}-"
    before = {n for n in os.listdir(tempfile.gettempdir()) if n.startswith(mine)}
    with pytest.raises(KernelError, match="Readable path"):
        with KernelPool(ExecutorLimits(warm_imports=(), isolation="sandbox", readable_paths=("/no/such",))) as pool:
            pool.acquire()
    # The refused kernel leaves no folders behind.
    assert {n for n in os.listdir(tempfile.gettempdir()) if n.startswith(mine)} == before


def test_a_required_sandbox_that_cannot_run_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")  # no bwrap to be found
    with pytest.raises(KernelError, match=r"A sandbox is required .* bubblewrap \(bwrap\) is not installed: "
                                          r"install bubblewrap"):
        resolve_level("sandbox")
    assert resolve_level("auto") == "process"  # auto falls back where the sandbox cannot run


def test_the_users_own_kernel_is_untouched_after_the_suite(secrets):
    assert (secrets["home"] / ".bashrc").read_text() == "export API_KEY=top-secret\n"
    assert json.loads((secrets["runtime"] / "kernel-user.json").read_text())["key"] == "user-kernel-hmac-key"
    assert list(secrets["outside"].iterdir()) == []
    assert os.environ["PAL_TEST_SECRET_TOKEN"] == "sk-do-not-leak"


def test_readable_paths_that_expose_the_users_world_are_refused(tmp_path, secrets):
    home = secrets["home"]
    (home / ".ssh").mkdir(exist_ok=True)
    (tmp_path / "to-home").symlink_to(home)
    data = tmp_path / "data"
    data.mkdir()
    refused = {
        "/": "is the whole filesystem",
        "~": "is your home folder",
        str(home.parent): "contains your home folder",  # an ancestor of the home
        str(tmp_path / "to-home"): "which leads to .* is your home folder",  # a link to it
        str(home / ".ssh"): r"is inside .*\.ssh, which holds keys",
        str(secrets["runtime"]): "is the Jupyter runtime folder",
        tempfile.gettempdir(): "contains",  # here the test home lies in it too
    }
    for path, reason in refused.items():
        with pytest.raises(SettingError, match=f"Readable path .* refused: .*{reason}"):
            ExecutorLimits(readable_paths=(path,))
    assert ExecutorLimits(readable_paths=(str(data),)).readable_paths == (str(data),)  # a data folder is fine


ORPHAN_PARENT = """\
import sys, time
from pal_jupyter.kernels import ChildKernel, ExecutorLimits
kernel = ChildKernel(ExecutorLimits(warm_imports=(), isolation=sys.argv[1]))  # alive until we die
result = kernel.run("import subprocess\\n"
                    "subprocess.run(['sh', '-c', '(setsid sleep 4321 &) ; exit 0'])\\n"
                    "subprocess.Popen(['sleep', '4321'], start_new_session=True)\\nprint('detached')")
print(result.stdout.strip(), flush=True)
time.sleep(600)
"""


@pytest.mark.parametrize("level", LEVELS)
def test_nothing_outlives_a_parent_killed_by_sigkill(level, tmp_path):
    """The user's kernel dies by ``kill -9`` while a program's detached processes sleep: the
    keeper notices and ends the whole tree, the kernel and what it detached."""
    if level == "sandbox":
        require_sandbox()
    script = tmp_path / "parent.py"
    script.write_text(ORPHAN_PARENT)
    parent = subprocess.Popen([sys.executable, str(script), level], stdout=subprocess.PIPE, text=True,
                              cwd=str(tmp_path))
    try:
        assert parent.stdout.readline().strip() == "detached"

        def sleeping() -> list[psutil.Process]:  # the double fork may still be on its way to exec sleep
            try:
                tree = psutil.Process(parent.pid).children(recursive=True)
                return tree if sum(p.cmdline() == ["sleep", "4321"] for p in tree) == 2 else []
            except psutil.Error:  # a step of the fork ended while we looked
                return []

        tree = wait_until(sleeping, timeout=10, what="both detached sleeps")
        parent.kill()
        parent.wait()
        gone, alive = psutil.wait_procs(tree, timeout=10)
        assert alive == [], [(p.pid, p.cmdline()) for p in alive]
    finally:
        parent.kill()
