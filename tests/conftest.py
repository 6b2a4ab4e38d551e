"""Shared pytest setup: make the checkout importable without installing the package."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import pytest  # noqa: E402

from html_render import CHROMIUM, CHROMIUM_ARGS, require_chromium  # noqa: E402
from tiny_model import build_tiny_gguf, build_tiny_model  # noqa: E402  (tests/ is on sys.path under pytest)


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random Qwen2 model directory (config.json, safetensors, tokenizer with ChatML)."""
    return build_tiny_model(tmp_path_factory.mktemp("tiny-model"))


@pytest.fixture(scope="session")
def tiny_gguf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same tiny model as a real GGUF file (Q8_0 matrices, tokenizer in the metadata)."""
    return build_tiny_gguf(tmp_path_factory.mktemp("tiny-gguf") / "tiny-qwen2.gguf")


@pytest.fixture
def isolated_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point $PAL_JUPYTER_CACHE at an empty per-test folder.

    Opt-in, never autouse: tests of the real presets must share the machine's cache so the
    1.5B model is converted only once per machine.
    """
    cache = tmp_path / "pal-cache"
    monkeypatch.setenv("PAL_JUPYTER_CACHE", str(cache))
    return cache


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """Headless Debian chromium through Playwright's sync API, one per test session.

    One only: Playwright's sync API cannot start a second instance while one is running.
    Missing chromium skips the test locally and fails it when $CI is set.
    """
    require_chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()
