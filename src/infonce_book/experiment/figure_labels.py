"""The figures' text in mathematics: find raw code identifiers in a figure's labels.

A reader sees a figure's titles, axis labels, legend entries and the tick labels of categorical
axes; none of them may show a code name (``student_t``, ``Lambda_star``, ``tau = 1``, ``vmf``,
``S^15``) where mathematics or words are meant, nor a tick label such as ``6×10⁰`` or ``−10⁰``.
:func:`~infonce_book.experiment.style.glue_figure` calls :func:`check_figure` on every figure a
chapter glues, so a chapter with such a label does not build.

The rules (text inside ``$...$`` is mathematics and exempt):

* an underscore or a caret outside mathematics (``student_t``, ``S^15``);
* a Greek letter or function written as a word (``tau``, ``Lambda``, ``sqrt``, ...);
* a lowercase model or method code (``vmf``, ``gaussian``, ``mc``, ``cv``, ``dv``, ``ntxent``);
* a tick label ``a×10⁰`` or ``±10⁰`` (matplotlib's log and symlog labels for 1 and -1).
"""

from __future__ import annotations

import re

__all__ = ["RAW_WORDS", "raw_identifiers", "figure_labels", "bad_ticks", "check_figure"]

#: Words that are code (or a symbol spelled out) in a label; matched as whole words, case-sensitive.
RAW_WORDS = ("tau", "kappa", "beta", "alpha", "delta", "lambda", "Lambda", "sigma", "theta", "mu", "pi", "rho",
             "eps", "epsilon", "sqrt", "inf", "nan", "NaN", "vmf", "gaussian", "ntxent", "infonce", "mc", "cv", "dv",
             "se", "ci")
_MATH = re.compile(r"(?<!\\)\$.*?(?<!\\)\$")
_WORD = re.compile(r"\b(" + "|".join(RAW_WORDS) + r")\b")
_TEN_TO_ZERO = re.compile(r"(\\times\s*|[-\u2212]\s*)10\^\{?0\}?|\u00d7\s*10\u2070|[-\u2212]10\u2070")


def raw_identifiers(text: str) -> list[str]:
    """The raw identifiers in one label (empty when it reads as words and mathematics).

    Examples:
        >>> raw_identifiers("vmf, sparse, tau = 1")
        ['vmf', 'tau']
        >>> raw_identifiers(r"$\\Lambda_\\star$ on $S^{15}$, $\\tau = 1$")
        []
        >>> raw_identifiers("student_t")
        ['student_t']
    """
    plain = _MATH.sub(" ", str(text))
    found = re.findall(r"\w*[_^]\w*", plain)
    found += [w for w in _WORD.findall(plain) if not any(w in f for f in found)]
    return found


def _legend_texts(legend) -> list[str]:
    if legend is None:
        return []
    texts = [t.get_text() for t in legend.get_texts()]
    return texts + ([legend.get_title().get_text()] if legend.get_title() is not None else [])


def _numeric(text: str) -> bool:
    t = text.replace("\u2212", "-").replace("$", "").replace(r"\mathdefault", "").strip("{} ")
    try:
        float(t)
        return True
    except ValueError:
        return bool(re.fullmatch(r"[-+0-9.{}^\\times ]*10\^\{?-?\d+\}?", t))


def figure_labels(fig) -> list[str]:
    """Every text a reader reads as a label: the suptitle, each axes' titles and axis labels,
    legend entries and titles (of the axes and of the figure), and the tick labels of
    categorical (non-numeric) axes. Draws the figure first (tick labels exist only then)."""
    fig.canvas.draw()
    out = [fig._suptitle.get_text()] if getattr(fig, "_suptitle", None) is not None else []
    for leg in getattr(fig, "legends", []):
        out += _legend_texts(leg)
    for ax in fig.axes:
        out += [ax.get_title(loc) for loc in ("left", "center", "right")]
        out += [ax.get_xlabel(), ax.get_ylabel()] + _legend_texts(ax.get_legend())
        for ticks in (ax.get_xticklabels(), ax.get_yticklabels()):
            out += [t.get_text() for t in ticks if t.get_text() and not _numeric(t.get_text())]
    out += [t.get_text() for t in fig.texts]
    for ax in fig.axes:
        out += [t.get_text() for t in ax.texts]
    return [t for t in out if t]


def bad_ticks(fig) -> list[str]:
    """Tick labels that read ``a×10⁰`` or ``±10⁰`` (draws the figure)."""
    fig.canvas.draw()
    return [t.get_text() for ax in fig.axes for minor in (False, True)
            for t in (*ax.get_xticklabels(minor=minor), *ax.get_yticklabels(minor=minor))
            if _TEN_TO_ZERO.search(t.get_text())]


def check_figure(fig, name: str = "figure") -> None:
    """Raise ``ValueError`` naming every label of ``fig`` with a raw identifier and every
    unreadable tick label (see the module docstring); nothing when the figure reads well."""
    problems = [f"{label!r} ({', '.join(raw_identifiers(label))})" for label in figure_labels(fig)
                if raw_identifiers(label)]
    problems += [f"tick label {t!r} (write 1, 2, 5 rather than a power of ten to the 0)" for t in bad_ticks(fig)]
    if problems:
        raise ValueError(f"figure {name!r}: labels a reader should not see: " + "; ".join(problems))
