"""Every public docstring example of the package runs as a doctest (README "Development"): a
docstring with an ``Examples:`` section must hold at least one ``>>>`` line, and every example in
every module must give the output its docstring prints."""

import ast
import doctest
import importlib
import pkgutil
from pathlib import Path

import pytest

import infonce_book

PKG = Path(infonce_book.__file__).resolve().parent
MODULES = sorted(m.name for m in pkgutil.walk_packages([str(PKG)], prefix="infonce_book.")
                 if not m.name.endswith("__main__"))  # a __main__ runs its command when imported


@pytest.mark.parametrize("name", MODULES)
def test_the_examples_of_the_module_run(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, raise_on_error=False, verbose=False, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples of {name} failed"


def test_every_examples_section_holds_a_doctest():
    bad = []
    for path in sorted(PKG.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Module)):
                doc = ast.get_docstring(node) or ""
                if "Examples:" in doc and ">>>" not in doc.split("Examples:", 1)[1]:
                    bad.append(f"{path.relative_to(PKG)}:{getattr(node, 'lineno', 1)}")
    assert not bad, "an Examples: section without a runnable example:\n" + "\n".join(bad)


def test_the_package_has_examples_to_run():
    attempted = sum(doctest.testmod(importlib.import_module(n), report=False, verbose=False).attempted
                    for n in MODULES if n.startswith(("infonce_book.losses", "infonce_book.theory")))
    assert attempted >= 30
