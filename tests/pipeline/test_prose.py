"""The chapters read as a text one teaches from: short sentences, an opening picture of the idea, a
closing "Key takeaways" box and "Further reading", and prose that never points at code objects
or build settings.

These tests read the chapters' MyST sources (``book/<stem>.md``), so they need no build; the last
one reads the rendered pages of the session's smoke build, where glued values are filled in.

**How prose is extracted** (:func:`prose_paragraphs`), the counting rule of the sentence-length
test:

* dropped entirely: the front matter; code cells and every other fenced code block (```` ```python
  ````, ```` ```bash ````, ...); display math (``$$ ... $$`` and ``{math}`` blocks); tables (lines
  starting with ``|``); headings (titles are not sentences); label targets ``(name)=``; HTML
  comments; a directive's opening line (``{prf:theorem} Title``: a title is not a sentence) and
  its option lines (``:label: ...``);
* kept: the body of every other directive (theorems, proofs, admonitions, exercises, solutions,
  figure captions) and block quotes;
* each inline math span ``$...$``, inline code literal and role (``{glue:text}`...```,
  ``{prf:ref}`...```, ``{cite:t}`...```, ``{doc}`...```, ...) counts as **one word**;
* a paragraph ends at a blank line and at the start of a list item; a sentence ends at ``.``,
  ``!`` or ``?`` followed by white space (except after the abbreviations in :data:`ABBREVIATIONS`)
  and at the end of a paragraph; a run-in heading (emphasis ending in a full stop or a colon:
  ``**Ledger.**``, ``*Part 2.*``) is not counted; a word is a white-space separated token with a letter or a digit.
"""

import re
from html import unescape
from pathlib import Path

import pytest

from infonce_book.pipeline import pages

ROOT = Path(__file__).resolve().parents[2]
STEMS = [s for s in pages.executable_pages(ROOT) if f"book/{s}" not in pages.back_matter(ROOT)]


def _by_chapter(stems=STEMS):
    """``stems`` as test parameters."""
    return list(stems)


MAX_MEAN_SENTENCE = 25  # words, per chapter (issue 28)
ABBREVIATIONS = ("e.g.", "i.e.", "a.s.", "i.i.d.", "cf.", "vs.", "resp.", "Fig.", "Figs.", "Eq.", "al.",
                 "Prop.", "Thm.", "Ch.", "approx.", "p.", "pp.")
ROLE = re.compile(r"\{[\w:.-]+\}`[^`]*`")
INLINE_CODE = re.compile(r"``[^`]+``|`[^`]+`")
INLINE_MATH = re.compile(r"\$[^$]+\$")
RUN_IN = re.compile(r"\*\*[^*]+[.:]\*\*|(?<![*\w])\*[^*]+[.:]\*(?![*\w])")  # **Ledger.**, *Part 2.*
LIST_ITEM = re.compile(r"^\s*(?:[*+-]|\d+\.)\s+")
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*(\{[^}]*\})?\s*(.*)$")
CODE_DIRECTIVES = {"{code-cell}", "{math}", "{code-block}", "{code}"}


def _source(stem: str) -> str:
    return (ROOT / "book" / f"{stem}.md").read_text()


def prose_lines(md: str, *, skip_directives: frozenset = frozenset()):
    """The prose lines of a MyST page, with the directive each sits in (innermost, e.g.
    ``"{exercise}"``, or ``None``), following the rules of the module docstring; roles, code
    literals and math are left as written. Text inside a directive named in ``skip_directives``
    is dropped too."""
    lines = md.splitlines()
    if lines and lines[0].strip() == "---":  # front matter
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
        lines = lines[end + 1:]
    stack = []  # open fences: (marker, directive name or None for code, skipped?)
    in_math = in_comment = in_options = False
    for line in lines:
        fence = FENCE.match(line)
        if fence and stack and line.strip() == stack[-1][0]:  # closes the innermost fence
            stack.pop()
            in_options = False
            continue
        if fence and (not stack or stack[-1][1] is not None) and not in_math:
            marker, name = fence.group(2), fence.group(3)
            code = name is None or name.split()[0] in CODE_DIRECTIVES
            skipped = code or name in skip_directives or any(s[2] for s in stack)
            stack.append((marker, None if code else name, skipped))
            in_options = not code
            continue
        if stack and (stack[-1][1] is None or stack[-1][2]):  # inside code, or a skipped directive
            continue
        if in_options:
            if re.match(r"^\s*:[\w-]+:", line):
                continue
            in_options = False
        stripped = line.strip()
        if in_comment:
            in_comment = "-->" not in stripped
            continue
        if stripped.startswith("<!--"):
            in_comment = "-->" not in stripped
            continue
        if stripped.startswith("$$"):
            in_math = not (in_math or (stripped.count("$$") >= 2 and len(stripped) > 2))
            continue
        table = stripped.startswith("|") and stripped.endswith("|")
        if in_math or table or stripped.startswith("#") or re.fullmatch(r"\([\w-]+\)=", stripped):
            continue
        yield re.sub(r"^\s*>\s?", "", line), (stack[-1][1] if stack else None)


def prose_paragraphs(md: str, **kw) -> list[str]:
    """The page's prose as paragraphs (blank lines and list items separate them)."""
    paragraphs, current = [], []
    for line, _ in prose_lines(md, **kw):
        if not line.strip() or LIST_ITEM.match(line):
            if current:
                paragraphs.append(" ".join(current))
            current = [LIST_ITEM.sub("", line)] if line.strip() else []
        else:
            current.append(line.strip())
    if current:
        paragraphs.append(" ".join(current))
    return [p for p in paragraphs if p.strip()]


def sentences(paragraph: str) -> list[list[str]]:
    """The sentences of a paragraph, each as its list of words (module docstring)."""
    text = RUN_IN.sub(" ", paragraph)
    text = ROLE.sub(" X ", text)
    text = INLINE_CODE.sub(" X ", text)
    text = INLINE_MATH.sub(" X ", text)
    out, current = [], []
    for token in text.split():
        if re.search(r"[A-Za-z0-9]", token):
            current.append(token)
        if re.search(r"[.!?][)\"'*_]*$", token) and token.rstrip(")\"'*_") not in ABBREVIATIONS:
            if current:
                out.append(current)
            current = []
    if current:
        out.append(current)
    return out


def sentence_stats(md: str) -> tuple[int, int, list[str]]:
    """Words, sentences, and the sentences of over 40 words (for the failure message)."""
    words = n = 0
    long = []
    for paragraph in prose_paragraphs(md):
        for s in sentences(paragraph):
            words, n = words + len(s), n + 1
            if len(s) > 40:
                long.append(" ".join(s[:12]) + " ...")
    return words, n, long


def test_the_sentence_counter_follows_its_rule():
    md = """---
title: x
---

# A title that is not counted at all here

```{code-cell} ipython3
x = 1  # Not prose. Not counted.
```

One two three. Four $a + b = c$ {glue:text}`n:.2f` six, e.g. seven.

* An item.
* Another, i.e. two words

**Ledger.** A *run-in* heading. *Part 1.* Not counted.

$$
\\text{display math. Not counted.}
$$

| a. b. c. |
|---|

```{prf:lemma} A title
:label: c0-lem-x

Body of the lemma.
```
"""
    paras = prose_paragraphs(md)
    assert paras == ["One two three. Four $a + b = c$ {glue:text}`n:.2f` six, e.g. seven.", "An item.",
                     "Another, i.e. two words", "**Ledger.** A *run-in* heading. *Part 1.* Not counted.",
                     "Body of the lemma."]
    assert [len(s) for p in paras for s in sentences(p)] == [3, 6, 2, 4, 3, 2, 4]


@pytest.mark.parametrize("stem", _by_chapter())
def test_mean_sentence_length_is_at_most_25_words(stem):
    words, n, long = sentence_stats(_source(stem))
    mean = words / n
    assert mean <= MAX_MEAN_SENTENCE, (f"{stem}: mean sentence length {mean:.1f} words over {n} sentences; "
                                      f"{len(long)} over 40 words, e.g. {long[:5]}")


FIGURE = re.compile(r"^```+\{(?:glue:figure|figure)\}", re.M)
THEOREM = re.compile(r"^```+\{prf:(?:lemma|theorem|proposition|corollary)\}", re.M)
TAKEAWAYS = re.compile(r"^```+\{admonition\} Key takeaways\s*$", re.M)


def _fenced_body(md: str, start: int) -> str:
    """The body of the fenced block whose opening line starts at ``start``."""
    first = md[start:].splitlines()[0]
    marker = re.match(r"`+", first).group(0)
    body = md[start + len(first) + 1:]
    return body[: re.search(rf"^{marker}\s*$", body, re.M).start()]


@pytest.mark.parametrize("stem", _by_chapter())
def test_a_chapter_opens_with_a_picture_and_closes_with_takeaways_and_further_reading(stem):
    md = _source(stem)
    first_result, first_figure = THEOREM.search(md), FIGURE.search(md)
    # A chapter with no formal result (the digits chapter) opens with its picture if the picture
    # comes before its second section.
    sections = list(re.finditer(r"^## ", md, re.M))
    opening_end = first_result.start() if first_result else (sections[1].start() if len(sections) > 1 else len(md))
    assert first_figure and first_figure.start() < opening_end, (
        f"{stem}: the first figure must come before the first lemma or theorem (the idea in one picture)")
    box = TAKEAWAYS.search(md)
    assert box, f"{stem}: no 'Key takeaways' admonition"
    results = list(THEOREM.finditer(md))
    assert not results or box.start() > results[-1].start(), (
        f"{stem}: Key takeaways must close the chapter, after its results")
    points = [ln for ln in _fenced_body(md, box.start()).splitlines() if LIST_ITEM.match(ln)]
    assert 3 <= len(points) <= 5, f"{stem}: Key takeaways has {len(points)} points, not 3 to 5"
    assert "{glue:text}" in _fenced_body(md, box.start()), f"{stem}: Key takeaways quote no glued number"
    reading = re.search(r"^## Further reading\s*$", md, re.M)
    assert reading and reading.start() > box.start(), f"{stem}: no 'Further reading' section after the takeaways"
    section = md[reading.end():]
    section = section[: m.start()] if (m := re.search(r"^#{1,2} ", section, re.M)) else section
    cited = re.findall(r"\{cite:[tp]\}`([^`]+)`", section)
    assert cited, f"{stem}: Further reading cites nothing from the bibliography"
    bib = (ROOT / "book" / "references.bib").read_text()
    for keys in cited:
        for key in keys.split(","):
            assert re.search(r"@\w+\{" + re.escape(key.strip()) + ",", bib), f"{stem}: {key} not in references.bib"


# Words that belong to the build, not to the reader (a reader meets "the quick run" and "the
# standard run"; the reproducibility appendix explains them once), and code-style identifiers.
BUILD_WORDS = re.compile(r"\b(?:profiles?|smoke|cpu|cuda|summary|dataframe|papermill|jupytext)\b", re.I)
IDENTIFIER = re.compile(r"\b[a-z][a-z0-9]*_[a-z0-9_]+\b|\b[A-Z][a-z]+(?:[A-Z][a-z]+)+\b|\w+\(\)")
PROPER_NAMES = {"McDiarmid", "McShane", "NumPy", "SciPy", "PyTorch", "MathJax", "GitHub"}  # not code
# Exercises and their solutions may name the library's functions: a computational exercise asks the
# reader to run them.
CODE_ALLOWED = frozenset({"{exercise}", "{solution}"})


def code_references(md: str) -> list[str]:
    """Code literals, build words and identifiers in a page's prose (outside exercises)."""
    found = []
    for paragraph in prose_paragraphs(md, skip_directives=CODE_ALLOWED):
        text = ROLE.sub(" ", paragraph)
        found += [f"code literal {c}" for c in INLINE_CODE.findall(text)]
        text = INLINE_MATH.sub(" ", INLINE_CODE.sub(" ", text))
        text = re.sub(r"https?://\S+", " ", text)
        found += [f"build word {w!r}" for w in BUILD_WORDS.findall(text)]
        found += [f"identifier {w!r}" for w in IDENTIFIER.findall(text) if w not in PROPER_NAMES]
    return found


def test_the_code_reference_scan_finds_what_it_looks_for():
    md = ("A sentence about `summary` and exact_bias at the smoke profile on cpu, with VonMisesFisher.\n\n"
          "Math $a_b$ and {glue:text}`some_name` and {prf:ref}`c1-thm-rate` are fine, as is McDiarmid.\n\n"
          "```{exercise} Compute\n:label: c0-ex\n\nUse `exact_bias`.\n```\n")
    assert code_references(md) == ["code literal `summary`", "build word 'smoke'", "build word 'profile'",
                                   "build word 'cpu'", "identifier 'exact_bias'", "identifier 'VonMisesFisher'"]


@pytest.mark.parametrize("stem", _by_chapter())
def test_no_code_reference_in_the_prose_of_a_chapter(stem):
    assert code_references(_source(stem)) == []


def _without_div(page: str, cls: str) -> str:
    """``page`` without the ``<div>`` elements of class ``cls`` (nested divs included)."""
    while (m := re.search(r'<div class="[^"]*\b' + re.escape(cls) + r'\b[^"]*"', page)):
        depth, pos = 0, m.start()
        for tag in re.finditer(r"<div\b|</div>", page[m.start():]):
            depth += 1 if tag.group(0) == "<div" else -1
            if depth == 0:
                pos = m.start() + tag.end()
                break
        page = page[: m.start()] + " " + page[pos:]
    return page


def test_the_rendered_prose_leaves_out_code_cells_and_the_rerun_box():
    page = ('<p>Kept.</p><div class="tip infonce-rerun admonition"><p>profile smoke</p><div class="highlight">'
            '<pre>x</pre></div><p>cpu</p></div><p>Also <code>cpu</code> kept.</p>'
            '<div class="cell docutils container"><p>summary</p></div><!-- end cell -->')
    assert _rendered_prose(_without_div(page, "infonce-rerun")).split() == ["Kept.", "Also", "kept."]


def _rendered_prose(page: str) -> str:
    """A rendered page's prose: its paragraphs outside code cells, outputs and exercises."""
    body = re.sub(r'<div class="cell[^"]*".*?<!-- end cell -->', " ", page, flags=re.S)
    body = re.sub(r"<(script|style|pre|code)\b.*?</\1>", " ", body, flags=re.S)
    paragraphs = re.findall(r"<p\b[^>]*>(.*?)</p>", body, flags=re.S)
    return unescape(re.sub(r"<[^>]+>", "", "\n".join(paragraphs)))


@pytest.mark.parametrize("stem", _by_chapter())
def test_no_build_word_in_the_rendered_prose(smoke_book, stem):
    """Glued values land in the prose too (a device glued into "on {glue:text}`device`" reads "on
    cpu"): the rendered paragraphs, outside code cells and the generated "Rerun this chapter" box,
    name no build setting."""
    page = (smoke_book.html / "book" / f"{stem}.html").read_text()
    text = _rendered_prose(_without_div(page, "infonce-rerun"))
    hits = [text[max(0, m.start() - 40): m.end() + 40].replace("\n", " ") for m in BUILD_WORDS.finditer(text)]
    assert hits == [], f"{stem}: build words in the rendered prose: {hits[:5]}"
