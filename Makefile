# Set-up and everyday commands. `make demo` and `make test` work on a fresh machine: each
# creates the virtual environment in $(VENV) when it is missing and installs what it needs.

VENV ?= .venv
PYTHON ?= python3
# The CPU wheel that our machines carry on disk; set TORCH_SPEC="torch>=2.4,<2.14" elsewhere.
TORCH_SPEC ?= torch==2.13.0
QUESTION ?= If a train travels 60 mph for 2.5 hours, how far does it go?
PYTEST_ARGS ?=

BIN := $(VENV)/bin
STAMP := $(VENV)/.pal-jupyter-installed

.PHONY: demo test test-fast bench system-deps clean-venv

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet "$(TORCH_SPEC)"
	$(BIN)/python -m pip install --quiet -e ".[test,model-default]"
	touch $@

demo: $(STAMP)  ## answer a sample question end to end with the embedded default model
	HF_HUB_OFFLINE=1 $(BIN)/pal-jupyter ask "$(QUESTION)"

test: $(STAMP) system-deps  ## the whole test suite: default-model, sandbox and browser tests included
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest $(PYTEST_ARGS)

# Browser tests drive Debian's chromium through Playwright (never `playwright install`); the
# sandbox is bubblewrap. Both come from Debian's packages, installed when missing and we are root.
system-deps:
	@missing=""; [ -x /usr/bin/chromium ] || missing="$$missing chromium"; \
	command -v bwrap >/dev/null || missing="$$missing bubblewrap"; \
	if [ -z "$$missing" ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	else echo "note: missing$$missing (sudo apt-get install$$missing); those tests will be skipped"; fi

test-fast: $(STAMP)  ## everything but the packaged model and the browser (real kernels and tiny models included)
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest -m "not slow and not browser" $(PYTEST_ARGS)

bench: $(STAMP)  ## 50 GSM8K test questions with the default model
	HF_HUB_OFFLINE=1 $(BIN)/pal-jupyter bench --data ../shared/data/gsm8k/test.jsonl --limit 50

clean-venv:
	rm -rf $(VENV)
