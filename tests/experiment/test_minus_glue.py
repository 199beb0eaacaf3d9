"""Glued negative numbers print with the minus sign U+2212, book-wide (the Sphinx extension)."""

from pathlib import Path

import yaml

from infonce_book.experiment import minus_glue
from infonce_book.experiment.prose import minus_sign, number

ROOT = Path(__file__).resolve().parents[2]


def test_myst_nb_glue_formatter_prints_the_minus_sign(monkeypatch):
    from myst_nb.core import variables
    from myst_nb.ext.glue import crossref, roles

    for module in (variables, roles, crossref):  # undone after the test
        monkeypatch.setattr(module, "format_plain_text", module.format_plain_text)
    assert roles.format_plain_text("-0.22803", ".3f") == "-0.228"  # myst-nb alone: a hyphen
    minus_glue.setup(None)
    minus_glue.setup(None)  # twice: wrapped once
    assert roles.format_plain_text("-0.22803", ".3f") == "\u22120.228"
    assert crossref.format_plain_text("-3", "") == "\u22123"
    assert roles.format_plain_text("0.5", ".1f") == "0.5" and roles.format_plain_text("1e-05", "") == "1e-05"
    assert roles.format_plain_text("-12345", ",d") == "\u221212,345"


def test_the_book_loads_the_extension():
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    assert "infonce_book.experiment.minus_glue" in config["sphinx"]["extra_extensions"]


def test_minus_sign_leaves_hyphens_that_are_not_minus_signs():
    assert minus_sign("C6-pac-bayes-k-uniform-tau0.5-n2048") == "C6-pac-bayes-k-uniform-tau0.5-n2048"
    assert minus_sign("interval -0.052 to 0.176, ratio 2-3") == "interval \u22120.052 to 0.176, ratio 2-3"
    assert number(-1.5, "g") == "\u22121.5" and number(2, "d") == "2"
