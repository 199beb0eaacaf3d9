"""The layout's rules (README, "Layout"), checked on the source tree.

1. Imports go one way, down the layers; no cycles; no package import hidden inside a function.
2. One chapter = ``book/<stem>.md`` + the package ``chapters/<stem>/`` + ``tests/chapters/test_<stem>.py``
   + a line in ``_toc.yml``, which is the one list of chapters (``experiment.toc.chapter_stems``).
3. One model interface: no ``isinstance`` or model-name dispatch outside ``models/``.
4. One uncertainty type: the normal and t quantiles are formed in ``theory/stats.py`` only.
5. A chapter's models are constructed once, in one visible cell of its page; runners take them.
6. Labels carry their page's prefix, and none of ``tests/data/labels.txt`` disappears.
7. ruff (pyflakes, import order, no unneeded ``# noqa``) passes on ``src`` and ``tests``.
8. Modules of one idea: none over 500 lines (data tables excepted), no function over 80 lines of code
   (its docstring not counted).
9. README "Layout" names exactly the package's subpackages and top-level modules.
(That ``theory``, ``models`` and ``losses`` import no notebook or plotting tool is checked in a fresh
interpreter by ``tests/theory/test_lean_import.py`` and ``tests/losses/test_lean_import.py``.)
"""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path

import jupytext
import pytest

from infonce_book.models import MODELS

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "src" / "infonce_book"

# Bottom (0) to top. A module may import from its own layer or a lower one. ``testing`` sits
# above ``pipeline`` (its bad-input table exercises the command line); the pipeline never
# imports it.
LAYERS = {"utils": 0, "losses": 1, "theory": 2, "models": 3, "learning": 4, "datasets": 5, "experiment": 6,
          "chapters": 7, "pipeline": 8, "testing": 9, "__main__": 10, "__init__": -1}
# Every registered model class (a new model is under the rules as soon as it registers itself).
MODEL_CLASSES = {cls.__name__ for cls in MODELS.values()}


def _modules() -> dict[str, Path]:
    out = {}
    for p in sorted(PKG.rglob("*.py")):
        rel = p.relative_to(PKG).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(["infonce_book", *parts])] = p
    return out


MODULES = _modules()


def _layer(module: str) -> int:
    parts = module.split(".")
    if len(parts) == 1:
        return LAYERS["__init__"]
    return LAYERS[parts[1]]


def _resolve(module: str, path: Path, node: ast.ImportFrom) -> list[str]:
    """The infonce_book modules an ``ImportFrom`` node imports (a package's names may be modules)."""
    if node.level:
        base = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        target = ".".join(base + ([node.module] if node.module else []))
    else:
        target = node.module or ""
    if not target.startswith("infonce_book"):
        return []
    out = []
    for alias in node.names:
        sub = f"{target}.{alias.name}"
        out.append(sub if sub in MODULES else target)
    return out


def _imports(module: str, path: Path):
    """``(imported module, is at module level, line)`` for every infonce_book import of a module."""
    tree = ast.parse(path.read_text())
    top = set(map(id, tree.body))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            for target in _resolve(module, path, node):
                yield target, id(node) in top, node.lineno
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("infonce_book"):
                    yield alias.name, id(node) in top, node.lineno


def test_imports_go_down_the_layers():
    bad = []
    for module, path in MODULES.items():
        if module == "infonce_book":
            continue
        for target, _, line in _imports(module, path):
            if target == "infonce_book":  # the version only
                continue
            if _layer(target) > _layer(module):
                bad.append(f"{path.relative_to(ROOT)}:{line} imports {target} (a higher layer)")
    assert not bad, "\n".join(bad)


def test_the_pipeline_never_imports_testing_and_chapters_never_import_the_pipeline():
    for module, path in MODULES.items():
        targets = {t for t, _, _ in _imports(module, path)}
        if module.startswith("infonce_book.pipeline"):
            assert not any(t.startswith("infonce_book.testing") for t in targets), module
        if module.startswith("infonce_book.chapters"):
            assert not any(t.startswith("infonce_book.pipeline") for t in targets), module


def test_there_is_no_import_cycle():
    graph = {m: {t for t, top, _ in _imports(m, p) if top and t != m} for m, p in MODULES.items()}
    state, stack = {}, []

    def visit(m):
        state[m] = "open"
        stack.append(m)
        for t in graph.get(m, ()):
            if t == "infonce_book":
                continue
            if state.get(t) == "open":
                raise AssertionError("import cycle: " + " -> ".join(stack[stack.index(t):] + [t]))
            if t not in state:
                visit(t)
        stack.pop()
        state[m] = "done"

    for m in graph:
        if m not in state:
            visit(m)


#: Modules allowed to import the package inside a function (with a comment saying why): the command
#: line, whose light commands must not import torch, SciPy or pandas (tests/pipeline/test_cli_light.py).
LAZY_PACKAGE_IMPORTS = {"infonce_book.pipeline.cli"}


def test_no_package_import_is_hidden_inside_a_function_and_heavy_imports_say_why():
    bad = []
    for module, path in MODULES.items():
        lines = path.read_text().splitlines()
        tree = ast.parse(path.read_text())
        top = set(map(id, tree.body))
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)) and id(node) not in top:
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or "."]
                package = (node.__class__ is ast.ImportFrom and node.level
                           or any(n.startswith("infonce_book") for n in names))
                if package and module in LAZY_PACKAGE_IMPORTS and "#" in lines[node.lineno - 1]:
                    continue  # the command line imports what a command needs when it runs (and says so)
                if package:
                    bad.append(f"{path.relative_to(ROOT)}:{node.lineno}: package import inside a function")
                elif "#" not in lines[node.lineno - 1]:
                    bad.append(f"{path.relative_to(ROOT)}:{node.lineno}: an import inside a function must say "
                               f"why in a comment (a heavy or optional import)")
    assert not bad, "\n".join(bad)


# ---------------------------------------------------------------------------------------------
# 2. One chapter, one module, one test file.


def _chapter_stems() -> list[str]:
    """The chapters: the numbered parts of ``_toc.yml`` (the package's one registry)."""
    from infonce_book.experiment.toc import chapter_stems

    return chapter_stems(ROOT)


def test_every_chapter_has_one_package_one_test_file_and_nothing_else():
    stems = _chapter_stems()
    folder = PKG / "chapters"
    modules = sorted(p.stem for p in folder.glob("*.py") if p.stem != "__init__")
    assert not modules, f"a chapter is a package chapters/<stem>/, not a module: {modules}"
    packages = sorted(p.name for p in folder.iterdir() if (p / "__init__.py").is_file())
    tests = sorted(p.stem for p in (ROOT / "tests" / "chapters").glob("test_*.py"))
    assert packages == sorted(stems), "every chapter of _toc.yml needs its package, and every package its page"
    assert tests == sorted(f"test_{s}" for s in stems)
    prefixes = [stem.split("_")[0] for stem in stems]
    assert len(set(prefixes)) == len(prefixes), f"two chapters share a label prefix: {prefixes}"
    for stem in stems:
        # c<number>_<topic>: the number is a name (labels carry it), not the position, so a chapter
        # can be inserted anywhere; the book numbers chapters by their place in _toc.yml
        assert re.fullmatch(r"c\d+_[a-z][a-z_]*", stem), f"a chapter is named c<number>_<topic>, got {stem}"
        page = (ROOT / "book" / f"{stem}.md").read_text()
        imported = set(re.findall(r"from infonce_book\.chapters import (\w+)", page))
        assert imported == {stem}, f"book/{stem}.md must import its own chapter package only, got {imported}"


def test_no_second_list_of_chapters_in_the_package():
    stems = set(_chapter_stems())
    bad = []
    for path in sorted(PKG.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
                named = {e.value for e in node.elts if isinstance(e, ast.Constant) and e.value in stems}
                if len(named) >= 2:
                    bad.append(f"{path.relative_to(ROOT)}:{node.lineno}: {sorted(named)}")
    assert not bad, "the chapters are listed in _toc.yml only:\n" + "\n".join(bad)


def test_every_chapter_module_has_sizes_for_every_profile_and_a_setup():
    import importlib

    from infonce_book.experiment.profiles import PROFILES, sizes_for

    for stem in _chapter_stems():
        mod = importlib.import_module(f"infonce_book.chapters.{stem}")
        assert mod.STEM == stem and callable(mod.setup)
        for profile in PROFILES:
            sizes_for(mod.SIZES, profile)  # raises if a profile is missing or keys differ


# ---------------------------------------------------------------------------------------------
# 3. and 4. One model interface, one uncertainty type.


def _source_files_outside(*folders):
    for p in sorted(PKG.rglob("*.py")):
        if p.relative_to(PKG).parts[0] not in folders:
            yield p


def test_no_isinstance_or_model_name_dispatch_outside_models():
    bad = []
    for path in _source_files_outside("models"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "isinstance":
                names = {n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)} | \
                        {n.attr for n in ast.walk(node.args[1]) if isinstance(n, ast.Attribute)}
                if names & MODEL_CLASSES:
                    bad.append(f"{path.relative_to(ROOT)}:{node.lineno}: isinstance on a model class")
            if isinstance(node, ast.Compare):
                consts = [c.value for c in ast.walk(node) if isinstance(c, ast.Constant)]
                if any(isinstance(c, str) and c in MODELS for c in consts):
                    bad.append(f"{path.relative_to(ROOT)}:{node.lineno}: comparison with a model name")
    assert not bad, "\n".join(bad)


def test_quantiles_are_formed_in_one_place():
    bad = []
    for path in _source_files_outside():
        if path == PKG / "theory" / "stats.py":
            continue
        text = path.read_text()
        for pattern in (r"\bnorm\.ppf\b", r"\bt\.ppf\b", r"1\.9599", r"\b1\.96\b", r"\b2\.576\b"):
            for m in re.finditer(pattern, text):
                bad.append(f"{path.relative_to(ROOT)}:{text[:m.start()].count(chr(10)) + 1}: {m.group(0)}")
    assert not bad, "quantiles belong in infonce_book.theory.stats:\n" + "\n".join(bad)


def test_every_uncertainty_class_is_the_one_estimate():
    classes = []
    for path in _source_files_outside():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and re.search(r"Estimate|Interval|CrossEntropy", node.name):
                classes.append(f"{path.relative_to(PKG)}:{node.name}")
    assert classes == ["theory/stats.py:Estimate"], classes


# ---------------------------------------------------------------------------------------------
# 5. A chapter's models are set once, in one visible cell, and passed to its runners.


def test_a_page_constructs_each_model_once_in_a_visible_cell():
    pattern = re.compile(r"\b(?:" + "|".join(sorted(MODEL_CLASSES)) + r")(?:\.random)?\([^()]*\)")
    for stem in _chapter_stems():
        nb = jupytext.read(ROOT / "book" / f"{stem}.md")
        seen = {}
        for i, c in enumerate(nb.cells):
            if c.cell_type != "code":
                continue
            for call in pattern.findall(c.source):
                key = re.sub(r"\s+", "", call)
                assert key not in seen or seen[key] == i, f"book/{stem}.md constructs {call} in two cells"
                seen[key] = i
                tags = set(c.metadata.get("tags", []))
                assert not tags & {"remove-input", "remove-cell", "hide-input"}, f"book/{stem}.md: {call} is hidden"
        assert seen or stem == "c6_digits", f"book/{stem}.md constructs no model: where are its parameters set?"


def test_runners_do_not_hard_code_a_model():
    bad = []
    for path in sorted((PKG / "chapters").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) in MODEL_CLASSES:
                if node.args and all(isinstance(a, ast.Constant) for a in node.args):
                    bad.append(f"{path.relative_to(ROOT)}:{node.lineno}: a model with literal parameters")
    assert not bad, "\n".join(bad)


# ---------------------------------------------------------------------------------------------
# 6. Labels.

LABEL_PATTERNS = (r"^:label:\s*([\w-]+)\s*$", r"^:name:\s*([\w-]+)\s*$", r"^\(([\w-]+)\)=\s*$",
                  r"^\$\$\s*\(([\w-]+)\)\s*$")


def _labels(path: Path) -> list[str]:
    text = path.read_text()
    return [m.group(1) for p in LABEL_PATTERNS for m in re.finditer(p, text, flags=re.M)]


def _all_labels() -> dict[str, list[str]]:
    return {p.stem: _labels(p) for p in sorted((ROOT / "book").glob("*.md"))}


def test_labels_carry_their_page_prefix():
    for stem, labels in _all_labels().items():
        prefix = stem.split("_")[0] + "-" if re.match(r"c\d+_", stem) else stem + "-"
        wrong = [lab for lab in labels if not lab.startswith(prefix)]
        assert not wrong, f"book/{stem}.md: labels without the prefix {prefix!r}: {wrong}"


def test_no_frozen_label_disappears():
    lines = (ROOT / "tests" / "data" / "labels.txt").read_text().splitlines()
    frozen = [line.strip() for line in lines if line.strip() and not line.startswith("#")]
    present = {lab for labels in _all_labels().values() for lab in labels}
    missing = sorted(set(frozen) - present)
    assert not missing, f"labels cited by readers must not disappear (tests/data/labels.txt): {missing}"


# ---------------------------------------------------------------------------------------------
# 7. Lint.


def test_ruff_passes():
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if ruff is None:
        pytest.fail("ruff is not installed: `make install` (or pip install -e '.[test]') installs it")
    proc = subprocess.run([ruff, "check", "src", "tests"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


# ---------------------------------------------------------------------------------------------
# 8. Sizes.

#: Modules that are data tables (the size rule's exception), with why.
DATA_TABLES = {"testing/bad_inputs.py": "the table of validated bad inputs, one case per row"}


def _sources():
    yield from sorted(PKG.rglob("*.py"))
    yield from sorted((ROOT / "scripts").glob("*.py"))


def _code_lines(node) -> int:
    """A function's lines less its docstring: a public function's documentation (shapes, errors,
    sources, examples) is not what makes it long to read."""
    lines = node.end_lineno - node.lineno + 1
    first = node.body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        lines -= first.end_lineno - first.lineno + 1
    return lines


def test_no_module_over_500_lines_and_no_function_over_80():
    bad = []
    for path in _sources():
        text = path.read_text()
        rel = path.relative_to(PKG).as_posix() if PKG in path.parents else path.relative_to(ROOT).as_posix()
        if rel not in DATA_TABLES and len(text.splitlines()) > 500:
            bad.append(f"{rel}: {len(text.splitlines())} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _code_lines(node) > 80:
                bad.append(f"{rel}:{node.lineno}: {node.name} has {_code_lines(node)} lines of code")
    assert not bad, "\n".join(bad)


# ---------------------------------------------------------------------------------------------
# 9. README "Layout" against the tree.


def test_the_readme_layout_names_every_subpackage_and_top_level_module():
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## Layout"):]
    block = section[section.index("```\nsrc/infonce_book/"):]
    block = block[: block.index("\n```", 4)]
    named = {m.group(1) for m in re.finditer(r"^  (\w+/?|\w+\.py)\s", block + "\n", flags=re.M)}
    actual = {p.name + "/" for p in PKG.iterdir() if (p / "__init__.py").is_file()} | \
             {p.name for p in PKG.glob("*.py") if p.name != "__init__.py"}
    assert named == actual, f"README Layout names {sorted(named)}, the package has {sorted(actual)}"
