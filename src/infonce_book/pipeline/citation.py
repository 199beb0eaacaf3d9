"""How to cite the book: BibTeX for the book and each page of ``_toc.yml`` (:func:`cite_markdown`,
into ``book/cite.md``), and every page's footer (:func:`footer_html`).

Title, authors and year come from ``CITATION.cff``; the version from the package; the repository
URL and branch from ``_config.yml`` (while ``repository.placeholder`` is true the entries carry no
URL and say "not yet published online"); the pages and titles from ``_toc.yml`` and each page's
``#`` heading, so a new chapter gets its entry without an edit here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from html import escape
from pathlib import Path

import yaml

from .. import __version__
from ..experiment.toc import BACK_MATTER, toc_pages

NOT_PUBLISHED = "not yet published online"


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
    """Whether the parsed ``_config.yml`` sets ``repository.placeholder``: no public repository yet."""
    return bool((config.get("repository") or {}).get("placeholder", False))


def book_metadata(root: Path) -> BookMetadata:
    """The book's citation metadata; ``ValueError`` when ``CITATION.cff`` lacks a title, authors or
    ``date-released``, or ``_config.yml`` lacks ``repository.url``."""
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
    """The first level-1 heading (``# Title``) of a MyST page, outside its front matter and fences."""
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
    return [(file, page_title(root / f"{file}.md")) for file, caption in toc_pages(root)
            if caption.strip().lower() != BACK_MATTER]


def book_key(meta: BookMetadata) -> str:
    return f"infoncebook{meta.year}"


def chapter_key(meta: BookMetadata, file: str) -> str:
    return f"{book_key(meta)}-{Path(file).name}"


def _bib_authors(authors: list[dict]) -> str:
    names = []
    for a in authors:
        if a.get("family-names"):
            particle = f"{a['name-particle']} " if a.get("name-particle") else ""
            given = f", {a['given-names']}" if a.get("given-names") else ""
            names.append(f"{particle}{a['family-names']}{given}")
        elif a.get("name"):
            names.append("{" + a["name"] + "}")  # an entity: keep it as one name
    return " and ".join(names)


def bibtex_entry(meta: BookMetadata, commit: str | None = None, file: str | None = None,
                 title: str | None = None) -> str:
    """The book's entry, or with ``file`` and ``title`` one page's; without a URL while the
    repository is a placeholder."""
    if file is None:
        fields = [("title", "{" + meta.title + "}")]
        url = [("howpublished", f"\\url{{{meta.url}}}")]
    else:
        fields = [("title", str(title)), ("booktitle", "{" + meta.title + "}")]
        url = [("url", f"{meta.url}/blob/{meta.branch}/{file}.md")]
    note = (f"Version {meta.version}" + (f", commit {commit}" if commit else "")
            + ("" if meta.published else f"; {NOT_PUBLISHED}"))
    fields += [("author", _bib_authors(meta.authors)), ("year", meta.year), ("version", meta.version),
               *(url if meta.published else []), ("note", note)]
    width = max(len(k) for k, _ in fields)
    body = ",\n".join(f"  {k:<{width}} = {{{v}}}" for k, v in fields)
    kind, key = ("misc", book_key(meta)) if file is None else ("incollection", chapter_key(meta, file))
    return f"@{kind}{{{key},\n{body}\n}}"


def source_entry(root: Path, key: str) -> str:
    """The entry ``key`` of ``book/references.bib``, verbatim (it ends with a line ``}``)."""
    text = (root / "book" / "references.bib").read_text(encoding="utf-8")
    m = re.search(r"^@\w+\{" + re.escape(key) + r",.*?^\}", text, flags=re.M | re.S)
    if not m:
        raise ValueError(f"book/references.bib has no entry {key!r} (ending with a line '}}')")
    return m.group(0)


def cite_markdown(root: Path, commit: str | None = None) -> str:
    """The generated part of the "How to cite" page (MyST markdown)."""
    meta = book_metadata(root)
    pages = citable_pages(root)
    # {doc} without an explicit title: Sphinx renders the page's own title (math included).
    rows = "\n".join(f"| {{doc}}`/{file}` | `{chapter_key(meta, file)}` |" for file, _ in pages)
    return (
        f"This is version **{meta.version}** of the book" + (f" (commit `{commit}`)" if commit else "") + ".\n\n"
        "## The book\n\n```bibtex\n" + bibtex_entry(meta, commit) + "\n```\n\n"
        "## One chapter\n\n| page | BibTeX key |\n|---|---|\n" + rows + "\n\n"
        "```bibtex\n" + "\n\n".join(bibtex_entry(meta, commit, f, t) for f, t in pages) + "\n```\n\n"
        "## The source of the claims\n\n"
        "```bibtex\n" + source_entry(root, "whiteley2026similarity") + "\n```\n"
    )


def footer_html(title: str, commit: str | None = None) -> str:
    """The footer line of every rendered page: the book's version (from the package) and commit."""
    commit_part = f" (commit <code>{escape(commit)}</code>)" if commit else ""
    return (f'<p class="infonce-book-version">{escape(title)}, version '
            f'<span class="version">{escape(__version__)}</span>{commit_part}.</p>')
