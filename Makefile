# Two commands for a newcomer: `make book` and `make test` (see README.md).
# Everything runs inside .venv, created on first use.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PROFILE ?= standard
DEVICE ?= auto
SEED ?= 0
# TORCH=cpu (default) never downloads a CUDA build: it takes a local wheel if pip
# is configured with one, else the CPU wheel from PyTorch's CPU index.
# TORCH=cuda installs PyPI's default (CUDA) build; see README "Running on a GPU".
TORCH ?= cpu
TORCH_VERSION ?= 2.13.0
TORCH_CPU_INDEX ?= https://download.pytorch.org/whl/cpu

.PHONY: book book-students pdf timings test smoke chapter install browser-deps clean help

help:
	@echo "make book   - execute every chapter (profile=$(PROFILE)) and build _build/html"
	@echo "make test   - lint (ruff) and run the whole test suite (includes a smoke build of the book)"
	@echo "make smoke  - build the book at the smoke profile (minutes on 2 cores)"
	@echo "make book-students - the student edition (no solutions) in _build/html-students"
	@echo "make pdf    - the book, then _build/pdf/book.pdf and one PDF per chapter (needs chromium: make browser-deps)"
	@echo "make timings - record every chapter's time (smoke, standard) for the README and the rerun boxes"
	@echo "make chapter CHAPTER=c1_rate - execute one chapter (profile=$(PROFILE), device=$(DEVICE), seed=$(SEED))"
	@echo "make browser-deps - install Debian's chromium for tests/test_browser.py (needs root and apt-get)"
	@echo "make clean  - remove _build"

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: $(BIN)/python pyproject.toml
	@if ! $(BIN)/python -c "import torch" 2>/dev/null; then \
	  if [ "$(TORCH)" = "cuda" ]; then \
	    $(BIN)/python -m pip install "torch==$(TORCH_VERSION)"; \
	  else \
	    $(BIN)/python -m pip install --no-index --no-deps "torch==$(TORCH_VERSION)" 2>/dev/null || \
	    $(BIN)/python -m pip install "torch==$(TORCH_VERSION)" --index-url $(TORCH_CPU_INDEX); \
	  fi; \
	fi
	$(BIN)/python -m pip install --quiet -e ".[test]"
	@touch $@

install: $(VENV)/.installed

book: $(VENV)/.installed
	$(BIN)/infonce-book build --profile $(PROFILE) --device $(DEVICE) --seed $(SEED)

book-students: $(VENV)/.installed
	$(BIN)/infonce-book build --edition students --profile $(PROFILE) --device $(DEVICE) --seed $(SEED)

# PDFs are printed from the HTML build with chromium (see src/infonce_book/pipeline/pdf.py).
pdf: book
	$(BIN)/infonce-book pdf

timings: $(VENV)/.installed
	$(BIN)/infonce-book timings record

smoke: $(VENV)/.installed
	$(BIN)/infonce-book build --profile smoke --device $(DEVICE) --seed $(SEED)

chapter: $(VENV)/.installed
	@test -n "$(CHAPTER)" || { echo "usage: make chapter CHAPTER=<name> [PROFILE=standard DEVICE=auto SEED=0]; chapters:"; $(BIN)/infonce-book chapters; exit 2; }
	$(BIN)/infonce-book run $(CHAPTER) --profile $(PROFILE) --device $(DEVICE) --seed $(SEED)

# The browser test (tests/test_browser.py) drives Debian's chromium with Playwright; it is
# skipped, saying why, when no chromium is found. This installs it where apt-get can.
browser-deps:
	@if command -v chromium >/dev/null 2>&1; then echo "chromium: $$(command -v chromium)"; \
	elif command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
	    || echo "warning: could not install chromium; tests/test_browser.py will be skipped"; \
	else echo "warning: chromium not found and apt-get unavailable (or not root); tests/test_browser.py will be skipped"; fi

test: $(VENV)/.installed
	$(BIN)/ruff check src tests
	$(BIN)/python -m pytest

clean:
	rm -rf _build
