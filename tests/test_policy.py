"""TeacherPolicy: loading from traitlets config and real config files, locks, describe()."""

from __future__ import annotations

from pathlib import Path

import pytest
from traitlets import TraitError
from traitlets.config import Config
from traitlets.config.loader import PyFileConfigLoader

from pal_jupyter.errors import PalError, PolicyError
from pal_jupyter.classroom.policy import TeacherPolicy

CONFIG_FILE = """\
c = get_config()  # noqa: F821 - provided by traitlets when it runs this file
c.TeacherPolicy.mode = "tutor"
c.TeacherPolicy.max_hint_level = 2
c.TeacherPolicy.allow_solutions = False
c.TeacherPolicy.max_attempts = 4
c.TeacherPolicy.model = "lite"
c.TeacherPolicy.log_dir = "/srv/class/logs"
c.TeacherPolicy.locked = ["mode", "max_hint_level", "allow_solutions"]
"""


@pytest.fixture
def config_file(tmp_path: Path) -> Path:
    path = tmp_path / "etc" / "ipython" / "ipython_config.py"
    path.parent.mkdir(parents=True)
    path.write_text(CONFIG_FILE)
    return path


@pytest.fixture
def tutor_policy() -> TeacherPolicy:
    config = Config()
    config.TeacherPolicy.mode = "tutor"
    config.TeacherPolicy.max_hint_level = 2
    config.TeacherPolicy.locked = ["mode", "max_hint_level"]
    return TeacherPolicy.from_config(config, sources=["/etc/ipython/ipython_config.py"])


def test_defaults(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PAL_JUPYTER_LOG_DIR", str(tmp_path / "logs"))
    policy = TeacherPolicy()
    assert (policy.mode, policy.max_hint_level, policy.allow_solutions, policy.max_attempts) == ("assist", 3, True, 2)
    assert policy.model == "" and policy.locked == []
    assert policy.log_dir == str(tmp_path / "logs")
    assert policy.effective_hint_cap() == 3 and policy.solutions_allowed
    assert policy.origin("log_dir") == "$PAL_JUPYTER_LOG_DIR"


def test_default_log_dir_without_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("PAL_JUPYTER_LOG_DIR", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert TeacherPolicy().log_dir == str(tmp_path / "pal-jupyter" / "logs")


def test_from_config_object(tutor_policy: TeacherPolicy) -> None:
    assert tutor_policy.mode == "tutor"
    assert tutor_policy.max_hint_level == 2
    assert tutor_policy.allow_solutions is True  # not configured: the default
    assert tutor_policy.origin("mode") == "config" and tutor_policy.origin("allow_solutions") == "default"


def test_from_ipython_config_file(config_file: Path) -> None:
    config = PyFileConfigLoader(config_file.name, path=str(config_file.parent)).load_config()
    policy = TeacherPolicy.from_config(config, sources=[str(config_file)])
    assert (policy.mode, policy.max_hint_level, policy.allow_solutions) == ("tutor", 2, False)
    assert (policy.max_attempts, policy.model, policy.log_dir) == (4, "lite", "/srv/class/logs")
    assert policy.locked == ["mode", "max_hint_level", "allow_solutions"]
    same = TeacherPolicy.from_file(str(config_file))
    assert same.sources == [str(config_file.resolve())]
    for name in policy.setting_names():
        assert getattr(same, name) == getattr(policy, name)


def test_current_reads_the_shell_config() -> None:
    class Shell:
        config = Config({"TeacherPolicy": {"mode": "tutor"}})

    assert TeacherPolicy.current(Shell()).mode == "tutor"


def test_locked_setting_cannot_be_overridden(tutor_policy: TeacherPolicy) -> None:
    with pytest.raises(PolicyError, match="locked by your teacher's policy") as caught:
        tutor_policy.check_override("mode", "assist")
    assert isinstance(caught.value, PalError)  # front ends print it without a traceback
    with pytest.raises(PolicyError):
        tutor_policy.override("max_hint_level", 3)
    assert tutor_policy.mode == "tutor" and tutor_policy.max_hint_level == 2
    assert tutor_policy.check_override("mode", "tutor") == "tutor"  # restating the value is no change


def test_unlocked_setting_can_be_overridden(tutor_policy: TeacherPolicy) -> None:
    assert tutor_policy.check_override("max_attempts", 5) == 5
    tutor_policy.override("max_attempts", 5)
    assert tutor_policy.max_attempts == 5
    assert tutor_policy.origin("max_attempts") == "changed in the notebook"


def test_bad_overrides_are_policy_errors(tutor_policy: TeacherPolicy) -> None:
    with pytest.raises(PolicyError, match="No policy setting"):
        tutor_policy.check_override("mood", "tutor")
    with pytest.raises(PolicyError, match="Invalid value"):
        tutor_policy.check_override("max_attempts", 0)
    with pytest.raises(PolicyError, match="system configuration"):
        tutor_policy.check_override("locked", [])  # the lock list itself is never notebook-settable


def test_lock_holds_against_assignment_and_config_updates(tutor_policy: TeacherPolicy) -> None:
    """What %config does (update_config) is refused as a whole; assignments are refused too."""
    with pytest.raises(PolicyError):
        tutor_policy.mode = "assist"
    with pytest.raises(PolicyError):
        tutor_policy.locked = []
    update = Config({"TeacherPolicy": {"mode": "assist", "max_attempts": 9}})
    with pytest.raises(PolicyError):
        tutor_policy.update_config(update)
    assert tutor_policy.mode == "tutor" and tutor_policy.max_attempts == 2  # rolled back, not half-applied
    tutor_policy.update_config(Config({"TeacherPolicy": {"max_attempts": 9}}))
    assert tutor_policy.max_attempts == 9


def test_config_magic_is_refused(tutor_policy: TeacherPolicy, caplog: pytest.LogCaptureFixture) -> None:
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.configurables.append(tutor_policy)
    try:
        shell.run_line_magic("config", "TeacherPolicy.mode = 'assist'")
    finally:
        shell.configurables.remove(tutor_policy)
    assert tutor_policy.mode == "tutor"
    assert "locked by your teacher's policy" in caplog.text  # IPython's %config logs the error


def test_unknown_locked_name_is_a_config_error() -> None:
    with pytest.raises(TraitError, match="mdoe"):
        TeacherPolicy(config=Config({"TeacherPolicy": {"locked": ["mdoe"]}}))


@pytest.mark.parametrize(("level", "allow", "cap"),
                         [(3, True, 3), (3, False, 2), (2, True, 2), (1, False, 1), (0, True, 0)])
def test_effective_hint_cap(level: int, allow: bool, cap: int) -> None:
    policy = TeacherPolicy(config=Config({"TeacherPolicy": {"max_hint_level": level, "allow_solutions": allow}}))
    assert policy.effective_hint_cap() == cap
    assert policy.solutions_allowed is (cap == 3)


def test_describe(config_file: Path) -> None:
    text = TeacherPolicy.from_file(str(config_file)).describe()
    assert "tutor mode" in text
    assert "max_hint_level   = 2" in text
    assert "locked settings: mode, max_hint_level, allow_solutions" in text
    assert "full solutions: not allowed" in text
    assert "hints up to level 2: code skeleton with blanks" in text
    assert str(config_file.resolve()) in text
    assert "not a security boundary" in text
    assert "student may change" in text  # max_attempts is not locked
    assert "loaded from: built-in defaults" in TeacherPolicy().describe()


def test_every_setting_can_be_locked() -> None:
    """A setting added to the policy but left out of the lock's validator would be silently unlockable."""
    names = [n for n in TeacherPolicy.setting_names() if n != "locked"]
    config = Config()
    config.TeacherPolicy.locked = names
    policy = TeacherPolicy.from_config(config)
    changed = {"mode": "off", "off_message": "x", "max_requests_per_hour": 5, "error_help": "tip", "max_hint_level": 1,
               "allow_solutions": False, "max_attempts": 4, "model": "lite", "log_dir": "/elsewhere",
               "min_agreement": 0.9, "isolation": "process", "readable_paths": ["/srv"], "pack": "/srv/week3.pal-pack.json"}
    assert sorted(changed) == sorted(names)
    for name, value in changed.items():
        with pytest.raises(PolicyError, match="locked"):
            setattr(policy, name, value)
