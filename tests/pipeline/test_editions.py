"""The student edition's source transformation: every solution block goes, everything else stays."""

import nbformat
import pytest

from infonce_book.pipeline.editions import strip_solutions_notebook, strip_solutions_text

PAGE = """# A chapter

```{exercise} The rate (routine)
:label: c9-ex-rate

Show that $x = 1$.
```

```{solution} c9-ex-rate
:label: c9-sol-rate
:class: dropdown

SECRET-ONE: since $x - 1 = 0$,

$$
x = 1.
$$
```

::::{exercise} Nested (proof)
:label: c9-ex-nested

Prove it.
::::

::::{solution} c9-ex-nested
:label: c9-sol-nested
:class: dropdown

SECRET-TWO, with a nested directive:

:::{note}
SECRET-THREE
:::

```python
print("SECRET-FOUR")
```
::::

````{solution} c9-ex-rate
:label: c9-sol-four-backticks

```{math}
SECRET-FIVE
```
````

Text after the solutions stays.
"""


def test_every_solution_block_is_removed_and_the_exercises_stay():
    out, n = strip_solutions_text(PAGE)
    assert n == 3
    assert "SECRET" not in out
    assert "{solution}" not in out
    # The exercises and the text around them are unchanged.
    assert "```{exercise} The rate (routine)\n:label: c9-ex-rate\n\nShow that $x = 1$.\n```" in out
    assert "::::{exercise} Nested (proof)\n:label: c9-ex-nested\n\nProve it.\n::::" in out
    assert out.rstrip().endswith("Text after the solutions stays.")


def test_a_page_without_solutions_is_returned_unchanged():
    text = "# Title\n\n```{code-cell} ipython3\nx = 1\n```\n"
    assert strip_solutions_text(text) == (text, 0)


def test_an_unclosed_solution_is_a_clear_error():
    with pytest.raises(ValueError, match="not closed"):
        strip_solutions_text("```{solution} x\nSECRET\n")


def test_gated_solutions_spanning_cells_are_removed_with_their_code_cells():
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("# T\n\n```{exercise}\n:label: c9-ex-g\n\nCompute.\n```"),
        nbformat.v4.new_markdown_cell("```{solution-start} c9-ex-g\n:label: c9-sol-g\n:class: dropdown\n```\n"
                                      "SECRET-G1"),
        nbformat.v4.new_code_cell("print('SECRET-G2')"),
        nbformat.v4.new_markdown_cell("SECRET-G3\n\n```{solution-end}\n```\n\nAfter the solution."),
        nbformat.v4.new_code_cell("kept = 1"),
    ]
    assert strip_solutions_notebook(nb) == 1
    text = "\n".join(c.source for c in nb.cells)
    assert "SECRET" not in text and "{solution" not in text
    assert [c.cell_type for c in nb.cells] == ["markdown", "markdown", "code"]
    assert nb.cells[1].source.strip() == "After the solution."
    assert nb.cells[2].source == "kept = 1"


def test_values_glued_only_for_a_removed_solution_leave_the_notebook():
    """A remove-input cell computes an exercise's numbers; once its solution is gone, the glued
    values no page text refers to are dropped from the student's notebook, the others stay."""
    def glued(name, value):
        return nbformat.v4.new_output("display_data", data={"application/papermill.record/text/plain": repr(value)},
                                      metadata={"scrapbook": {"name": name,
                                                              "mime_prefix": "application/papermill.record/"}})

    cell = nbformat.v4.new_code_cell("glue_all(...)")
    cell.outputs = [glued("c9_in_prose", 1.5), glued("c9_fig", "fig"), glued("c9_secret", "0.049 (r = 0.05)"),
                    nbformat.v4.new_output("stream", name="stdout", text="progress\n")]
    nb = nbformat.v4.new_notebook()
    nb.cells = [cell,
                nbformat.v4.new_markdown_cell("Prose: {glue:text}`c9_in_prose:.2f`.\n\n```{glue:figure} c9_fig\n```\n"),
                nbformat.v4.new_markdown_cell("```{solution} c9-ex\n:label: c9-sol\n\nIt is {glue:text}`c9_secret`.\n```")]
    assert strip_solutions_notebook(nb) == 1
    names = [o.get("metadata", {}).get("scrapbook", {}).get("name") for o in nb.cells[0].outputs]
    assert names == ["c9_in_prose", "c9_fig", None]
    assert "0.049" not in nbformat.writes(nb)


def test_a_value_another_page_refers_to_stays_in_the_students_notebook(tmp_path):
    """The first page quotes a chapter's result through ``{glue:text}`c9_x.ipynb::name```: stripping
    the chapter's solutions must not drop that value, or the student edition's first page breaks."""
    from infonce_book.pipeline.editions import strip_solutions_site

    def glued(name, value):
        return nbformat.v4.new_output("display_data", data={"application/papermill.record/text/plain": repr(value)},
                                      metadata={"scrapbook": {"name": name,
                                                              "mime_prefix": "application/papermill.record/"}})

    cell = nbformat.v4.new_code_cell("glue_all(...)")
    cell.outputs = [glued("c9_headline", -0.25), glued("c9_unused", 2.0)]
    nb = nbformat.v4.new_notebook()
    nb.cells = [cell, nbformat.v4.new_markdown_cell("```{solution} c9-ex\n:label: c9-sol\n\nDone.\n```")]
    (tmp_path / "book").mkdir()
    nbformat.write(nb, tmp_path / "book" / "c9_x.ipynb")
    (tmp_path / "book" / "intro.md").write_text("Result: {glue:text}`c9_x.ipynb::c9_headline:.3f`.\n", encoding="utf-8")
    assert strip_solutions_site(tmp_path) == 1
    out = nbformat.read(tmp_path / "book" / "c9_x.ipynb", as_version=4)
    assert [o["metadata"]["scrapbook"]["name"] for o in out.cells[0].outputs] == ["c9_headline"]
