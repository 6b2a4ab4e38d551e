"""NotebookRuntime on its own (a real in-process IPython shell, no kernel): how a cell's options,
the user's defaults and the teacher's policy become one Request, and the warm pool's reuse."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from IPython.core.interactiveshell import InteractiveShell
from traitlets.config import Config

from pal_jupyter.classroom.policy import TeacherPolicy
from pal_jupyter.engine.options import OPTIONS
from pal_jupyter.errors import PalError, PolicyError
from pal_jupyter.notebook.magics import PalMagics
from pal_jupyter.notebook.runtime import TUTOR_MIN_SAMPLES, NotebookRuntime


def cell(**given):
    """The parsed options of a %%pal cell: None where the cell does not set one."""
    return SimpleNamespace(**{**{name: None for name in OPTIONS}, "use": [], "tutor": False, "assist": False,
                              "check": False, **given})


@pytest.fixture
def runtime():
    shell = InteractiveShell.instance()
    magics = PalMagics(shell)
    yield magics.runtime
    magics.runtime.close()


def with_policy(runtime: NotebookRuntime, **settings) -> NotebookRuntime:
    config = Config()
    for name, value in settings.items():
        setattr(config.TeacherPolicy, name, value)
    runtime.policy = TeacherPolicy.from_config(config, sources=["/etc/jupyter/jupyter_server_config.py"])
    return runtime


def test_a_cells_options_override_the_defaults_and_the_rest_stay(runtime):
    runtime.defaults.samples = 3
    request = runtime.resolve(cell(timeout=7.0), "How far?")
    assert (request.settings.samples, request.settings.timeout) == (3, 7.0)
    assert request.settings.max_attempts == OPTIONS["max_attempts"].default and request.mode == "assist"


def test_tutor_mode_cross_checks_with_at_least_three_programs(runtime):
    request = runtime.resolve(cell(tutor=True, method="vote", samples=1), "How far?")
    assert request.mode == "tutor" and request.settings.samples == TUTOR_MIN_SAMPLES
    careful = runtime.resolve(cell(tutor=True, samples=0), "How far?")  # its two views cross-check already
    assert careful.settings.method == "careful" and careful.settings.samples == 0


def test_contradicting_modes_are_one_line(runtime):
    with pytest.raises(PalError, match="--check checks your own code in the cell; it does not go with --tutor"):
        runtime.resolve(cell(check=True, tutor=True), "Q")


def test_a_locked_policy_setting_refuses_the_cells_value(runtime):
    with_policy(runtime, model="lite", locked=["model"])
    assert runtime.resolve(cell(), "Q").settings.model == "lite"
    with pytest.raises(PolicyError, match="model"):
        runtime.resolve(cell(model="default"), "Q")


def test_a_bad_policy_value_names_the_policy_file(runtime):
    with_policy(runtime, max_attempts=12)
    with pytest.raises(PolicyError, match=r"jupyter_server_config\.py sets TeacherPolicy\.max_attempts = 12.*"
                                          r"max_attempts must be a whole number from 1 to 10"):
        runtime.settings()


def test_the_teachers_readable_paths_come_first_and_the_cells_add_to_them(runtime, tmp_path):
    data, more = tmp_path / "data", tmp_path / "more"
    data.mkdir()
    more.mkdir()
    with_policy(runtime, readable_paths=[str(data)])
    assert runtime.resolve(cell(readable=str(more)), "Q").settings.readable_paths == tuple(sorted([str(data), str(more)]))


def test_the_warm_pool_is_kept_for_a_new_timeout_and_replaced_for_new_memory(runtime):
    settings = runtime.settings()
    pool = runtime.pool(settings)
    assert runtime.pool(settings.updated({"timeout": 5.0})) is pool  # a per-run limit
    bigger = runtime.pool(settings.updated({"memory_gib": 3.0}))
    assert bigger is not pool
    with pytest.raises(Exception, match="closed"):  # the old one was closed, not left running
        pool.acquire()
