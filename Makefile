# Two commands for a newcomer: `make book` and `make test` (see README.md).
# Everything runs inside .venv, created on first use.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PROFILE ?= standard
DEVICE ?= auto
SEED ?= 0
# Paper of the PDFs: a4 or letter.
PAPER ?= a4
# TORCH=cpu (default) never downloads a CUDA build: it takes a local wheel if pip
# is configured with one, else the CPU wheel from PyTorch's CPU index.
# TORCH=cuda installs PyPI's default (CUDA) build; see README "Running on a GPU".
TORCH ?= cpu
TORCH_VERSION ?= 2.13.0
TORCH_CPU_INDEX ?= https://download.pytorch.org/whl/cpu

.PHONY: book book-students pdf pdf-students timings test test-fast lint typecheck _test-fast-part _test-book-part smoke chapter install browser-deps tex-deps gpu-wheels gpu-check-rehearse clean help

help:
	@echo "make book   - execute every chapter (profile=$(PROFILE)) and build _build/html"
	@echo "make test   - lint (ruff), typecheck (mypy) and the whole test suite: the fast and slow tests, and the"
	@echo "              tests on one smoke build of the book (the GPU rehearsal included; markers book, rehearsal, browser)"
	@echo "make test-fast - lint, typecheck and every test but the slow and whole-book ones, on TEST_JOBS=$(TEST_JOBS) workers"
	@echo "make install - create .venv and install the package with its book and test extras (pip install -e \".[book,test]\")"
	@echo "make lint  - ruff over src, tests, benchmarks and scripts (rules and the 120-character line limit: pyproject.toml)"
	@echo "make typecheck - mypy over the library's typed packages, losses/ strictly (pyproject.toml [tool.mypy])"
	@echo "make smoke  - build the book at the smoke profile (minutes on 2 cores)"
	@echo "make book-students - the student edition (no solutions) in _build/html-students"
	@echo "make pdf    - the book, then _build/pdf/: book.pdf, appendix.pdf, one PDF per chapter, typeset by LaTeX (PAPER=$(PAPER))"
	@echo "make pdf-students - the student edition, then _build/pdf-students/ (the same PDFs, no solutions)"
	@echo "make timings - record every chapter's time (smoke, standard) for the README and the rerun boxes"
	@echo "make chapter CHAPTER=c1_rate - execute one chapter (profile=$(PROFILE), device=$(DEVICE), seed=$(SEED))"
	@echo "make browser-deps - install Debian's chromium for the browser tests (needs apt-get and root or sudo; make test runs it)"
	@echo "make tex-deps - install Debian's TeX Live for the PDFs (xelatex, latexmk, xindy; needs root and apt-get)"
	@echo "make gpu-wheels - download into .gpu-wheels/ the wheels an offline GPU machine lacks (README: Running on a GPU)"
	@echo "make gpu-check-rehearse - the GPU check on this CPU, with no download (smoke profile, --device cpu)"
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
	$(BIN)/python -m pip install --quiet -e ".[book,test]"
	@touch $@

install: $(VENV)/.installed

book: $(VENV)/.installed
	$(BIN)/infonce-book build --profile $(PROFILE) --device $(DEVICE) --seed $(SEED)

book-students: $(VENV)/.installed
	$(BIN)/infonce-book build --edition students --profile $(PROFILE) --device $(DEVICE) --seed $(SEED)

# The PDFs are typeset by LaTeX through jupyter-book's own builder from the built site
# (src/infonce_book/pipeline/typeset.py); TeX Live comes from Debian (make tex-deps).
pdf: book tex-deps
	$(BIN)/infonce-book pdf --paper $(PAPER)

pdf-students: book-students tex-deps
	$(BIN)/infonce-book pdf --edition students --paper $(PAPER)

timings: $(VENV)/.installed
	$(BIN)/python benchmarks/chapter_times.py record

smoke: $(VENV)/.installed
	$(BIN)/infonce-book build --profile smoke --device $(DEVICE) --seed $(SEED)

chapter: $(VENV)/.installed
	@test -n "$(CHAPTER)" || { echo "usage: make chapter CHAPTER=<name> [PROFILE=standard DEVICE=auto SEED=0]; chapters:"; $(BIN)/infonce-book chapters; exit 2; }
	$(BIN)/infonce-book run $(CHAPTER) --profile $(PROFILE) --device $(DEVICE) --seed $(SEED)

# The browser tests (tests/pipeline/test_browser*.py) drive Debian's chromium with Playwright. `make test`
# runs this first: it installs chromium where apt-get works (as root, or with password-less sudo);
# elsewhere it warns, the browser tests are skipped, and the test run's last line says how many
# (tests/conftest.py; with CI=true such a skip fails the run).
browser-deps:
	@if command -v chromium >/dev/null 2>&1; then echo "chromium: $$(command -v chromium)"; \
	elif command -v apt-get >/dev/null 2>&1 && { [ "$$(id -u)" = 0 ] || sudo -n true 2>/dev/null; }; then \
	  SUDO=$$([ "$$(id -u)" = 0 ] || echo "sudo -n"); \
	  ($$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null) \
	    || echo "warning: could not install chromium; the browser tests will be skipped"; \
	else echo "warning: chromium not found and apt-get unavailable (or neither root nor sudo); the browser tests will be skipped"; fi

# TeX Live for the PDFs (and tests/pipeline/test_pdf.py, skipped, saying why, without it): Debian's
# packages, without texlive-fonts-extra (1.5 GB; pipeline/sphinx_latex.py stands in for the one
# file of it that jupyter-book's LaTeX class loads, bbm.sty).
TEX_PACKAGES := texlive-latex-recommended texlive-latex-extra texlive-fonts-recommended texlive-xetex latexmk xindy
tex-deps:
	@if command -v xelatex >/dev/null 2>&1 && command -v latexmk >/dev/null 2>&1 && command -v xindy >/dev/null 2>&1 \
	  && kpsewhich amsthm.sty unicode-math.sty ucharclasses.sty tcolorbox.sty >/dev/null 2>&1; then \
	  echo "TeX Live: $$(command -v xelatex), $$(command -v latexmk), $$(command -v xindy)"; \
	elif command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	    $(TEX_PACKAGES) >/dev/null; \
	else echo "error: TeX Live not found and apt-get unavailable (or not root): install $(TEX_PACKAGES)" >&2; exit 1; fi

# A CUDA machine with no network (README "Running on a GPU") runs `python3 scripts/gpu_check.py`
# with its own python3 and CUDA torch; what it lacks travels as wheels in .gpu-wheels/ (ignored by
# git): the project's requirements less torch, downloaded here for its Python (GPU_PYTHON) and
# platform (x86-64 Linux; scripts/gpu_check.py wheels --help for others).
GPU_PYTHON ?= 3.12
gpu-wheels: $(VENV)/.installed
	$(BIN)/python scripts/gpu_check.py wheels --python-version $(GPU_PYTHON) --dest .gpu-wheels

# The same route on this CPU with no registry: smoke profile, --device cpu, every executable page.
gpu-check-rehearse: $(VENV)/.installed
	PIP_NO_INDEX=1 $(BIN)/python scripts/gpu_check.py --rehearse

# The tests that need the whole book (markers book, rehearsal, browser) share one smoke build per
# pytest session (tests/conftest.py: smoke_book; the GPU rehearsal runs on its build), so they run
# in one process; everything else runs on TEST_JOBS pytest-xdist workers (TEST_JOBS=0: one process,
# no xdist). The slow tests (marker slow: subprocess, papermill, torch.compile, distributed and
# kill tests, and the heaviest numerical checks) run in `make test` only. Every test function has a time
# limit (pytest-timeout: 600 s in pyproject.toml; FAST_TIMEOUT in the fast loop, BOOK_TIMEOUT for the whole-book tests).
TEST_JOBS ?= 2
FAST_TIMEOUT ?= 300
BOOK_TIMEOUT ?= 1800
NOT_BOOK := not book and not rehearsal and not browser
FAST_TESTS := $(NOT_BOOK) and not slow

# mypy over the packages library users import, losses/ with the flags of mypy --strict
# (configuration and scope: pyproject.toml [tool.mypy]).
typecheck: $(VENV)/.installed
	$(BIN)/mypy

lint: $(VENV)/.installed
	$(BIN)/ruff check src tests benchmarks scripts

test-fast: lint typecheck
	$(BIN)/python -m pytest -m "$(FAST_TESTS)" -n $(TEST_JOBS) --timeout $(FAST_TIMEOUT) -p no:cacheprovider

# make test: ruff and mypy, then the tests outside the whole book (fast and slow, one process) and
# the whole-book tests (one process, one smoke build) side by side, since the book's half leaves a
# core mostly idle; each one's output is printed when it ends.
test: lint typecheck browser-deps
	@$(MAKE) --no-print-directory tex-deps || echo "warning: no TeX Live; the PDF tests will be skipped"
	@$(MAKE) --no-print-directory -j2 --output-sync=target _test-fast-part _test-book-part

_test-fast-part:
	$(BIN)/python -m pytest -m "$(NOT_BOOK)" -p no:cacheprovider

_test-book-part:
	$(BIN)/python -m pytest -m "not ($(NOT_BOOK))" --timeout $(BOOK_TIMEOUT) -p no:cacheprovider

clean:
	rm -rf _build
