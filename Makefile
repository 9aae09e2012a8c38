# Two commands on a fresh machine with python3 and make:  `make run`  and  `make test`.
PYTHON ?= python3
UV_VERSION := 0.13.8
TOOLS := .tools
UV := $(TOOLS)/bin/uv
VENV := .venv
BIN := $(VENV)/bin
TRAIN_VENV := .venv-train
TRAIN_REQUIREMENTS := tests/trainers/requirements.txt
RAW_ROOT ?= data/raw
DATA_ROOT ?= data/curated
PORT ?= 3000

export DAGSTER_HOME := $(CURDIR)/.dagster_home
export UV_PYTHON_DOWNLOADS := never
export UV_PROJECT_ENVIRONMENT := $(CURDIR)/$(VENV)

SIZE ?= 20000
BATCHES ?=
OUT ?= bench

.PHONY: setup trainers run test test-fast ui data bench clean

$(UV):
	$(PYTHON) -m venv $(TOOLS)
	$(TOOLS)/bin/pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)

# Install exactly what uv.lock pins, with the deploy extra (Postgres storage, K8s and Celery run launchers)
# for docs/deploy; bytecode compiled: imports are 2x faster without it here.
$(VENV)/.synced: uv.lock pyproject.toml | $(UV)
	$(UV) sync --frozen --python $(PYTHON) --compile-bytecode --extra deploy
	@touch $@

# The project's own modules compiled too (uv compiles the installed packages only, and PYTHONDONTWRITEBYTECODE
# keeps Python from writing them): every process a run starts imports them 0.2 s sooner. Each is checked against
# its source's hash when imported, so an edited module is never run stale.
setup: $(VENV)/.synced
	@$(BIN)/python -m compileall -q -j 0 --invalidation-mode checked-hash cowork_assets cowork_cli dagster_project

# The trainer test environment (TRL, verl, CPU torch), apart from the project's: built with pip, which finds
# the CPU build of torch on this machine's disk (uv would download a CUDA build); every package pinned.
$(TRAIN_VENV)/.synced: $(TRAIN_REQUIREMENTS)
	rm -rf $(TRAIN_VENV)
	$(PYTHON) -m venv $(TRAIN_VENV)
	$(TRAIN_VENV)/bin/pip install --quiet --disable-pip-version-check $(if $(wildcard /opt/wheels),--find-links /opt/wheels) -r $(TRAIN_REQUIREMENTS)
	@touch $@

trainers: $(TRAIN_VENV)/.synced

$(RAW_ROOT)/manifest.json: | setup
	$(BIN)/cowork-curate generate --out $(RAW_ROOT) --trajectories 300 --batches 3 --seed 7

data: $(RAW_ROOT)/manifest.json

run: setup data
	$(BIN)/cowork-curate run --raw-root $(RAW_ROOT) --data-root $(DATA_ROOT)

# Lint and format are part of the tests: ruff's settings are in pyproject.toml.
test: setup trainers
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q

# The edit loop: lint, then every test that runs no pipeline through Dagster, the CLI or a trainer (`-m e2e` marks
# those: tests/conftest.py). `make test` runs them all.
test-fast: setup
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q -m "not e2e"

bench: setup
	$(BIN)/python -m bench.harness --size $(SIZE) $(if $(BATCHES),--batches $(BATCHES)) --out $(OUT)

ui: setup
	@$(BIN)/python -c "from cowork_cli.runner import ensure_instance; ensure_instance(__import__('pathlib').Path('$(DAGSTER_HOME)'))"
	@echo "Dagster UI on http://127.0.0.1:$(PORT)  (instance: $(DAGSTER_HOME); Ctrl-C to stop)"
	COWORK_RAW_ROOT=$(RAW_ROOT) COWORK_DATA_ROOT=$(DATA_ROOT) $(BIN)/dagster dev -w workspace.yaml -h 127.0.0.1 -p $(PORT)

clean:
	rm -rf data .dagster_home
