"""The reading path counts references to earlier chapters only (pipeline/reading_path.py)."""

from infonce_book.pipeline.reading_path import chapter_uses, diagram_svg


def test_forward_references_are_pointers_not_prerequisites(tmp_path):
    pages = {}
    for stem, text in {"c1_a": "See {prf:ref}`c3-thm-x` later.",
                       "c2_b": "By {prf:ref}`c1-thm-y` and {eq}`c2-eq-own`.",
                       "c3_c": "From {doc}`c2_b` and {ref}`Title <c1-sec-z>`; C4 uses it: {prf:ref}`c4-thm-w`.",
                       "c4_d": "By {prf:ref}`c3-thm-x`."}.items():
        pages[stem] = tmp_path / f"{stem}.md"
        pages[stem].write_text(text)
    uses = chapter_uses(pages)
    assert uses == {"c1_a": [], "c2_b": ["c1_a"], "c3_c": ["c1_a", "c2_b"], "c4_d": ["c3_c"]}
    svg = diagram_svg(uses, {s: i + 1 for i, s in enumerate(pages)})  # no cycle error
    assert svg.count("<rect") >= 4


def test_the_books_chapters_give_a_reading_path():
    from infonce_book.experiment.paths import project_root
    from infonce_book.pipeline import run as pipeline

    root = project_root()
    pages = {s: p for s, p in pipeline.executable_pages(root).items()
             if str(p.relative_to(root).with_suffix("")) not in pipeline.back_matter(root)}
    uses = chapter_uses(pages)
    assert uses["c1_rate"] == [] and "c1_rate" in uses["c2_search"]
    assert "<svg" in diagram_svg(uses, {s: i + 1 for i, s in enumerate(pages)})


def test_the_diagram_fits_a_phone_and_each_box_opens_its_chapter(tmp_path):
    import re

    pages = {}
    for stem, text in {"c1_a": "", "c2_b": "{prf:ref}`c1-thm-y`", "c3_c": "{prf:ref}`c1-thm-y`",
                       "c4_d": "{doc}`c2_b`, {doc}`c3_c`"}.items():
        pages[stem] = tmp_path / f"{stem}.md"
        pages[stem].write_text(text)
    svg = diagram_svg(chapter_uses(pages), {s: i + 1 for i, s in enumerate(pages)})
    assert [m for m in re.findall(r'<a href="([^"]+)">', svg)] == [f"{s}.html" for s in pages]
    width = float(re.search(r'<svg[^>]* width="([0-9.]+)"', svg).group(1))
    assert width <= 360  # drawn at its natural size on a 390 px phone: 15 px labels stay 15 px
    assert svg.count("<line") == 4  # c1 -> c2, c1 -> c3, c2 -> c4, c3 -> c4
