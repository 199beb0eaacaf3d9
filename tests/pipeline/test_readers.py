"""What readers, teachers and citers get from every build, without any chapter writing it: the
"Rerun this chapter" box, the generated "How to cite" entries and reproducibility appendix, the
version in the footer, download and launch buttons, and MathJax served from the book itself."""

import json
import re
import shutil
import subprocess
from html import unescape
from pathlib import Path

import jupytext
import nbformat
import pytest
import yaml

import infonce_book
from infonce_book.pipeline import run as pipeline
from infonce_book.pipeline import timings
from infonce_book.pipeline.reproducibility import PACKAGES, appendix_markdown

from .test_timings import times

ROOT = Path(__file__).resolve().parents[2]
CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())

CHAPTER = """---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---

# A new chapter

**Question.** Does it get a rerun box?

```{code-cell} ipython3
:tags: [parameters]

profile = "standard"
device = "auto"
seed = 0
```

```{code-cell} ipython3
x = run_experiment(device=ctx.device)
```
"""


def _record(id, passed, chapter="ok"):
    return {"claim": "C9", "id": id, "chapter": chapter, "params": {}, "quantity": "q", "predicted": 1.0,
            "measured": 1.01 if passed else 2.0, "ci_low": 0.99, "ci_high": 1.02 if passed else 2.1,
            "passed": passed, "profile": "smoke", "device": "cpu", "seed": 0}


@pytest.fixture
def project(tmp_path):
    """A small book with one chapter "executed" (converted, not run) and its build records."""
    for f in ("_config.yml", "CITATION.cff"):
        shutil.copy2(ROOT / f, tmp_path / f)
    (tmp_path / "book").mkdir()
    for f in ("references.bib", "cite.md", "appendix_reproducibility.md"):
        shutil.copy2(ROOT / "book" / f, tmp_path / "book" / f)
    (tmp_path / "book" / "intro.md").write_text("# Intro\n")
    (tmp_path / "book" / "ok.md").write_text(CHAPTER)
    (tmp_path / "_toc.yml").write_text(yaml.safe_dump({"format": "jb-book", "root": "book/intro", "parts": [
        {"caption": "Chapters", "chapters": [{"file": "book/ok"}]},
        {"caption": "Back matter", "chapters": [{"file": "book/cite"}, {"file": "book/appendix_reproducibility"}]},
    ]}))
    build = tmp_path / "_build"
    (build / "notebooks").mkdir(parents=True)
    (build / "ledger").mkdir()
    nbformat.write(jupytext.read(tmp_path / "book" / "ok.md"), build / "notebooks" / "ok.ipynb")
    (build / "notebooks" / "ok.run.json").write_text(json.dumps(
        {"key": "x", "profile": "smoke", "device": "cpu", "seed": 0, "seconds": 12.3, "finished": "2026-11-29T10:00:00"}))
    (build / "timings.json").write_text(json.dumps({"smoke": {"ok": 12.3}, "full": {"ok": 300.0}}))
    (build / "ledger" / "ok.json").write_text(json.dumps([_record("ok-pass", True), _record("ok-fail", False),
                                                         {**_record("ok-wide", False), "verdict": "inconclusive"}]))
    (build / "ledger" / "gone.json").write_text(json.dumps([_record("gone-1", True, chapter="gone")]))
    return tmp_path


def _assemble(project):
    return pipeline.assemble_site(project, project / "_build", profile="smoke", device="cpu", seed=0)


def test_every_chapter_gets_a_rerun_box_after_its_title_with_the_exact_command(project):
    site = _assemble(project)
    nb = nbformat.read(site / "book" / "ok.ipynb", as_version=4)
    title = next(i for i, c in enumerate(nb.cells) if c.source.startswith("# A new chapter"))
    pdf, box = nb.cells[title + 1], nb.cells[title + 2]
    # First the (hidden until `infonce-book pdf` has run) link to the chapter's PDF, then the box.
    assert pdf.metadata["tags"] == ["pdf-link"] and pdf.source == pipeline.PDF_PLACEHOLDER.format(name="ok.pdf")
    assert box.cell_type == "markdown" and box.metadata["tags"] == ["rerun-box"]
    assert ".venv/bin/infonce-book run ok --profile standard --device auto --seed 0" in box.source
    assert "make chapter CHAPTER=ok PROFILE=standard DEVICE=auto SEED=0" in box.source
    assert "profile `smoke`, device `cpu`, seed `0`, which took 12 s" in box.source
    assert "`smoke` 12 s; `standard` not measured in this build; `full` 5.0 min" in box.source
    assert "Expected: no recorded times: `make timings` writes" in box.source
    assert "CUDA GPU" in box.source  # the chapter passes ctx.device to its experiments
    assert "{download}`ok.md <_md/ok.md>`" in box.source
    assert (site / "book" / "_md" / "ok.md").read_text() == CHAPTER
    assert not (site / "book" / "ok.md").exists()
    # The executed notebook in _build/notebooks stays as papermill wrote it.
    assert "rerun-box" not in (project / "_build" / "notebooks" / "ok.ipynb").read_text()


def test_the_rerun_box_quotes_the_recorded_times_that_the_readme_shows(project):
    recorded = {"machine": {"cpu": "Some CPU", "cores": 2}, "threads": {},
                "profiles": {"smoke": {"seconds": {"ok": 41.0}}, "standard": {"seconds": {"ok": 130.0}}}}
    path = project / timings.TIMES_FILE
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(recorded))
    site = _assemble(project)
    box = next(c for c in nbformat.read(site / "book" / "ok.ipynb", as_version=4).cells
               if c.metadata.get("tags") == ["rerun-box"])
    assert "Expected: `smoke` 41 s; `standard` 2.2 min on a 2-core Some CPU" in box.source
    table = times.readme_table(recorded, ["ok"])
    assert "| `ok` | 41 s | 2.2 min |" in table and "| all chapters | 41 s | 2.2 min |" in table


def test_the_intro_gets_a_hidden_link_to_the_book_pdf_and_the_reading_path(project):
    (project / "book" / "intro.md").write_text("# Intro\n\nText.\n\n<!-- infonce-book: reading-path -->\n")
    site = _assemble(project)
    intro = (site / "book" / "intro.md").read_text()
    assert intro.startswith("# Intro\n\n" + pipeline.PDF_PLACEHOLDER.format(name="book.pdf") + "\n")
    assert '<svg class="infonce-reading-path"' in intro and "| 1 | {doc}`ok` | only the {doc}`notation` |" in intro


def test_the_back_matter_is_generated_for_the_chapters_of_the_toc(project):
    site = _assemble(project)
    cite = (site / "book" / "cite.md").read_text()
    appendix = (site / "book" / "appendix_reproducibility.md").read_text()
    assert "<!-- infonce-book:" not in cite + appendix
    assert "@incollection{infoncebook2026-ok," in cite and "title     = {A new chapter}" in cite
    assert "@misc{whiteley2026similarity," in cite
    assert "**3 claims recorded: 1 passed, 1 inconclusive, 1 failed.**" in appendix
    assert "| **failed** |" in appendix and "| passed |" in appendix and "* `ok-fail` (ok)" in appendix
    assert "| **inconclusive** |" in appendix and "**Inconclusive claims**" in appendix
    assert "* **inconclusive**: the rule holds only because the interval is too wide" in appendix
    assert appendix.index("`ok-pass`") < appendix.index("`ok-fail`")
    assert "gone-1" not in appendix  # a chapter no longer in the toc
    for name in PACKAGES:
        assert f"| {name} |" in appendix
    assert "profile** `smoke`, **seed** `0`" in appendix
    assert "| smoke, cpu, seed 0 | yes | 12 s | \u2014 | 5.0 min |" in appendix
    assert "### `ok`" in appendix and "profile `smoke`, device `cpu`, seed `0`" in appendix
    assert "No benchmark results were found" in appendix
    config = yaml.safe_load((site / "_config.yml").read_text())
    assert f'<span class="version">{infonce_book.__version__}</span>' in config["html"]["extra_footer"]
    assert config["sphinx"]["config"]["mathjax_path"] == CONFIG["sphinx"]["config"]["mathjax_path"]


def test_benchmark_results_are_included_when_present(project):
    results = project / "benchmarks" / "results" / "cpu"
    results.mkdir(parents=True)
    (results / "results.md").write_text("## CPU timings\n\n| k | ms |\n|---|---|\n| 1 | 2 |\n")
    site = _assemble(project)
    appendix = (site / "book" / "appendix_reproducibility.md").read_text()
    assert "```{include} ../benchmarks/results/cpu/results.md\n:heading-offset: 2\n" in appendix
    assert (site / "benchmarks" / "results" / "cpu" / "results.md").is_file()
    assert "No benchmark results were found" not in appendix


def test_an_unknown_generated_section_is_a_clear_error(project):
    (project / "book" / "cite.md").write_text("# Cite\n\n<!-- infonce-book: bibtx -->\n")
    with pytest.raises(ValueError, match=r"book/cite.md: unknown generated section\(s\) \['bibtx'\]"):
        _assemble(project)


def test_appendix_reports_the_real_environment(tmp_path):
    text = appendix_markdown(ROOT, tmp_path, {}, profile="standard", device="cpu", seed=3, commit="abc+dirty")
    import torch

    assert f"**torch** {torch.__version__}" in text
    assert f"| infonce-book | {infonce_book.__version__} |" in text
    assert "uncommitted changes" in text
    assert "No ledger records were found" in text


def test_launch_buttons_and_repository_links_follow_the_placeholder_flag(project):
    # Placeholder (the repository's _config.yml): the assembled site has no launch buttons and no
    # repository address for jupyter-book to render.
    config = yaml.safe_load((_assemble(project) / "_config.yml").read_text())
    assert "launch_buttons" not in config and "repository" not in config
    assert not config["html"]["use_repository_button"]
    # A real URL (placeholder flag removed): both stay, as written.
    real = yaml.safe_load((project / "_config.yml").read_text())
    real["repository"] = {"url": "https://example.org/someone/fork", "branch": "main"}
    (project / "_config.yml").write_text(yaml.safe_dump(real))
    config = yaml.safe_load((_assemble(project) / "_config.yml").read_text())
    assert config["repository"]["url"] == "https://example.org/someone/fork"
    assert config["launch_buttons"] == CONFIG["launch_buttons"]


def test_mathjax_is_served_by_the_book_not_a_cdn():
    sphinx = CONFIG["sphinx"]["config"]
    path = sphinx["mathjax_path"]
    assert not path.startswith(("http:", "https:", "//"))
    static = [ROOT / p for p in sphinx["html_static_path"]]
    assert any((s / path).is_file() for s in static), f"{path} not found under {static}"
    mathjax = next(s / path for s in static if (s / path).is_file())
    fonts = list((mathjax.parent / "output" / "chtml" / "fonts" / "woff-v2").glob("*.woff"))
    assert len(fonts) >= 20  # CommonHTML loads them relative to the script
    assert (mathjax.parent / "LICENSE").is_file()


def test_repository_url_is_written_in_one_place_and_launch_buttons_use_it():
    url = CONFIG["repository"]["url"]
    assert CONFIG["launch_buttons"]["colab_url"] and CONFIG["launch_buttons"]["binderhub_url"]
    assert CONFIG["repository"].get("placeholder") is True  # no public repository yet (README)
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True).stdout.split()
    if not tracked:
        pytest.skip("not a git checkout")
    holders = []
    for f in tracked:
        p = ROOT / f
        if p.is_file() and p.suffix in {".md", ".yml", ".yaml", ".cff", ".toml", ".py", ".txt", ".cfg", ""}:
            if url in p.read_text(errors="ignore"):
                holders.append(f)
    assert holders == ["_config.yml"]


@pytest.mark.book
def test_rendered_pages_carry_version_rerun_box_downloads_launch_buttons_and_back_matter(smoke_book):
    html, meta_url = smoke_book.html, CONFIG["repository"]["url"]
    executed = list(pipeline.executable_pages(ROOT))
    chapters = [s for s in executed if f"book/{s}" not in pipeline.back_matter(ROOT)]
    assert "robustness" in executed and "robustness" not in chapters  # back matter: no rerun box, no citation
    robustness = unescape(re.sub(r"<[^>]+>", "", (html / "book" / "robustness.html").read_text()))
    assert "Rerun this chapter" not in robustness
    assert len(chapters) >= 6
    for stem in chapters:
        page = (html / "book" / f"{stem}.html").read_text()
        text = unescape(re.sub(r"<[^>]+>", "", page))  # what the reader sees (code is highlighted)
        assert f'<span class="version">{infonce_book.__version__}</span>' in page
        assert f"infonce_book {infonce_book.__version__} (commit " in text  # the chapter's own banner
        assert "Rerun this chapter" in text
        assert f"infonce-book run {stem} --profile standard --device auto --seed 0" in text
        assert f"make chapter CHAPTER={stem} PROFILE=standard DEVICE=auto SEED=0" in text
        # Download buttons: the executed notebook and the jupytext source.
        assert f"_sources/book/{stem}.ipynb" in page and (html / "_sources" / "book" / f"{stem}.ipynb").is_file()
        md = re.search(r'href="(\.\./_downloads/[0-9a-f]+/' + stem + r'\.md)"', page)
        assert md and (html / "book" / md.group(1)).resolve().is_file()
        # No launch buttons while repository.url is a placeholder (they would open nothing).
        assert "mybinder.org/v2" not in page and "colab.research.google.com/github" not in page
        assert "cdn.jsdelivr.net/npm/mathjax" not in page and f"_static/{CONFIG['sphinx']['config']['mathjax_path']}" in page
    cite = (html / "book" / "cite.html").read_text()
    for stem in chapters:
        assert f"infoncebook2026-{stem}" in cite
    assert "not yet published online" in cite
    # No page of the build shows the placeholder repository's address (pages, search index, sources).
    holders = [p.relative_to(html).as_posix() for p in html.rglob("*")
               if p.suffix in {".html", ".js", ".ipynb", ".md", ".txt"} and p.is_file()
               and meta_url in p.read_text(errors="ignore")]
    assert holders == []
    appendix = (html / "book" / "appendix_reproducibility.html").read_text()
    records = [r for p in sorted((smoke_book.build / "ledger").glob("*.json")) for r in json.loads(p.read_text())]
    counts = {v: sum((r["verdict"] == v) for r in records) for v in ("passed", "inconclusive", "failed")}
    assert sum(counts.values()) == len(records)
    assert (f"{len(records)} claims recorded: {counts['passed']} passed, {counts['inconclusive']} inconclusive, "
            f"{counts['failed']} failed.") in appendix
    for r in records:
        assert r["id"] in appendix
    timings = json.loads((smoke_book.build / "timings.json").read_text())["smoke"]
    assert set(timings) == set(executed)
    assert "torch" in appendix and "jupyter-book" in appendix and "sphinx-proof" in appendix
    if not list((ROOT / "benchmarks" / "results").glob("*/results.md")):
        assert "No benchmark results were found" in appendix
