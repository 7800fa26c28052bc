# Two entry points for a fresh machine (see README): `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet --editable '.[test]'
	touch $(STAMP)

.PHONY: install demo test test-fast lint bench qualify mutate
install: $(STAMP)

demo: $(STAMP)
	$(PY) -m obelisk_session_evidence demo

# OBELISK_RECALL_GATE=1: the evaluation corpus and real-obelisk-formats must reach recall 0.95 with 0 false items.
test: $(STAMP)
	OBELISK_RECALL_GATE=1 $(PY) -m pytest -q
	$(PY) -m mypy
	$(PY) -m ruff check provider tests tools
	$(PY) tools/mutate

# The fast tier (pure functions, in-memory databases): under a minute, for every change.
test-fast: $(STAMP)
	$(PY) -m pytest -q tests/unit

# The listed mutations of the security modules (about 80 s on 2 busy cores); every one must fail a test.
mutate: $(STAMP)
	$(PY) tools/mutate

bench: $(STAMP)
	$(PY) tools/bench

qualify: $(STAMP)
	$(PY) tools/qualify
