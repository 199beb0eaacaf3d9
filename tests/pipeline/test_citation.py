"""Citing the book: CITATION.cff is valid CFF 1.2.0, states the package's version, and credits the
paper; the generated BibTeX has an entry for the book and for every chapter of _toc.yml."""

import json
import re
import shutil
from pathlib import Path

import jsonschema
import pytest
import tomllib
import yaml

import infonce_book
from infonce_book.pipeline import citation

ROOT = Path(__file__).resolve().parents[2]
# The official CFF 1.2.0 schema (https://citation-file-format.github.io/1.2.0/schema.json), vendored
# from the cffconvert 2.0.0 wheel (cffconvert/schemas/1.2.0/schema.json) so the test runs offline.
SCHEMA = json.loads((ROOT / "tests" / "data" / "cff-schema-1.2.0.json").read_text())


def _cff_errors(cff: dict) -> list[str]:
    validator = jsonschema.Draft7Validator(SCHEMA, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER)
    return [f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}" for e in validator.iter_errors(cff)]


def _load_cff() -> dict:
    # YAML would turn an unquoted date into a date object, which CFF (a JSON schema) rejects: the
    # file must quote it, and this test sees exactly what a CFF validator sees.
    return yaml.safe_load((ROOT / "CITATION.cff").read_text())


def test_citation_cff_is_valid_against_the_cff_1_2_0_schema():
    cff = _load_cff()
    assert cff["cff-version"] == "1.2.0"
    assert _cff_errors(cff) == []


@pytest.mark.parametrize("breakage, message", [
    (lambda c: c.pop("authors"), "'authors' is a required property"),
    (lambda c: c.update({"date-released": "29 November 2026"}), "date-released"),
    (lambda c: c.update({"license": "not-a-licence"}), "license"),
])
def test_the_cff_check_rejects_broken_metadata(breakage, message):
    cff = _load_cff()
    breakage(cff)
    assert any(message in e for e in _cff_errors(cff)), _cff_errors(cff)


def test_citation_cff_states_the_package_version():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert _load_cff()["version"] == pyproject == infonce_book.__version__


def test_the_paper_is_cited_as_the_source_of_the_claims():
    refs = _load_cff()["references"]
    assert any(r["title"].startswith("Similarity search generalisation in contrastive learning")
               and r["authors"][0]["family-names"] == "Whiteley" for r in refs)
    assert "@misc{whiteley2026similarity," in (ROOT / "book" / "references.bib").read_text()
    assert "{cite:t}`whiteley2026similarity`" in (ROOT / "book" / "intro.md").read_text()
    assert "whiteley2026similarity" in (ROOT / "book" / "cite.md").read_text()


def _bibtex(root, commit=None) -> str:
    """The entries the "How to cite" page shows: the book's, then each citable page's."""
    meta = citation.book_metadata(root)
    return "\n\n".join([citation.bibtex_entry(meta, commit)] + [
        citation.bibtex_entry(meta, commit, file, title) for file, title in citation.citable_pages(root)])


def test_the_cite_page_shows_those_entries():
    page = citation.cite_markdown(ROOT, "abc123")
    assert all(entry in page for entry in _bibtex(ROOT, "abc123").split("\n\n"))


def test_bibtex_has_the_book_and_every_chapter_of_the_toc_with_its_title():
    bib = _bibtex(ROOT, commit="abc123")
    meta = citation.book_metadata(ROOT)
    keys = re.findall(r"^@\w+\{([^,]+),", bib, flags=re.M)
    pages = citation.citable_pages(ROOT)
    assert keys == [citation.book_key(meta)] + [citation.chapter_key(meta, f) for f, _ in pages]
    assert {f for f, _ in pages} >= {"book/notation", "book/c1_rate", "book/c2_search",
                                      "book/c3_temperature"}
    assert not {"book/references", "book/cite", "book/appendix_reproducibility"} & {f for f, _ in pages}
    assert re.search(r"title += \{The \$O\(1/k\)\$ rate of the limit\},", bib)
    assert re.search(r"version += \{" + re.escape(infonce_book.__version__) + r"\}", bib)
    assert "commit abc123" in bib
    # The repository URL is a placeholder (repository.placeholder in _config.yml): no entry
    # points at it, every entry says it is not yet published online.
    assert meta.published is False
    assert meta.url not in bib and "howpublished" not in bib and not re.search(r"^\s*url\s*=", bib, flags=re.M)
    assert bib.count(citation.NOT_PUBLISHED) == len(keys)
    # Braces balance in every entry (a LaTeX title must not break the entry).
    for entry in bib.split("\n\n"):
        assert entry.count("{") == entry.count("}"), entry


def test_a_new_chapter_gets_a_bibtex_entry_without_any_edit(tmp_path):
    for f in ("CITATION.cff", "_config.yml"):
        shutil.copy2(ROOT / f, tmp_path / f)
    (tmp_path / "book").mkdir()
    shutil.copy2(ROOT / "book" / "references.bib", tmp_path / "book" / "references.bib")
    (tmp_path / "book" / "intro.md").write_text("# Intro\n")
    (tmp_path / "book" / "c9_new.md").write_text("---\nkernelspec:\n  name: python3\n---\n\n# A new chapter on $k$\n")
    (tmp_path / "book" / "refs.md").write_text("# References\n")
    (tmp_path / "_toc.yml").write_text(yaml.safe_dump({"format": "jb-book", "root": "book/intro", "parts": [
        {"caption": "New", "chapters": [{"file": "book/c9_new"}]},
        {"caption": "Back matter", "chapters": [{"file": "book/refs"}]}]}))
    bib = _bibtex(tmp_path)
    assert "infoncebook2026-c9_new" in bib and "{A new chapter on $k$}" in bib
    assert "refs" not in bib


def test_a_page_without_a_title_is_a_clear_error(tmp_path):
    page = tmp_path / "x.md"
    page.write_text("no heading here\n```\n# not a heading: inside a code fence\n```\n")
    with pytest.raises(ValueError, match="has no level-1 heading"):
        citation.page_title(page)


def test_the_footer_shows_the_package_version_and_commit():
    html = citation.footer_html("InfoNCE as similarity search", "abc123+dirty")
    assert f'<span class="version">{infonce_book.__version__}</span>' in html
    assert "abc123+dirty" in html


def test_a_real_repository_url_turns_the_urls_of_the_entries_on(tmp_path):
    # Same book, with _config.yml as a fork or the published repository would write it.
    for f in ("CITATION.cff", "_toc.yml"):
        shutil.copy2(ROOT / f, tmp_path / f)
    shutil.copytree(ROOT / "book", tmp_path / "book")
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    config["repository"] = {"url": "https://example.org/someone/fork", "branch": "trunk"}
    (tmp_path / "_config.yml").write_text(yaml.safe_dump(config))
    bib = _bibtex(tmp_path)
    assert citation.book_metadata(tmp_path).published is True
    assert "howpublished = {\\url{https://example.org/someone/fork}}" in bib
    assert re.search(r"url += \{https://example\.org/someone/fork/blob/trunk/book/c1_rate\.md\}", bib)
    assert citation.NOT_PUBLISHED not in bib


def test_the_bibliography_parses_and_holds_every_key_the_pages_cite():
    """book/references.bib parses with pybtex (what sphinxcontrib-bibtex reads; a missing ``}``
    once stopped the whole build), and every key of a ``{cite}`` role on a page is in it."""
    from pybtex.database import parse_file

    entries = parse_file(str(ROOT / "book" / "references.bib")).entries
    cited = set()
    for page in (ROOT / "book").glob("*.md"):
        for keys in re.findall(r"\{cite(?::[a-z]+)?\}`([^`]+)`", page.read_text()):
            cited |= {k.strip() for k in keys.split(",")}
    assert len(cited) > 20
    assert cited - set(entries) == set()
