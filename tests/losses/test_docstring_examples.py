"""The Examples sections of the losses' docstrings run as doctests (their printed values are the
closed forms they name: log(k + 1), log k, log B, log(2B - 1))."""

import doctest

import pytest

from infonce_book.losses import distributed, explicit, in_batch, modules, supervised


@pytest.mark.parametrize("module", [explicit, in_batch, modules, distributed, supervised], ids=lambda m: m.__name__)
def test_docstring_examples_run(module):
    result = doctest.testmod(module, raise_on_error=False, verbose=False)
    assert result.failed == 0
    if module is not distributed:
        assert result.attempted > 0
