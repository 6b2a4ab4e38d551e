"""Browser test fixtures: a throwaway Jupyter server and headless Debian chromium.

Reuse them for any test that needs a real JupyterLab 4 or Notebook 7 page (widgets, the
labextension); the helpers they pair with live in jupyter_browser.py. Every test in
tests/browser is marked `browser`; deselect with -m "not browser".

- `jupyter_server`: `jupyter lab` on 127.0.0.1 with a random token, an empty root dir and its own
  config/data/settings/workspace dirs (the labextensions installed in this environment are still
  found: they live under sys.prefix). One per test module.
- `browser` (defined in tests/conftest.py, shared with the examples test): Playwright's chromium
  from /usr/bin/chromium (never `playwright install`).
  Missing chromium skips the tests locally and fails them when $CI is set.
- `page`: a fresh browser context and page per test; a screenshot of its last state goes to
  test-artifacts/<test name>-final.png whatever the outcome; `page.console_lines` keeps the
  page's console warnings and errors.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jupyter_browser import (
    UI_TIMEOUT_MS,
    JupyterServer,
    artifact_name,
    start_jupyter_server,
    stop_jupyter_server,
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.path)).parents:
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="module")
def jupyter_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterServer]:
    """A `jupyter lab` server for one test module; it and its kernels are stopped after."""
    server = start_jupyter_server(tmp_path_factory.mktemp("jupyter"))
    try:
        yield server
    finally:
        stop_jupyter_server(server)




@pytest.fixture
def page(browser: Any, request: pytest.FixtureRequest) -> Iterator[Any]:
    """A fresh page in its own browser context (no shared storage between tests)."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    new_page = context.new_page()
    new_page.set_default_timeout(UI_TIMEOUT_MS)
    console_lines: list[str] = []
    new_page.on(
        "console",
        lambda msg: console_lines.append(f"{msg.type}: {msg.text}") if msg.type in ("warning", "error") else None,
    )
    new_page.console_lines = console_lines  # type: ignore[attr-defined]
    try:
        yield new_page
    finally:
        try:
            new_page.screenshot(path=str(artifact_name(request, "final")), full_page=True)
        except Exception as error:  # noqa: BLE001 - a failed screenshot must not hide the test result
            print(f"screenshot failed: {error}")
        context.close()
