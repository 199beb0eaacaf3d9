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
