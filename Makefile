# Every target sets itself up: a fresh machine needs only python3 (>= 3.10) and make.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
PORT ?= 8501
HOST ?= localhost
DATA ?=

.PHONY: install test test-fast test-pandas2 dashboard bench docs lint clean sample-models

# Bytecode caches (__pycache__, gitignored) are written by every target, even where the shell sets
# PYTHONDONTWRITEBYTECODE: pip installs with --no-compile (compiling all of torch, Ray, SciPy and
# the rest up front took 75 s of a 131 s install), then levy_dashboard.server.precompile imports what the
# dashboard and a fit run, once (about 14 s), so that the first `make dashboard` does not compile
# it; without the caches every process would compile what it imports again (each test worker's
# collection 9.3 s instead of 5.7 s)
export PYTHONDONTWRITEBYTECODE =

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet --no-compile -c constraints.txt -e ".[dashboard,test,ray,docs]"
	$(BIN)/python -m levy_dashboard.server.precompile
	touch $(STAMP)

install: $(STAMP)

## make test: lint, then the whole suite (unit, statistical, dashboard AppTest, browser e2e when Chromium is there)
## on TEST_WORKERS pytest-xdist workers (one intra-op thread each; tests/conftest.py keeps each test file,
## and the browser tests together, on one worker); TEST_WORKERS=0 runs it in this one process
TEST_WORKERS ?= 2
PYTEST := $(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadgroup

test: $(STAMP)
	$(BIN)/ruff check .
	$(PYTEST)

## make test-pandas2: the data, forecast, pipeline and serving tests under pandas 2 in a second environment
## (pyproject allows pandas >= 2.0, the pinned one is pandas 3: a date-time past 292 years, an all-missing
## Parquet column and 17-digit decimals read a unit off broke only under pandas 2, and benchmarks/anchors.py's
## extras need pandas < 3)
PANDAS2_VENV ?= .venv-pandas2

test-pandas2:
	$(PYTHON) -m venv $(PANDAS2_VENV)
	grep -v '^pandas==' constraints.txt > $(PANDAS2_VENV)/constraints.txt
	$(PANDAS2_VENV)/bin/python -m pip install --quiet --no-compile -c $(PANDAS2_VENV)/constraints.txt \
		"pandas>=2.2,<3" -e . pytest pytest-xdist hypothesis
	$(PANDAS2_VENV)/bin/python -c "import pandas; assert pandas.__version__ < '3', pandas.__version__"
	# the Ray and browser extras are the main environment's to require (CI): here they skip
	LEVY_REQUIRE_RAY= LEVY_REQUIRE_BROWSER= $(PANDAS2_VENV)/bin/python -m pytest -q -n $(TEST_WORKERS) \
		--dist loadgroup -p no:cacheprovider tests/data tests/forecast tests/pipeline tests/serving

## make test-fast: the same without the slow (training, statistical), browser and whole-program tests
## (the app run end to end, other processes: `pytest -m integration` runs those alone)
test-fast: $(STAMP)
	$(PYTEST) -m "not slow and not e2e and not integration"

## make dashboard: start the app on the bundled sample data (http://localhost:$(PORT)); it listens on
## localhost only unless HOST=0.0.0.0 (then anyone who can reach the port can upload data and start fits)
dashboard: $(STAMP)
	$(BIN)/levy dashboard $(DATA) --port $(PORT) --host $(HOST)

## make sample-models: retrain the models shipped for the bundled samples (sample_data/models/, one recorded
## `levy fit` command each, seed 0, one thread; a few minutes) — `make dashboard` opens them with no fit
sample-models: $(STAMP)
	$(BIN)/python sample_data/make_models.py

## make bench: the benchmark tables quoted in the README
bench: $(STAMP)
	$(BIN)/python benchmarks/operator.py

## make docs: the documentation site (MkDocs + Material + mkdocstrings) built strictly into site/
docs: $(STAMP)
	$(BIN)/mkdocs build --strict --site-dir site

lint: $(STAMP)
	$(BIN)/ruff check .

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis site
