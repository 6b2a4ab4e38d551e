"""`pal-jupyter serve`: the vLLM command it launches, and its errors (fast: no vLLM needed)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from pal_jupyter.classroom.vllm_server import VllmServer, class_instructions, resolve_model, serving_dtype
from pal_jupyter.cli.commands import main
from pal_jupyter.errors import ModelLoadError


@pytest.fixture
def model_dir(tmp_path):
    folder = tmp_path / "my-model"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    return folder


def test_serve_prints_the_vllm_command_for_a_model_directory(model_dir, capsys):
    assert main(["serve", "--model", str(model_dir), "--port", "8123", "--dtype", "bfloat16", "--print-command",
                 "--", "--max-num-seqs", "8"]) == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith("VLLM_CPU_KVCACHE_SPACE=4 ")
    assert (f"-m vllm.entrypoints.openai.api_server --model {model_dir} --served-model-name my-model "
            "--host 127.0.0.1 --port 8123 --max-model-len 4096 --dtype bfloat16 --max-num-seqs 8") in line


def test_serving_a_preset_uses_its_converted_folder_and_the_name_the_class_types(monkeypatch, tmp_path):
    monkeypatch.setattr("pal_jupyter.classroom.vllm_server.prepare_preset",
                        lambda name, dtype: tmp_path / f"converted-{name}-{dtype}")
    assert resolve_model("lite", "bfloat16") == (str(tmp_path / "converted-lite-bfloat16"), "lite")


@pytest.mark.parametrize("native_bf16", [True, False])
def test_a_cpu_server_computes_in_bf16_only_where_the_cpu_has_bf16_units(monkeypatch, model_dir, capsys, native_bf16):
    # vLLM's CPU build emulates bf16 elsewhere: its warm-up alone ran past the 10-minute start-up limit.
    monkeypatch.setattr("pal_jupyter.backends.huggingface.gpu_available", lambda: False)
    monkeypatch.setattr("pal_jupyter.backends.huggingface.cpu_has_bf16", lambda: native_bf16)
    expected = "bfloat16" if native_bf16 else "float32"
    assert serving_dtype() == expected and serving_dtype("float16") == "float16"
    assert main(["serve", "--model", str(model_dir), "--print-command"]) == 0
    assert f"--dtype {expected}" in capsys.readouterr().out


def test_a_hub_id_is_served_from_its_cached_snapshot_and_an_uncached_one_is_refused_before_vllm_starts(
        monkeypatch, tmp_path):
    snapshot = tmp_path / "models--org--tiny" / "snapshots" / "abc123"
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text("{}")
    (tmp_path / "models--org--tiny" / "refs").mkdir()
    (tmp_path / "models--org--tiny" / "refs" / "main").write_text("abc123")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_CACHE", str(tmp_path))
    assert resolve_model("org/tiny") == (str(snapshot), "org/tiny")
    with pytest.raises(ModelLoadError, match=r"^'org/absent' is not a preset \(default, lite\), a model directory "
                                             r"or a Hugging Face id in this machine's cache\."):
        resolve_model("org/absent")


def test_what_cannot_be_served_is_one_clear_line(tmp_path, capsys):
    assert main(["serve", "--model", str(tmp_path), "--print-command"]) == 2
    assert capsys.readouterr().err.strip() == f"pal-jupyter: {tmp_path} is not a model directory (it has no config.json)."
    with pytest.raises(ModelLoadError, match="not the .gguf file"):
        resolve_model(str(tmp_path / "weights.gguf"))


def test_serve_without_vllm_says_how_to_install_it(model_dir, monkeypatch, tmp_path, capsys):
    monkeypatch.delenv("PAL_JUPYTER_VLLM_PYTHON", raising=False)
    monkeypatch.chdir(tmp_path)  # no .venv-vllm here, and this test's Python has no vllm
    assert main(["serve", "--model", str(model_dir)]) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("pal-jupyter: vLLM is not installed where pal-jupyter looks for it.")
    assert "`make vllm`" in error and "--vllm-python" in error and "\n" not in error


def test_a_server_that_dies_at_start_is_an_error_with_the_end_of_its_log(model_dir, tmp_path):
    server = VllmServer(str(model_dir), "my-model", sys.executable, port=1, log_path=tmp_path / "vllm.log")
    server.start()  # this Python has no vllm: the module is missing, and the process exits at once
    with pytest.raises(ModelLoadError, match=r"(?s)vLLM exited with code 1 before it was ready.*No module named 'vllm'"):
        server.wait_ready(timeout_s=60)
    server.stop()


def test_the_class_instructions_name_the_public_host(model_dir):
    server = VllmServer(str(model_dir), "default", "python", host="0.0.0.0", port=8000)
    assert server.source == "openai:default@http://127.0.0.1:8000/v1"
    text = class_instructions(server, public_host="hub.school.example")
    assert "c.TeacherPolicy.model = 'openai:default@http://hub.school.example:8000/v1'" in text


def test_the_hub_configuration_example_points_every_student_at_the_server():
    from traitlets.config.loader import PyFileConfigLoader

    from pal_jupyter.backends.openai_api import parse_source
    from pal_jupyter.classroom.policy import TeacherPolicy

    folder = Path(__file__).resolve().parents[1] / "examples" / "jupyterhub"
    config = PyFileConfigLoader("ipython_config.py", path=str(folder)).load_config()
    policy = TeacherPolicy(config=config)
    assert parse_source(policy.model) == ("default", "http://model-server:8000/v1")
    assert {"model", "isolation"} <= set(policy.locked) and config.PalMagics.server_timeout == 120


def test_the_printed_command_shows_the_cache_size_the_server_will_really_get(monkeypatch):
    server = VllmServer("/models/m", "m", "python", kv_cache_gib=2)
    assert server.shell_command().startswith("VLLM_CPU_KVCACHE_SPACE=2 ")
    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "12")  # the teacher's own setting wins, and is shown
    assert server.shell_command().startswith("VLLM_CPU_KVCACHE_SPACE=12 ")
