"""How to cite the book: BibTeX for the book and for each page of ``_toc.yml``, and the footer.

Everything comes from one place each, so nothing is typed twice:

* title, authors and release year from ``CITATION.cff``;
* the version from the installed package (:data:`infonce_book.__version__`; a test checks that
  ``CITATION.cff`` states the same one);
* the repository URL and branch from ``_config.yml`` (``repository.url``, ``repository.branch``);
  while ``repository.placeholder`` is true (no public repository yet) the entries carry no URL
  and say "not yet published online", and the pipeline drops the launch buttons;
* the chapters and their titles from ``_toc.yml`` and each page's first ``#`` heading, so a new
  chapter gets its own entry without any edit here.

The pipeline (:func:`infonce_book.pipeline.build`) puts :func:`bibtex` into the page that holds
the ``<!-- infonce-book: bibtex -->`` marker (``book/cite.md``) and :func:`footer_html` into the
assembled ``_config.yml``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from html import escape
from pathlib import Path

import nbformat
import yaml

from .. import __version__
from ..experiment.toc import BACK_MATTER, toc_pages


@dataclass(frozen=True)
class BookMetadata:
    title: str
    authors: list[dict]
    year: str
    version: str
    url: str
    branch: str
    published: bool = True  # False while _config.yml marks repository.url as a placeholder


def repository_is_placeholder(config: dict) -> bool:
    """Whether ``_config.yml`` (parsed) marks its ``repository.url`` as a placeholder
    (``repository.placeholder: true``): no public repository exists at that address yet."""
    return bool((config.get("repository") or {}).get("placeholder", False))


def book_metadata(root: Path) -> BookMetadata:
    """The book's citation metadata (see module docstring).

    Raises:
        ValueError: ``CITATION.cff`` lacks a title, authors or ``date-released``, or
            ``_config.yml`` lacks ``repository.url``.
    """
    cff = yaml.safe_load((root / "CITATION.cff").read_text(encoding="utf-8"))
    config = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))
    repo = config.get("repository") or {}
    missing = [k for k in ("title", "authors", "date-released") if not cff.get(k)]
    if missing:
        raise ValueError(f"CITATION.cff lacks {', '.join(missing)}")
    if not repo.get("url"):
        raise ValueError("_config.yml lacks repository.url (the book's repository, used by citations "
                         "and launch buttons)")
    return BookMetadata(title=str(cff["title"]), authors=list(cff["authors"]),
                        year=str(cff["date-released"])[:4], version=__version__,
                        url=str(repo["url"]).rstrip("/"), branch=str(repo.get("branch", "main")),
                        published=not repository_is_placeholder(config))


def page_title(path: Path) -> str:
    """The first level-1 heading of a MyST page (``# Title``), skipping its front matter."""
    text = path.read_text(encoding="utf-8")
    if text.startswith("---"):
        end = text.find("\n---", 3)
        text = text[end + 4:] if end > 0 else text
    in_fence = False
    for line in text.splitlines():
        if line.lstrip().startswith(("```", "~~~", ":::")):
            in_fence = not in_fence
        if not in_fence and line.startswith("# "):
            return line[2:].strip()
    raise ValueError(f"{path} has no level-1 heading ('# Title'): every page of the book needs one")


def citable_pages(root: Path) -> list[tuple[str, str]]:
    """``(file, title)`` of every toc page outside the "Back matter" part."""
    out = []
    for file, caption in toc_pages(root):
        if caption.strip().lower() == BACK_MATTER:
            continue
        path = root / f"{file}.md"
        if not path.is_file():
            path = root / f"{file}.ipynb"
            title = _notebook_title(path)
        else:
            title = page_title(path)
        out.append((file, title))
    return out


def _notebook_title(path: Path) -> str:
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    raise ValueError(f"{path} has no level-1 heading ('# Title'): every page of the book needs one")


def _bib_authors(authors: list[dict]) -> str:
    names = []
    for a in authors:
        if a.get("family-names"):
            given = f", {a['given-names']}" if a.get("given-names") else ""
            names.append(f"{a.get('name-particle', '') + ' ' if a.get('name-particle') else ''}"
                         f"{a['family-names']}{given}")
        elif a.get("name"):
            names.append("{" + a["name"] + "}")  # an entity: keep it as one name
    return " and ".join(names)


def book_key(meta: BookMetadata) -> str:
    return f"infoncebook{meta.year}"


def chapter_key(meta: BookMetadata, file: str) -> str:
    return f"{book_key(meta)}-{Path(file).name}"


def _entry(kind: str, key: str, fields: list[tuple[str, str]]) -> str:
    width = max(len(k) for k, _ in fields)
    body = ",\n".join(f"  {k:<{width}} = {{{v}}}" for k, v in fields)
    return f"@{kind}{{{key},\n{body}\n}}"


NOT_PUBLISHED = "not yet published online"


def _note(meta: BookMetadata, commit: str | None) -> str:
    return (f"Version {meta.version}" + (f", commit {commit}" if commit else "")
            + ("" if meta.published else f"; {NOT_PUBLISHED}"))


def bibtex_book(meta: BookMetadata, commit: str | None = None) -> str:
    """The book's entry; without a URL while the repository is a placeholder."""
    url = [("howpublished", f"\\url{{{meta.url}}}")] if meta.published else []
    return _entry("misc", book_key(meta), [
        ("title", "{" + meta.title + "}"),
        ("author", _bib_authors(meta.authors)),
        ("year", meta.year),
        ("version", meta.version),
        *url,
        ("note", _note(meta, commit)),
    ])


def bibtex_chapter(meta: BookMetadata, file: str, title: str, commit: str | None = None) -> str:
    """One page's entry; without a URL while the repository is a placeholder."""
    url = [("url", f"{meta.url}/blob/{meta.branch}/{file}.md")] if meta.published else []
    return _entry("incollection", chapter_key(meta, file), [
        ("title", title),
        ("booktitle", "{" + meta.title + "}"),
        ("author", _bib_authors(meta.authors)),
        ("year", meta.year),
        ("version", meta.version),
        *url,
        ("note", _note(meta, commit)),
    ])


def bibtex(root: Path, commit: str | None = None) -> str:
    """BibTeX for the book and for every citable page of ``_toc.yml`` (one string)."""
    meta = book_metadata(root)
    entries = [bibtex_book(meta, commit)]
    entries += [bibtex_chapter(meta, file, title, commit) for file, title in citable_pages(root)]
    return "\n\n".join(entries)


def source_entry(root: Path, key: str) -> str:
    """The entry ``key`` of ``book/references.bib``, verbatim."""
    text = (root / "book" / "references.bib").read_text(encoding="utf-8")
    m = re.search(r"@\w+\{" + re.escape(key) + r",", text)
    if not m:
        raise ValueError(f"book/references.bib has no entry {key!r}")
    depth, i = 0, text.index("{", m.start())
    for j in range(i, len(text)):
        depth += {"{": 1, "}": -1}.get(text[j], 0)
        if depth == 0:
            return text[m.start():j + 1]
    raise ValueError(f"book/references.bib: entry {key!r} is not closed")


def cite_markdown(root: Path, commit: str | None = None) -> str:
    """The generated part of the "How to cite" page (MyST markdown)."""
    meta = book_metadata(root)
    pages = citable_pages(root)
    # {doc} without an explicit title: Sphinx renders the page's own title (math included).
    rows = "\n".join(f"| {{doc}}`/{file}` | `{chapter_key(meta, file)}` |" for file, _ in pages)
    return (
        f"This is version **{meta.version}** of the book"
        + (f" (commit `{commit}`)" if commit else "") + ".\n\n"
        "## The book\n\n```bibtex\n" + bibtex_book(meta, commit) + "\n```\n\n"
        "## One chapter\n\n| page | BibTeX key |\n|---|---|\n" + rows + "\n\n"
        "```bibtex\n" + "\n\n".join(bibtex_chapter(meta, f, t, commit) for f, t in pages) + "\n```\n\n"
        "## The source of the claims\n\n"
        "```bibtex\n" + source_entry(root, "whiteley2026similarity") + "\n```\n"
    )


def footer_html(title: str, commit: str | None = None) -> str:
    """The footer line of every rendered page: the book's version (from the package) and commit."""
    commit_part = f" (commit <code>{escape(commit)}</code>)" if commit else ""
    return (f'<p class="infonce-book-version">{escape(title)}, version '
            f'<span class="version">{escape(__version__)}</span>{commit_part}.</p>')
