"""The reading path: which chapter uses which, read from the chapters' own cross-references.

A chapter *uses* an earlier chapter when it refers to it: ``{doc}`` to its page, or ``{prf:ref}``,
``{eq}``, ``{numref}``, ``{ref}`` to one of its labels (labels carry the chapter's prefix,
``c4-thm-lipschitz``); references forward are pointers, not prerequisites. The intro's
``<!-- infonce-book: reading-path -->`` gets :func:`reading_path_markdown`: a table of the direct uses
and an inline SVG of the uses no chain of others implies (the transitive reduction), each box a link.
"""

from __future__ import annotations

import re
from html import escape
from pathlib import Path

_ROLE = re.compile(r"\{(doc|prf:ref|eq|numref|ref)\}`([^`]*)`")


def chapter_uses(pages: dict[str, Path]) -> dict[str, list[str]]:
    """``{chapter: [chapters it refers to]}`` for the chapter pages ``{stem: path}`` (stems
    ``c<N>_<topic>``, in book order); only references to earlier chapters count (a chapter's
    references to itself or to later chapters are not prerequisites)."""
    prefix = {stem.split("_", 1)[0]: stem for stem in pages}  # "c4" -> "c4_continuity"
    uses = {}
    for stem, path in pages.items():
        found = set()
        for role, content in _ROLE.findall(path.read_text(encoding="utf-8")):
            m = re.search(r"<([^>]+)>\s*$", content)  # ``Title <target>`` or ``target``
            target = (m.group(1) if m else content).strip().lstrip("/")
            if role == "doc" and Path(target).name in pages:
                found.add(Path(target).name)
            elif role != "doc" and target.split("-", 1)[0] in prefix:
                found.add(prefix[target.split("-", 1)[0]])
        earlier = list(pages)[:list(pages).index(stem)]
        uses[stem] = [s for s in earlier if s in found]
    return uses


def _reduce(uses: dict[str, list[str]]) -> dict[str, list[str]]:
    """Transitive reduction: drop a use that a chain of other uses already implies."""
    def reachable(a, skip_edge):
        seen, stack = set(), [b for b in uses[a] if (a, b) != skip_edge]
        while stack:
            b = stack.pop()
            if b not in seen:
                seen.add(b)
                stack.extend(uses.get(b, []))
        return seen

    return {a: [b for b in bs if b not in reachable(a, (a, b))] for a, bs in uses.items()}


def _levels(uses: dict[str, list[str]]) -> dict[str, int]:
    """Row of each chapter: at least the length of the longest chain of uses leading to it,
    and just above the first chapter that uses it."""
    level: dict[str, int] = {}

    def depth(a, path=()):
        if a in path:
            raise ValueError(f"the chapters refer to each other in a cycle: {' -> '.join((*path, a))}")
        if a not in level:
            level[a] = 1 + max((depth(b, (*path, a)) for b in uses[a]), default=-1)
        return level[a]

    for a in uses:
        depth(a)
    # then as late as possible: a chapter sits just above its first user (short arrows)
    for a in sorted(uses, key=lambda s: -level[s]):
        users = [u for u, used in uses.items() if a in used]
        if users:
            level[a] = max(level[a], min(level[u] for u in users) - 1)
    return level


def diagram_svg(uses: dict[str, list[str]], numbers: dict[str, int]) -> str:
    """An inline SVG, narrow enough for a phone at its natural size (about 340 px wide): one box
    per chapter ("4 continuity"), a link to the chapter's page (``<stem>.html``, beside the intro),
    in rows by :func:`_levels` from top to bottom, and an arrow from a chapter down to each
    chapter that uses it (transitive reduction)."""
    reduced = _reduce(uses)
    level = _levels(uses)
    rows: dict[int, list[str]] = {}
    for stem in uses:
        rows.setdefault(level[stem], []).append(stem)
    w, h, gx, gy, pad = 150, 36, 24, 30, 6
    per_row = max(len(s) for s in rows.values())
    width = pad * 2 + per_row * w + (per_row - 1) * gx
    height = pad * 2 + (max(rows) + 1) * (h + gy) - gy
    pos = {}
    for r, stems in rows.items():
        left = (width - len(stems) * w - (len(stems) - 1) * gx) / 2  # each row centred
        for i, stem in enumerate(stems):
            pos[stem] = (left + i * (w + gx), pad + r * (h + gy))
    muted = "var(--pst-color-text-muted, #555)"
    parts = [f'<svg class="infonce-reading-path" xmlns="http://www.w3.org/2000/svg" role="group" '
             f'width="{width:g}" height="{height:g}" viewBox="0 0 {width:g} {height:g}" '
             f'style="max-width: 100%; height: auto" aria-label="Which chapters use which">',
             '<defs><marker id="infonce-arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" '
             f'markerHeight="7" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" '
             f'style="fill: {muted}"/></marker></defs>']
    for a, bs in reduced.items():
        for b in bs:  # a uses b: the arrow goes from b (read first) down to a
            (x1, y1), (x2, y2) = pos[b], pos[a]
            parts.append(f'<line x1="{x1 + w / 2:g}" y1="{y1 + h:g}" x2="{x2 + w / 2:g}" y2="{y2:g}" '
                         f'style="stroke: {muted}" stroke-width="1.5" marker-end="url(#infonce-arrow)"/>')
    for stem, (x, y) in pos.items():
        label = f"{numbers[stem]} {stem.split('_', 1)[1]}" if "_" in stem else stem
        parts.append(f'<a href="{stem}.html"><rect x="{x:g}" y="{y:g}" width="{w}" height="{h}" rx="6" '
                     f'fill="#eef3fb" stroke="#3b6db3"/><text x="{x + w / 2:g}" y="{y + h / 2 + 5:g}" '
                     f'text-anchor="middle" font-family="sans-serif" font-size="15" fill="#1a1a1a">'
                     f'{escape(label)}</text></a>')
    parts.append("</svg>")
    return "".join(parts)


def reading_path_markdown(pages: dict[str, Path]) -> str:
    """The generated reading path (MyST): the diagram and a table of direct uses."""
    uses = chapter_uses(pages)
    numbers = {stem: i for i, stem in enumerate(pages, start=1)}
    rows = []
    for stem, used in uses.items():
        after = ", ".join(f"{numbers[u]} ({{doc}}`{u}`)" for u in used) or "only the {doc}`notation`"
        rows.append(f"| {numbers[stem]} | {{doc}}`{stem}` | {after} |")
    return ("<figure class=\"infonce-reading-path\">\n" + diagram_svg(uses, numbers) + "\n</figure>\n\n"
            "An arrow from one chapter down to another: the second uses results of the first (read "
            "from the chapters' cross-references at every build). Each box opens its chapter.\n\n"
            "| chapter | page | uses results of chapters |\n|---|---|---|\n" + "\n".join(rows) + "\n")
