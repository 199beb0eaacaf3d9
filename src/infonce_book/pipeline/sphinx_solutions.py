"""Links to solutions that read in full from any page (part of the book's Sphinx extension).

sphinx-exercise gives a ``{ref}`` to a solution's label the solution's full title ("Solution to
Exercise 1.2") only when the link is on the solution's own page; from another page the link reads
just "Solution to" (its post-transform looks at same-page references, ``refid``, only). This
post-transform, run after sphinx-exercise's, completes the cross-page ones (``refuri`` ending in
``#<solution label>``): "Solution to Exercise 1.2", the exercise's number from Sphinx's figure
numbers. A link whose text the author wrote is left alone.

The student edition removes the solutions; a page that links to one fails that build with a clear
error (:func:`infonce_book.pipeline.editions.strip_solutions_site`).
"""

from __future__ import annotations

from docutils import nodes
from sphinx.transforms.post_transforms import SphinxPostTransform

__all__ = ["CompleteSolutionLinks", "solution_link_text"]

_BARE = "Solution to"


def solution_link_text(env, solution_label: str) -> list[nodes.Node] | None:
    """The text of a link to a solution, as on the solution's own page: "Solution to Exercise N.M
    (the exercise's title)" (its math kept as math nodes); ``None`` when the label is not a
    solution's or its exercise has no number (yet)."""
    registry = getattr(env, "sphinx_exercise_registry", {}) or {}
    entry = registry.get(solution_label)
    if not entry or entry.get("type") != "solution":
        return None
    exercise_label = entry["node"].get("target_label")
    exercise = registry.get(exercise_label)
    if exercise is None:
        return None
    number = env.toc_fignumbers.get(exercise["docname"], {}).get("exercise", {}).get(exercise_label)
    if not number:
        return None
    out = [nodes.Text(f"{_BARE} Exercise {'.'.join(str(n) for n in number)}")]
    title = exercise["node"].children[0] if exercise["node"].children else None
    subtitle = next((c for c in title.children if isinstance(c, nodes.subtitle)), None) if title else None
    if subtitle is not None and subtitle.children:
        out += [nodes.Text(" ("), *(c.deepcopy() for c in subtitle.children), nodes.Text(")")]
    return out


class CompleteSolutionLinks(SphinxPostTransform):
    """Complete the text of cross-page links to solutions (see the module docstring)."""

    default_priority = 23  # after sphinx-exercise's ResolveLinkTextToSolutions (22)

    def run(self, **kwargs) -> None:
        for ref in list(self.document.findall(nodes.reference)):
            uri = ref.get("refuri") or ""
            if "#" not in uri or ref.astext().strip() != _BARE:
                continue
            text = solution_link_text(self.env, uri.rsplit("#", 1)[1])
            if text is None:
                continue
            holder = ref.children[0] if ref.children and isinstance(ref.children[0], nodes.inline) else ref
            holder.children = []
            holder.extend(text)
