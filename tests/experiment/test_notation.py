"""One symbol, one meaning, book-wide: the notation page's table against the symbols each chapter
declares (``infonce_book.chapters.<chapter>.notation.SYMBOLS``)."""

from pathlib import Path

from infonce_book.experiment.notation import Entry, chapter_declarations, notation_problems, parse_notation

ROOT = Path(__file__).resolve().parents[2]

#: Clashes known and not yet resolved, each named: the test fails if one appears that is not here,
#: and if one here is resolved (then delete its line).
KNOWN = set()


def _texts() -> dict[int, str]:
    out = {}
    for p in sorted((ROOT / "book").glob("c[0-9]*_*.md")):
        out[int(p.name[1:p.name.index("_")])] = p.read_text(encoding="utf-8")
    return out


def test_every_declared_symbol_has_the_notation_pages_one_meaning():
    entries = parse_notation((ROOT / "book" / "notation.md").read_text(encoding="utf-8"))
    declarations = chapter_declarations()
    assert {1, 2, 3, 4, 5, 6} <= set(declarations)
    assert set(notation_problems(entries, declarations, _texts())) == KNOWN


def test_a_symbol_defined_again_with_another_meaning_fails():
    """The failing cases: Chapter 5's curvature constant written kappa, a symbol listed twice, a
    chapter the page does not name, and a symbol the chapter never writes."""
    entries = [Entry(r"\kappa", "concentration of the vMF law", frozenset({1, 4})),
               Entry(r"\eta", "free parameter of the un-expected Bernstein inequality", frozenset({5})),
               Entry(r"\eta", "class coordinates", frozenset({5}))]
    problems = notation_problems(entries, {5: {r"\kappa": "curvature constant", r"\delta": "confidence level"},
                                           4: {r"\kappa": "concentration of the vMF law"}},
                                 {4: "no such letter here", 5: r"$\kappa_r$ and $\delta$"})
    assert problems == [
        "the notation page lists $\\eta$ twice: 'free parameter of the un-expected Bernstein inequality' and "
        "'class coordinates'",
        "Chapter 4 declares $\\kappa$ but its text never writes it",
        "Chapter 5 defines $\\kappa$ as 'curvature constant'; the notation page gives it one meaning: "
        "'concentration of the vMF law'",
        "the notation page does not list Chapter 5 for $\\kappa$",
        "Chapter 5 defines $\\delta$ ('confidence level'), which the notation page does not list",
    ]


def test_the_table_parses_symbols_meanings_and_chapters():
    text = "# N\n\n## Every symbol and its chapters\n\n| symbol | meaning | chapters |\n|---|---|---|\n" \
           "| $\\tau$ | temperature | 1, 6 |\n\n## Next\n| $x$ | y | 2 |\n"
    assert parse_notation(text) == [Entry(r"\tau", "temperature", frozenset({1, 6}))]
