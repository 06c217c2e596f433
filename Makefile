PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DATA ?= ../shared/bench-data
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: install test demo bench sessbench lint clean

install: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -c constraints.txt -e '.[dev,st,ladybug,postgres]'
	touch $(STAMP)

# Two workers for two cores: most tests wait on processes they start (hooks, owners, a
# PostgreSQL server), so one worker left a core idle half the time (10+ min; 8 min with two).
test: install
	$(BIN)/python -m pytest -q -p no:cacheprovider -n 2

demo: install
	bash scripts/demo.sh

bench: install
	$(BIN)/python bench/bench_store.py
	$(BIN)/python bench/bench_hooks.py
	$(BIN)/python bench/bench_retrieval.py --data $(DATA)

# Real agent sessions replayed through the installed hooks (~12 min on 2 cores): the two shared
# projects, then the three in bench/sessions; then the prompt hook's relevance floor against them.
SESSBENCH := ../shared/sessbench
sessbench: install
	$(BIN)/python $(SESSBENCH)/replay.py spotter entire-cli --owner-idle 5
	$(BIN)/python $(SESSBENCH)/score.py spotter entire-cli
	$(BIN)/python $(SESSBENCH)/replay.py ida-hcli napoli dndsheets --corpus bench/sessions --owner-idle 5
	$(BIN)/python $(SESSBENCH)/score.py ida-hcli napoli dndsheets --corpus bench/sessions
	$(BIN)/python bench/inject_floor.py

lint: install
	$(BIN)/ruff check graphmem tests bench
	$(BIN)/mypy graphmem

clean:
	rm -rf $(VENV) build *.egg-info
