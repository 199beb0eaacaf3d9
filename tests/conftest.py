import os

import pytest
import torch

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
