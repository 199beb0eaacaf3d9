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

.PHONY: book book-students pdf pdf-students timings test test-fast _test-fast-part _test-book-part smoke chapter install browser-deps gpu-wheels gpu-check-rehearse clean help

help:
	@echo "make book   - execute every chapter (profile=$(PROFILE)) and build _build/html"
	@echo "make test   - lint (ruff) and run the whole test suite: test-fast, then the tests on one smoke build"
	@echo "              of the book (the GPU rehearsal included; markers book, rehearsal, browser)"
	@echo "make test-fast - lint and every test but the whole-book ones, on TEST_JOBS=$(TEST_JOBS) workers (minutes)"
	@echo "make smoke  - build the book at the smoke profile (minutes on 2 cores)"
	@echo "make book-students - the student edition (no solutions) in _build/html-students"
	@echo "make pdf    - the book, then _build/pdf/: book.pdf, appendix.pdf, one PDF per chapter (PAPER=$(PAPER); needs chromium: make browser-deps)"
	@echo "make pdf-students - the student edition, then _build/pdf-students/ (the same PDFs, no solutions)"
	@echo "make timings - record every chapter's time (smoke, standard) for the README and the rerun boxes"
	@echo "make chapter CHAPTER=c1_rate - execute one chapter (profile=$(PROFILE), device=$(DEVICE), seed=$(SEED))"
	@echo "make browser-deps - install Debian's chromium for the browser tests (needs apt-get and root or sudo; make test runs it)"
	@echo "make gpu-wheels - download into .gpu-wheels/ the wheels an offline GPU machine lacks (README: Running on a GPU)"
	@echo "make gpu-check-rehearse - the offline GPU check on this CPU, with no download (smoke profile)"
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

# PDFs are printed from the HTML build with chromium (see src/infonce_book/pipeline/pdf.py).
pdf: book
	$(BIN)/infonce-book pdf --paper $(PAPER)

pdf-students: book-students
	$(BIN)/infonce-book pdf --edition students --paper $(PAPER)

timings: $(VENV)/.installed
	$(BIN)/infonce-book timings record

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

# The offline GPU machine (README "Running on a GPU") runs `bash scripts/gpu_check.sh` with its own
# python3; what that lacks travels as wheels in .gpu-wheels/ (ignored by git), downloaded here for
# its interpreter (CPython $(GPU_PYTHON), x86-64 Linux) at the versions installed in .venv.
GPU_PYTHON ?= 3.12
gpu-wheels: $(VENV)/.installed
	@$(BIN)/python -c "import info_nce" 2>/dev/null || $(BIN)/python -m pip install --quiet -e ".[bench]"
	$(BIN)/python scripts/gpu_check.py wheels --python-version $(GPU_PYTHON) --dest .gpu-wheels

# The same route on this CPU machine with no registry: smoke profile, --device cpu.
gpu-check-rehearse: $(VENV)/.installed
	PIP_NO_INDEX=1 bash scripts/gpu_check.sh --rehearse

# The tests that need the whole book (markers book, rehearsal, browser) share one smoke build per
# pytest session (tests/conftest.py: smoke_book; the GPU rehearsal reuses its experiment cache), so
# they run in one process; everything else runs on TEST_JOBS pytest-xdist workers (TEST_JOBS=0: one
# process, no xdist).
TEST_JOBS ?= 2
FAST_TESTS := not book and not rehearsal and not browser

test-fast: $(VENV)/.installed
	$(BIN)/ruff check src tests benchmarks scripts
	$(BIN)/python -m pytest -m "$(FAST_TESTS)" -n $(TEST_JOBS)

# make test: ruff, then the fast tests (one process) and the whole-book tests (one process, one
# smoke build) side by side, since the book's half leaves a core mostly idle; each one's output is
# printed when it ends.
test: $(VENV)/.installed browser-deps
	$(BIN)/ruff check src tests benchmarks scripts
	@$(MAKE) --no-print-directory -j2 --output-sync=target _test-fast-part _test-book-part

_test-fast-part:
	$(BIN)/python -m pytest -m "$(FAST_TESTS)" -p no:cacheprovider

_test-book-part:
	$(BIN)/python -m pytest -m "not ($(FAST_TESTS))" -p no:cacheprovider

clean:
	rm -rf _build
