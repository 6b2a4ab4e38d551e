"""Every option declared once (``engine/options.py``): Settings, its checks, and solve() taking it."""

from __future__ import annotations

import dataclasses

import pytest

from pal_jupyter import ScriptedBackend, solve
from pal_jupyter.engine.options import OPTIONS, Settings
from pal_jupyter.errors import SettingError


def test_settings_has_exactly_the_declared_options_with_their_defaults():
    fields = {f.name: f.default for f in dataclasses.fields(Settings)}
    assert fields == {name: option.default for name, option in OPTIONS.items()}


@pytest.mark.parametrize(("name", "value", "message"), [
    ("samples", -1, "samples must be a whole number from 0 to 16"),
    ("method", "guess", "method must be one of careful, vote"),
    ("max_attempts", 11, "max_attempts must be a whole number from 1 to 10"),
    ("second_opinion", "loud", "second_opinion must be one of words, look, off"),
    ("memory_gib", 1, "memory_gib must be a number from 1.5 to 4096"),
    ("readable", "/", "Readable path '/' refused: / is the whole filesystem"),
])
def test_each_value_is_checked_by_its_declaration(name, value, message):
    with pytest.raises(SettingError, match=message):
        Settings(**{name: value})
    with pytest.raises(SettingError, match=message):
        Settings().updated({name: value})


def test_updated_leaves_unset_values_and_derives_generation_and_limits():
    settings = Settings().updated({"samples": 3, "timeout": 7, "temperature": None, "seed": 4})
    assert (settings.samples, settings.max_attempts) == (3, OPTIONS["max_attempts"].default)
    assert settings.generation().seed == 4 and settings.limits().timeout_s == 7


def test_solve_takes_settings_and_keyword_options_checked_the_same_way():
    model = ScriptedBackend([])
    with pytest.raises(SettingError, match="samples must be a whole number from 0 to 16"):
        solve("Q", model=model, samples=-1)
    with pytest.raises(SettingError, match="samples 0 leaves the vote method no program"):
        solve("Q", model=model, method="vote", samples=0)
    with pytest.raises(SettingError, match="max_programs must be a whole number from 1 to 48"):
        solve("Q", Settings(samples=2), model=model, max_programs=0)
    with pytest.raises(TypeError, match="unknown option.* sampels"):
        solve("Q", model=model, sampels=5)
    assert model.calls == []  # all refused before the model is asked anything


def test_a_limit_given_as_a_keyword_option_applies_to_the_programs():
    from pal_jupyter import KernelPool
    from pal_jupyter.kernels import ExecutorLimits

    model = ScriptedBackend(["```python\nwhile True:\n    pass\n```"])
    with KernelPool(ExecutorLimits(warm_imports=(), timeout_s=60)) as pool:
        session = solve("Loop", model=model, executor=pool, method="vote", samples=1, max_attempts=1, timeout=1.0)
    assert session.programs[0].error_type == "Timeout"
    assert "longer than 1 s" in session.programs[0].execution.error.evalue
