import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]

# Tests never show progress bars and never write into the repository's _build by accident.
os.environ.setdefault("INFONCE_BOOK_NO_PROGRESS", "1")


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("INFONCE_BOOK_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("INFONCE_BOOK_LEDGER_DIR", str(tmp_path / "ledger"))
    torch.manual_seed(0)


# CI runs the property tests with a fixed example sequence (reproducible verdicts); local runs
# explore new random examples each time (and keep failures in .hypothesis/).
from hypothesis import settings  # noqa: E402

settings.register_profile("ci", derandomize=True, print_blob=True, deadline=None)
if os.environ.get("CI"):
    settings.load_profile("ci")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """A test that needs the session's smoke build (the ``smoke_book`` fixture, directly or through
    another fixture) is a ``book`` test, marked or not: ``make test-fast`` (``-m "not book ..."``)
    then never builds the book by accident. Runs before pytest deselects by marker."""
    for item in items:
        if "smoke_book" in getattr(item, "fixturenames", ()) and item.get_closest_marker("book") is None:
            item.add_marker(pytest.mark.book)


@dataclass
class SmokeBook:
    build: Path  # the build folder: html/, notebooks/, ledger/, site/, timings.json
    env: dict  # the environment the build ran with (for further CLI calls)

    @property
    def html(self) -> Path:
        return self.build / "html"


@pytest.fixture(scope="session")
def smoke_book(tmp_path_factory) -> SmokeBook:
    """The whole book, executed by papermill at the smoke profile and built with ``-n -W``, once per
    test session (every test marked ``book`` shares it instead of building again)."""
    env = {**os.environ, "INFONCE_BOOK_ROOT": str(ROOT), "INFONCE_BOOK_NO_PROGRESS": "1"}
    env.pop("INFONCE_BOOK_LEDGER_DIR", None)
    env.pop("INFONCE_BOOK_CACHE_DIR", None)
    reuse = os.environ.get("INFONCE_BOOK_TEST_REUSE_BUILD")
    if reuse:  # an aid while iterating on these tests: an existing smoke build folder, not rebuilt
        return SmokeBook(build=Path(reuse).resolve(), env=env)
    build = tmp_path_factory.mktemp("smoke-book") / "_build"
    proc = subprocess.run([sys.executable, "-m", "infonce_book", "build", "--profile", "smoke", "--device",
                           "cpu", "--build-dir", str(build)], env=env, capture_output=True, text=True, cwd=ROOT)
    if proc.returncode != 0:
        pytest.fail(f"the smoke build of the book failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    return SmokeBook(build=build, env=env)


@pytest.fixture(scope="session")
def smoke_students(smoke_book) -> Path:
    """The student edition (no solutions) of the session's smoke build, ``<build>/html-students``,
    built once from its executed chapters (none re-executed) for every test that reads it."""
    proc = subprocess.run([sys.executable, "-m", "infonce_book", "build", "--edition", "students", "--profile",
                           "smoke", "--device", "cpu", "--build-dir", str(smoke_book.build)],
                          env=smoke_book.env, capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert " ran " not in proc.stderr  # every chapter was reused, none executed again
    return smoke_book.build / "html-students"


# A test group skipped for want of a browser must not hide behind a green line: the run's LAST line
# says how many browser tests were skipped and why, and under CI (CI=true, where `.ci/run` installs
# chromium first) such a skip fails the run.
_NO_BROWSER = ("chromium", "playwright")


def _browser_skips(terminalreporter) -> list[str]:
    reasons = []
    for rep in terminalreporter.stats.get("skipped", []):
        longrepr = getattr(rep, "longrepr", None)
        reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr or "")
        if any(word in reason.lower() for word in _NO_BROWSER):
            reasons.append(reason)
    return reasons


def pytest_sessionfinish(session, exitstatus):
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skips = _browser_skips(reporter) if reporter is not None else []
    session.config._infonce_browser_skips = skips
    if skips and os.environ.get("CI", "").lower() in ("1", "true", "yes") and session.exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_unconfigure(config):
    skips = getattr(config, "_infonce_browser_skips", [])
    if skips:
        why = "no chromium" if any("chromium" in r.lower() for r in skips) else "no playwright"
        ci = " (CI: this fails the run)" if os.environ.get("CI", "").lower() in ("1", "true", "yes") else ""
        print(f"\n{len(skips)} browser tests skipped: {why}; `make browser-deps` installs chromium{ci}")
