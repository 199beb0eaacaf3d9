"""README's "Adding a chapter" and "Adding a model", followed on a copy of the repository: a chapter
inserted between two others and a model, each from the instructions alone; the layout test then
runs on the copy and must pass, and the pipeline finds the new chapter in its place."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.pipeline.support import HEADER, PARAMETERS

ROOT = Path(__file__).resolve().parents[1]

# The page: the front matter and parameters cell of tests/pipeline/support.py, then the set-up
# cell README step 1 describes (the chapter package, its models constructed once, visibly).
PAGE = HEADER + "\n# A toy chapter\n" + PARAMETERS + """
```{code-cell} ipython3
from infonce_book.chapters import c9_toy as chapter
from infonce_book.models import ToyModel

ctx = chapter.setup(profile, device, seed)
TOY = ToyModel(dim=2)
```

(c9-sec-toy)=
## A section
"""

PACKAGE_INIT = '''"""Chapter c9_toy (a throwaway chapter of tests/test_adding.py)."""

from .config import SIZES, STEM, setup

__all__ = ["STEM", "SIZES", "setup"]
'''

PACKAGE_SETUP = '''"""The toy chapter's set-up."""

from ...experiment.setup import ChapterContext, setup_chapter

STEM = "c9_toy"
SIZES = {"smoke": {"n": 1}, "standard": {"n": 2}, "full": {"n": 3}}


def setup(profile: str = "standard", device: str = "auto", seed: int = 0) -> ChapterContext:
    """The toy chapter's set-up."""
    return setup_chapter(STEM, profile, device, seed, sizes=SIZES)
'''

MODEL = '''"""A throwaway model of tests/test_adding.py: uniform data on the circle, positives equal to anchors."""

import torch

from .base import ReferenceModel, register


@register("toy")
class ToyModel(ReferenceModel):
    """Uniform points of the unit circle in R^dim's first two coordinates; the positive is the anchor."""

    param_names = ("dim",)

    def __init__(self, dim: int = 2):
        self.dim = int(dim)

    def sample_data(self, n, *, generator=None, device=None, dtype=None):
        x = torch.randn(n, self.dim, generator=generator, device=device, dtype=dtype or torch.float64)
        return torch.nn.functional.normalize(x, dim=-1)

    def sample_positive(self, anchor, *, generator=None):
        return anchor.clone()

    def log_density_ratio(self, x, y):
        raise NotImplementedError("the toy model has no density ratio")
'''


def _copy_repository(dest: Path) -> Path:
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    files += subprocess.run(["git", "ls-files", "--others", "--exclude-standard"], cwd=ROOT, capture_output=True,
                            text=True, check=True).stdout.split()
    for f in files:
        src = ROOT / f
        if src.is_file() and not f.startswith("book/_vendor"):
            (dest / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / f)
    return dest


@pytest.mark.slow
def test_a_chapter_inserted_in_the_middle_and_a_model_follow_the_readme(tmp_path):
    repo = _copy_repository(tmp_path / "repo")
    # Adding a chapter: the page, the package, the test, one line of _toc.yml (between c2 and c3)
    (repo / "book" / "c9_toy.md").write_text(PAGE)
    pkg = repo / "src" / "infonce_book" / "chapters" / "c9_toy"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(PACKAGE_INIT)
    (pkg / "config.py").write_text(PACKAGE_SETUP)
    (repo / "tests" / "chapters" / "test_c9_toy.py").write_text(
        '"""The toy chapter."""\n\nfrom infonce_book.chapters import c9_toy\n\n\n'
        'def test_the_toy_chapter_has_its_stem():\n    assert c9_toy.STEM == "c9_toy"\n')
    toc = yaml.safe_load((repo / "_toc.yml").read_text())
    part = next(p for p in toc["parts"] if any(c["file"] == "book/c2_search" for c in p["chapters"]))
    files = [c["file"] for c in part["chapters"]]
    part["chapters"].insert(files.index("book/c2_search") + 1, {"file": "book/c9_toy"})
    (repo / "_toc.yml").write_text(yaml.safe_dump(toc, sort_keys=False))
    # Adding a model: the module and its import
    models = repo / "src" / "infonce_book" / "models"
    (models / "toy.py").write_text(MODEL)
    init = (models / "__init__.py").read_text()
    (models / "__init__.py").write_text(init.replace("from .student_t import StudentTModel as StudentTModel\n",
                                                     "from .student_t import StudentTModel as StudentTModel\n"
                                                     "from .toy import ToyModel as ToyModel\n"))
    env = {**os.environ, "PYTHONPATH": str(repo / "src"), "INFONCE_BOOK_ROOT": str(repo)}
    probe = subprocess.run(
        [sys.executable, "-c", "from infonce_book.experiment.toc import chapter_stems; "
         "from infonce_book.pipeline.pages import executable_pages; "
         "from infonce_book.pipeline.timings import load_recorded; import pathlib, runpy; "
         "readme_table = runpy.run_path('benchmarks/chapter_times.py')['readme_table']; "
         "from infonce_book.models import MODELS; r = pathlib.Path('.'); "
         "print(chapter_stems(r)); print(list(executable_pages(r))); print(sorted(MODELS)); "
         "print(readme_table(load_recorded(r), chapter_stems(r)))"],
        cwd=repo, env=env, capture_output=True, text=True)
    assert probe.returncode == 0, probe.stderr
    stems, pages, models_seen, table = probe.stdout.split("\n", 3)
    assert stems.startswith("['c1_rate', 'c2_search', 'c9_toy', 'c3_temperature'")
    assert "'c9_toy'" in pages and "toy" in models_seen
    assert "| `c9_toy` | not recorded | not recorded |" in table
    layout = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_layout.py",
                             "tests/chapters/test_c9_toy.py"], cwd=repo, env=env, capture_output=True, text=True)
    assert layout.returncode == 0, layout.stdout[-4000:] + layout.stderr[-2000:]
