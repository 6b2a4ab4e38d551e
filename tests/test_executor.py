"""Real child kernels (no mocks): outputs, errors, limits, variables, and no leftovers."""

from __future__ import annotations

import base64
import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from pal_jupyter.errors import KernelError
from pal_jupyter.kernels import ChildKernel, ExecutorLimits, KernelPool, sweep_leftovers
from pal_jupyter.kernels import StopReason
from sandboxing import require_sandbox
from waiting import wait_until

LAUNCHER = "pal_jupyter.kernels.launcher"
ANSI = "\x1b["
ROOT = Path(__file__).resolve().parent.parent


def _kernel_processes() -> list[psutil.Process]:
    """Our descendant processes that are child kernels (zombies included)."""
    found = []
    for proc in psutil.Process().children(recursive=True):
        try:
            if proc.status() == psutil.STATUS_ZOMBIE or LAUNCHER in " ".join(proc.cmdline()):
                found.append(proc)
        except psutil.NoSuchProcess:
            pass
    return found


def _gone(pid: int) -> bool:
    """The process no longer runs (a zombie is gone too: its reaper is not us)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


@pytest.fixture(scope="module", autouse=True)
def no_leftover_kernels() -> Iterator[None]:
    """Set up first, torn down last: after every pool is closed no kernel (or zombie) remains."""
    yield
    wait_until(lambda: _kernel_processes() == [], timeout=5, what="every child kernel to be gone")


def _level(request: pytest.FixtureRequest) -> str:
    """The isolation level of a parametrized fixture; the sandbox needs bubblewrap here."""
    level = request.param
    if level == "sandbox":
        require_sandbox()
    return level


@pytest.fixture(scope="module", params=["process", "sandbox"])
def pool(request: pytest.FixtureRequest) -> Iterator[KernelPool]:
    """Default limits without warm imports: the quickest kernels to start."""
    with KernelPool(ExecutorLimits(warm_imports=(), isolation=_level(request))) as p:
        yield p


@pytest.fixture(scope="module", params=["process", "sandbox"])
def warm_pool(request: pytest.FixtureRequest) -> Iterator[KernelPool]:
    """Default limits: numpy/pandas/matplotlib imported before the program runs."""
    with KernelPool(ExecutorLimits(isolation=_level(request))) as p:
        yield p


@pytest.fixture(scope="module", params=["process", "sandbox"])
def strict_pool(request: pytest.FixtureRequest) -> Iterator[KernelPool]:
    """Short timeout and output cap, no warm imports (faster start) for the limit tests."""
    limits = ExecutorLimits(timeout_s=2.0, grace_s=1.0, max_output_bytes=50_000, warm_imports=(),
                            isolation=_level(request))
    with KernelPool(limits) as p:
        yield p


def test_print_goes_to_stdout(pool: KernelPool) -> None:
    result = pool.run("import sys\nprint('hello', 6 * 7)\nprint('oops', file=sys.stderr)")
    assert result.reason is StopReason.OK
    assert result.stdout == "hello 42\n"
    assert result.stderr == "oops\n"
    assert result.error is None
    assert 0 < result.duration_s < 5


def test_exception_is_clean_and_points_at_program_line(pool: KernelPool) -> None:
    code = "def f(x):\n    return 1 / x\n\nprint('before')\nf(0)\n"
    result = pool.run(code)
    assert result.reason is StopReason.ERROR
    assert result.stdout == "before\n"
    err = result.error
    assert err is not None
    assert (err.ename, err.evalue, err.lineno) == ("ZeroDivisionError", "division by zero", 2)
    assert 'File "program.py", line 5, in <module>' in err.traceback
    assert 'File "program.py", line 2, in f' in err.traceback
    assert ANSI not in err.traceback and "Cell In[" not in err.traceback
    assert "IPython" not in err.traceback and "ipykernel" not in err.traceback


def test_a_library_frame_is_named_from_its_package(pool: KernelPool) -> None:
    """A pandas error's frames say "pandas/core/...", not the environment's absolute path (what the
    repair prompt reads ~15 tokens a frame of, and what would show the user's home in a class log)."""
    result = pool.run("import json\nimport pandas as pd\nframe = pd.DataFrame({'a': [1]})\n"
                      "try:\n    json.loads('{')\nexcept ValueError:\n    frame['b']\n")
    err = result.error
    assert err is not None and err.ename == "KeyError"
    assert 'File "pandas/core/frame.py", line' in err.traceback
    assert 'File "json/decoder.py", line' in err.traceback  # the standard library's too
    assert 'File "program.py", line 7, in <module>' in err.traceback
    assert "site-packages" not in err.traceback and sys.prefix not in err.traceback


def test_the_analysts_libraries_the_prompt_names_run_in_a_programs_kernel(pool: KernelPool) -> None:
    """What the data prompt says is installed (prompts.styles.ANALYSIS_LIBRARIES) is: a t-test, a
    regression and a model fit in the programs' kernel, sandboxed too; and a module that is not there
    is told to the repair as such, with what to use instead."""
    from pal_jupyter import prompts

    code = ("import scipy.stats, statsmodels.api as sm, seaborn\nfrom sklearn.linear_model import LinearRegression\n"
            "import numpy as np\nx = np.arange(20.0)\ny = 2 * x + 1\n"
            "print(round(scipy.stats.pearsonr(x, y)[0], 3), round(sm.OLS(y, sm.add_constant(x)).fit().params[1], 3),\n"
            "      round(LinearRegression().fit(x.reshape(-1, 1), y).coef_[0], 3))\n")
    result = pool.run(code)
    assert result.ok, result.error
    assert result.stdout.split() == ["1.0", "2.0", "2.0"]
    missing = pool.run("import pingouin")
    assert missing.error is not None and missing.error.ename == "ModuleNotFoundError"
    feedback = prompts.execution_feedback(missing, None, "import pingouin")
    assert "pingouin is not installed where programs run" in feedback and "scikit-learn" in feedback
    assert feedback.endswith("Use those instead.")
    from pal_jupyter.engine.records import Program
    from pal_jupyter.notebook.session_html import error_html

    shown = error_html(Program(index=1, kind="initial", messages=[], code="import pingouin", execution=missing))
    assert shown.startswith("<div class='pal-error-reason'>The module pingouin is not installed where programs run")


def test_syntax_error_has_lineno(pool: KernelPool) -> None:
    result = pool.run("x = 1\ny = (2,\nprint(y)\nz = [\n")
    err = result.error
    assert result.reason is StopReason.ERROR and err is not None
    assert err.ename == "SyntaxError"
    assert err.lineno is not None and 2 <= err.lineno <= 4
    assert 'File "program.py", line' in err.traceback
    assert ".py, line" not in err.evalue.replace("program.py, line", "")  # no IPython temp name
    assert ANSI not in err.traceback


def test_matplotlib_figure_is_png(warm_pool: KernelPool) -> None:
    code = "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.title('t')\nplt.show()"
    result = warm_pool.run(code)
    assert result.reason is StopReason.OK, result.error
    pngs = [o["data"]["image/png"] for o in result.outputs if "image/png" in o["data"]]
    assert len(pngs) == 1
    assert base64.b64decode(pngs[0]).startswith(b"\x89PNG\r\n\x1a\n")


def test_dataframe_and_variables(warm_pool: KernelPool) -> None:
    import pandas as pd

    df = pd.DataFrame({"city": ["a", "b", "a"], "sales": [1, 2, 5]})
    code = "out = df.groupby('city')['sales'].sum().reset_index()\nprint(config['unit'])\nout"
    result = warm_pool.run(code, {"df": df, "config": {"unit": "EUR"}})
    assert result.reason is StopReason.OK, result.error
    assert result.stdout == "EUR\n"
    (bundle,) = result.outputs
    assert bundle["output_type"] == "execute_result"
    assert "<table" in bundle["data"]["text/html"] and "6" in bundle["data"]["text/plain"]
    assert "6" in result.text_output()


def test_unpicklable_variable_is_named(pool: KernelPool) -> None:
    with pytest.raises(ValueError, match="'gen'"):
        pool.run("print(gen)", {"ok": 1, "gen": (i for i in range(3))})
    with pytest.raises(ValueError, match="'lock'"):
        pool.run("print(lock)", {"lock": threading.Lock()})


def test_variable_that_cannot_load_in_child_is_named(pool: KernelPool, tmp_path: Path) -> None:
    # Importable here only: cloudpickle pickles it by reference, the kernel cannot import it.
    (tmp_path / "pal_only_here.py").write_text("class Thing:\n    pass\n")
    sys.path.insert(0, str(tmp_path))
    try:
        import pal_only_here

        with pytest.raises(ValueError, match="'thing'.*ModuleNotFoundError"):
            pool.run("print(thing)", {"thing": pal_only_here.Thing()})
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("pal_only_here", None)


def test_on_output_is_live(pool: KernelPool) -> None:
    seen: list[tuple[float, dict]] = []
    code = "import time\nprint('first', flush=True)\ntime.sleep(1.0)\nprint('second')"
    result = pool.run(code, on_output=lambda out: seen.append((time.monotonic(), out)))
    finished = time.monotonic()
    assert result.stdout == "first\nsecond\n"
    texts = [out["text"] for _, out in seen if out["output_type"] == "stream"]
    assert "".join(texts) == "first\nsecond\n"
    first_at = next(t for t, out in seen if "first" in out.get("text", ""))
    assert finished - first_at > 0.5  # arrived while the program was still sleeping


def test_env_cwd_and_parent_pid(pool: KernelPool) -> None:
    kernel = pool.acquire()
    try:
        code = (
            "import os\nprint(repr(os.environ['CUDA_VISIBLE_DEVICES']))\n"
            "print(os.getcwd())\nprint(os.environ.get('JPY_PARENT_PID'))\nprint(sorted(os.listdir('.')))"
        )
        result = kernel.run(code)
        cuda, cwd, parent, listing = result.stdout.splitlines()
        assert cuda == "''"
        assert os.path.basename(cwd).startswith("pal-kernel-") and cwd == kernel.cwd
        assert listing == "[]"  # the variables pickle is gone, no socket files here
        assert parent == "None"  # the launcher's keeper watches us (and ends the kernel's tree when we die)
    finally:
        kernel.shutdown()
    assert not os.path.exists(cwd)
    assert not kernel.is_alive()
    assert _gone(kernel.pid)
    kernel.shutdown()  # idempotent


def test_memory_bomb_is_memory_error(strict_pool: KernelPool) -> None:
    kernel = strict_pool.acquire()
    try:
        # 1 GiB of address space is still available to a program (mapped, never touched)...
        fits = kernel.run("import mmap\nm = mmap.mmap(-1, 1024**3)\nprint(len(m))\nm.close()")
        assert fits.reason is StopReason.OK and fits.stdout == f"{1024**3}\n", fits.error
        # ...8 GiB is not: MemoryError, not a dead kernel.
        result = kernel.run("x = bytearray(8 * 1024**3)")
        assert result.reason is StopReason.ERROR
        assert result.error is not None and result.error.ename == "MemoryError"
        assert result.error.lineno == 1
        assert kernel.is_alive()  # the kernel survived
    finally:
        kernel.shutdown()


def test_infinite_loop_times_out(strict_pool: KernelPool) -> None:
    result = strict_pool.run("print('start')\nwhile True:\n    pass\n")
    assert result.reason is StopReason.TIMEOUT
    assert result.stdout == "start\n"  # partial output kept
    err = result.error
    assert err is not None and err.ename == "Timeout"
    assert err.evalue == "The program ran longer than 2 s and was stopped."
    assert err.lineno in (2, 3)  # where the interrupt landed
    assert 2.0 <= result.duration_s < 2.0 + 1.0 + 1.0


def test_sigint_ignored_is_killed(strict_pool: KernelPool) -> None:
    kernel = strict_pool.acquire()
    code = "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass\n"
    result = kernel.run(code)
    assert result.reason is StopReason.TIMEOUT
    assert result.error is not None and result.error.ename == "Timeout"
    assert result.duration_s < 2.0 + 1.0 + 1.5
    assert not kernel.is_alive()
    assert _gone(kernel.pid)
    kernel.shutdown()


def test_os_exit_is_died(strict_pool: KernelPool) -> None:
    started = time.monotonic()
    result = strict_pool.run("import os\nprint('bye', flush=True)\nos._exit(3)")
    assert result.reason is StopReason.DIED
    assert result.error is not None and result.error.ename == "KernelDied"
    assert "exit code 3" in result.error.evalue
    assert result.duration_s < 5
    assert time.monotonic() - started < 8  # includes waiting for the warm kernel


def test_output_flood_is_cut(strict_pool: KernelPool) -> None:
    result = strict_pool.run("while True:\n    print('x' * 1000)\n")
    assert result.reason is StopReason.OUTPUT_LIMIT
    assert result.truncated
    assert result.error is not None and result.error.ename == "OutputLimit"
    assert result.stdout.endswith("[output truncated]\n")
    assert 50_000 <= len(result.stdout) <= 50_000 + 100
    assert result.duration_s < 2.0 + 1.0 + 1.0


def test_cpu_limit_kills_kernel() -> None:
    # The CPU budget counts the kernel's own start-up (~0.5 s CPU) too.
    limits = ExecutorLimits(timeout_s=15, cpu_seconds=2, warm_imports=())
    with ChildKernel(limits) as kernel:
        result = kernel.run("while True:\n    pass\n")
    assert result.reason is StopReason.DIED
    assert result.error is not None and "CPU time limit" in result.error.evalue
    assert "SIGXCPU" in result.error.evalue
    assert result.duration_s < 5


@pytest.mark.parametrize("level", ["process", "sandbox"])
def test_kernels_exit_when_parent_is_killed(tmp_path: Path, level: str) -> None:
    if level == "sandbox":
        require_sandbox()
    # The parent holds an acquired kernel and is starting its replacement when it is killed.
    script = textwrap.dedent(
        f"""
        import time
        from pal_jupyter.kernels import ExecutorLimits, KernelPool
        pool = KernelPool(ExecutorLimits(warm_imports=(), isolation={level!r}), warm=1)
        kernel = pool.acquire()
        time.sleep(0.3)
        print(kernel.pid, flush=True)
        time.sleep(60)
        """
    )
    # TMPDIR: a killed parent cannot remove its kernels' temp dirs; keep them in tmp_path.
    env = dict(os.environ, PYTHONPATH=str(ROOT), TMPDIR=str(tmp_path))
    parent = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        kernel_pid = int(parent.stdout.readline())  # type: ignore[union-attr]
        launched = [p.pid for p in psutil.Process(parent.pid).children()]
        assert kernel_pid in launched and len(launched) == 2  # acquired + replacement (bwrap, in a sandbox)
        kernels = [p.pid for p in psutil.Process(parent.pid).children(recursive=True)]
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(timeout=5)
        try:
            wait_until(lambda: all(_gone(pid) for pid in kernels), timeout=5)
        except AssertionError:
            pass  # named below, after the survivors are killed
        survivors = [pid for pid in kernels if not _gone(pid)]
        for pid in survivors:
            os.kill(pid, signal.SIGKILL)
        assert survivors == [], "child kernels outlived their SIGKILLed parent by 5 s"
        # Nobody was left to delete their folders; the next pool's start sweeps them.
        left = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("pal-"))
        assert len(left) == 4 and all(f"-{parent.pid}-" in name for name in left), left  # 2 kernels x cwd + ipc
        assert sorted(Path(p).name for p in sweep_leftovers(str(tmp_path))) == left
        assert not [p for p in tmp_path.iterdir() if p.name.startswith("pal-")]
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()


def test_pool_acquire_from_thread_and_close_is_idempotent() -> None:
    pool = KernelPool(ExecutorLimits(warm_imports=()), warm=0)
    box: dict[str, object] = {}

    def worker() -> None:
        kernel = pool.acquire()
        box["result"] = kernel.run("print(1 + 1)")
        box["kernel"] = kernel  # left running on purpose: close() must shut it down

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join(timeout=30)
    assert box["result"].stdout == "2\n"  # type: ignore[attr-defined]
    pool.close()
    pool.close()
    assert not box["kernel"].is_alive()  # type: ignore[attr-defined]
    with pytest.raises(KernelError, match="The kernel pool has been closed."):
        pool.acquire()


def test_kernel_that_cannot_start_raises_kernel_error() -> None:
    # A broken interpreter setup: the kernel exits at once; the error says so and shows why.
    # (A sandbox would not let PYTHONHOME through: its environment is an allow-list.)
    limits = ExecutorLimits(warm_imports=(), isolation="process")
    with pytest.raises(KernelError, match=r"(?s)exited during start-up.*Fatal Python error"):
        ChildKernel(limits, extra_env={"PYTHONHOME": "/nope"})
    broken = {"PYTHONHOME": "/nonexistent"}
    with KernelPool(limits, extra_env=broken) as pool:
        assert pool.wait_warm(timeout_s=60) is False  # a failed start ends the wait at once
        with pytest.raises(KernelError, match="exited during start-up"):
            pool.acquire()


def test_wait_warm_returns_when_the_kernels_are_ready() -> None:
    with KernelPool(ExecutorLimits(warm_imports=()), warm=2) as pool:
        assert pool.wait_warm(timeout_s=120) is True
        assert len(pool._ready) == 2


def test_segfault_is_died_with_program_line(strict_pool: KernelPool) -> None:
    code = "import ctypes\n\ndef crash():\n    return ctypes.string_at(0)\n\ncrash()\n"
    result = strict_pool.run(code)
    assert result.reason is StopReason.DIED
    err = result.error
    assert err is not None and "SIGSEGV" in err.evalue
    assert 'File "program.py", line 4 in crash' in err.traceback  # faulthandler's trace
    assert err.lineno == 4


def test_sweep_keeps_folders_of_live_owners(tmp_path: Path) -> None:
    mine = tmp_path / f"pal-kernel-{os.getpid()}-abc"
    dead = tmp_path / "pal-ipc-999999999-abc"  # no such pid
    other = tmp_path / "pal-kernel-notes"  # not ours to judge
    for folder in (mine, dead, other):
        folder.mkdir()
        (folder / "connection.json").write_text("{}")
    assert sweep_leftovers(str(tmp_path)) == [str(dead)]
    assert mine.exists() and other.exists() and not dead.exists()


def test_deep_recursion_is_collapsed_in_the_traceback(pool: KernelPool) -> None:
    result = pool.run("def down(n):\n    return down(n + 1)\ndown(0)")
    text = result.error.traceback
    assert result.error.ename == "RecursionError"
    assert text.count('File "program.py", line 2, in down') == 3
    assert re.search(r"\[Previous frame repeated \d+ more times\]", text) and len(text) < 2000


def test_per_run_limits_apply_without_a_new_kernel(strict_pool: KernelPool) -> None:
    started = time.monotonic()
    result = strict_pool.run("import time\ntime.sleep(30)", limits=ExecutorLimits(timeout_s=0.5, grace_s=1.0))
    assert result.reason is StopReason.TIMEOUT and "longer than 0.5 s" in result.error.evalue
    assert time.monotonic() - started < 5
    assert strict_pool.run("print(1)").stdout == "1\n"  # the pool's own limits are unchanged


def test_closing_the_pool_under_a_running_program_is_a_kernel_error() -> None:
    pool = KernelPool(ExecutorLimits(warm_imports=()))
    box: dict[str, BaseException] = {}

    running = threading.Event()

    def run() -> None:
        try:
            pool.run("import time\nprint('running', flush=True)\ntime.sleep(60)", on_output=lambda _out: running.set())
        except BaseException as exc:  # what the thread would see
            box["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    assert running.wait(30), "the program never started"
    pool.close()
    thread.join(15)
    assert not thread.is_alive(), "the run went on after its pool was closed"
    # Never a result saying the program's kernel died: nothing went wrong with the program.
    assert isinstance(box.get("error"), KernelError), repr(box.get("error"))
    assert "shut down while the program ran" in str(box["error"])


def test_the_child_kernel_reads_no_ipython_configuration(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    profile = tmp_path / "ipython" / "profile_default"
    (profile / "startup").mkdir(parents=True)
    (profile / "ipython_config.py").write_text(
        "c.InteractiveShellApp.exec_lines = ['FROM_CONFIG = 1']\nc.InteractiveShellApp.extensions = ['pal_jupyter']\n")
    (profile / "startup" / "00-mark.py").write_text("FROM_STARTUP = 1\n")
    startup = tmp_path / "startup.py"
    startup.write_text("FROM_PYTHONSTARTUP = 1\n")
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    monkeypatch.setenv("PYTHONSTARTUP", str(startup))
    with KernelPool(ExecutorLimits(warm_imports=())) as pool:
        code = ("print(sorted(n for n in globals() if n.startswith('FROM_')), "
                "'pal_jupyter' in get_ipython().extension_manager.loaded)")
        assert pool.run(code).stdout == "[] False\n"


def test_a_kernel_whose_parent_is_gone_before_it_starts_ends_by_itself(tmp_path: Path) -> None:
    """A pool may start a kernel just as its owner exits: the launcher's keeper is then an orphan
    from its first moment, and must end (with its kernel) instead of waiting for a parent to die."""
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()  # a pid that was the parent and is no more
    env = {**os.environ, "JPY_PARENT_PID": str(gone.pid), "PYTHONPATH": str(ROOT)}
    keeper = subprocess.Popen([sys.executable, "-m", LAUNCHER, "-f", str(tmp_path / "kernel.json")], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        keeper.wait(timeout=20)  # it ends once it looks (after forking the kernel, which it ends too)
    finally:
        keeper.kill()
    assert keeper.returncode is not None
    # The keeper killed its kernel as it went: nothing with this connection file is left.
    wait_until(lambda: not [p for p in psutil.process_iter(["cmdline"]) if str(tmp_path) in " ".join(p.info["cmdline"] or [])],
               timeout=5, what="the kernel to be gone")


def test_a_process_that_used_kernels_leaves_no_event_loop_open_at_its_exit() -> None:
    """jupyter_client's blocking calls make an asyncio loop per thread that nobody closes; a pool's
    starter thread's loop outlived it (a kernel manager keeps a future of it), and a loop left to the
    interpreter's exit could be finalised after its own sockets: a traceback ("Exception ignored in:
    BaseEventLoop.__del__ ... Invalid file descriptor: -1") at the end of `pal-jupyter ask`. The
    starters close theirs; the command line closes its main thread's (as cli.main does)."""
    script = textwrap.dedent("""
        import asyncio, gc
        from pal_jupyter.kernels import KernelPool, close_thread_loop
        with KernelPool() as pool:
            pool.run_many([("print(1)", {}), ("print(2)", {})])
        close_thread_loop()
        # no gc.collect(): what is left for the interpreter's exit to finalise
        print(sum(isinstance(o, asyncio.AbstractEventLoop) and not o.is_closed() for o in gc.get_objects()))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "0", "event loops left open"
    assert "Exception ignored" not in done.stderr, done.stderr
