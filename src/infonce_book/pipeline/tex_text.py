"""TeX math as plain Unicode text, where no MathJax typesets it (a tab's ``<title>``, the search
index and summaries): "$O(1/k)$" reads "O(1/k)", "$\\chi^2$" reads "χ²". :func:`tex_to_text` knows the
TeX of the book's titles; an unknown command keeps its name without the backslash. :data:`SYMBOLS`
is the table, also handed to the search page's script.
"""

from __future__ import annotations

import re

__all__ = ["SYMBOLS", "tex_to_text"]

_GREEK = {name: chr(code) for name, code in [
    ("alpha", 0x3B1), ("beta", 0x3B2), ("gamma", 0x3B3), ("delta", 0x3B4), ("epsilon", 0x3F5),
    ("varepsilon", 0x3B5), ("zeta", 0x3B6), ("eta", 0x3B7), ("theta", 0x3B8), ("vartheta", 0x3D1),
    ("iota", 0x3B9), ("kappa", 0x3BA), ("lambda", 0x3BB), ("mu", 0x3BC), ("nu", 0x3BD), ("xi", 0x3BE),
    ("pi", 0x3C0), ("varpi", 0x3D6), ("rho", 0x3C1), ("varrho", 0x3F1), ("sigma", 0x3C3), ("tau", 0x3C4),
    ("upsilon", 0x3C5), ("phi", 0x3D5), ("varphi", 0x3C6), ("chi", 0x3C7), ("psi", 0x3C8), ("omega", 0x3C9),
    ("Gamma", 0x393), ("Delta", 0x394), ("Theta", 0x398), ("Lambda", 0x39B), ("Xi", 0x39E), ("Pi", 0x3A0),
    ("Sigma", 0x3A3), ("Phi", 0x3A6), ("Psi", 0x3A8), ("Omega", 0x3A9)]}

#: TeX commands (without the backslash) and the text that stands for them.
SYMBOLS: dict[str, str] = {
    **_GREEK,
    "to": "→", "rightarrow": "→", "leftarrow": "←", "mapsto": "↦", "infty": "∞", "ne": "≠", "neq": "≠",
    "le": "≤", "leq": "≤", "ge": "≥", "geq": "≥", "approx": "≈", "sim": "∼", "propto": "∝", "in": "∈",
    "notin": "∉", "subset": "⊂", "subseteq": "⊆", "cdot": "·", "times": "×", "pm": "±", "mp": "∓",
    "ll": "≪", "gg": "≫", "mid": "|", "vert": "|", "Vert": "‖", "|": "‖", "lvert": "|", "rvert": "|",
    "ell": "ℓ", "partial": "∂", "nabla": "∇", "sum": "∑", "prod": "∏", "int": "∫", "ldots": "…",
    "dots": "…", "cdots": "⋯", "langle": "⟨", "rangle": "⟩", "star": "⋆", "circ": "∘", "forall": "∀",
    "exists": "∃", "emptyset": "∅", "Rightarrow": "⇒", "iff": "⇔", "equiv": "≡", "top": "⊤",
    "E": "𝔼", "R": "ℝ", "KL": "KL", "Var": "Var", "log": "log", "exp": "exp", "max": "max", "min": "min",
    "sup": "sup", "inf": "inf", "arg": "arg", "lim": "lim", "det": "det", "tr": "tr",
    "{": "{", "}": "}", "%": "%", "&": "&", "_": "_", "#": "#", "$": "$",
}

_BLACKBOARD = {"E": "𝔼", "R": "ℝ", "N": "ℕ", "Z": "ℤ", "Q": "ℚ", "C": "ℂ", "P": "ℙ", "S": "𝕊", "1": "𝟙"}
_ACCENTS = {"bar": "\u0304", "overline": "\u0305", "hat": "\u0302", "widehat": "\u0302", "tilde": "\u0303",
            "widetilde": "\u0303", "dot": "\u0307", "vec": "\u20d7"}
_PLAIN = {"mathrm", "text", "textrm", "operatorname", "mathit", "mathbf", "boldsymbol", "mathsf", "mathcal",
          "mathscr", "mathfrak", "textit", "textbf", "mbox", "emph"}
_DROP = {"left", "right", "big", "Big", "bigg", "Bigg", "bigl", "bigr", "Bigl", "Bigr", "displaystyle",
         "textstyle", "limits", "nolimits"}
_SPACE = {",": " ", ";": " ", ":": " ", "!": "", " ": " ", "quad": " ", "qquad": " "}
_SUP = dict(zip("0123456789+-=()nikT", "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ⁿⁱᵏᵀ"))
_SUB = dict(zip("0123456789+-=()aeijkmnoprstuvx", "₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎ₐₑᵢⱼₖₘₙₒₚᵣₛₜᵤᵥₓ"))

_COMMAND = re.compile(r"\\([A-Za-z]+|.)")


def _group(tex: str, i: int) -> tuple[str, int]:
    """The argument starting at ``tex[i]`` (a ``{...}`` group, a command or one character) and the
    index after it."""
    while i < len(tex) and tex[i] == " ":
        i += 1
    if i >= len(tex):
        return "", i
    if tex[i] == "{":
        depth = 0
        for j in range(i, len(tex)):
            depth += {"{": 1, "}": -1}.get(tex[j], 0)
            if depth == 0:
                return tex[i + 1:j], j + 1
        return tex[i + 1:], len(tex)
    if tex[i] == "\\":
        m = _COMMAND.match(tex, i)
        return m.group(0), m.end()
    return tex[i], i + 1


def _script(text: str, table: dict[str, str], mark: str) -> str:
    if text and all(c in table for c in text):
        return "".join(table[c] for c in text)
    return f"{mark}{text}" if len(text) == 1 or (text.isascii() and text.isalpha()) else f"{mark}({text})"


def _wrap(text: str) -> str:
    return text if len(text) == 1 or text.isalnum() else f"({text})"


def _command(name: str, tex: str, i: int) -> tuple[str, int]:
    """The text of the command ``\\name`` whose arguments start at ``tex[i]``."""
    if name in _DROP or name in _SPACE:
        return _SPACE.get(name, ""), i
    if name not in _PLAIN and name not in _ACCENTS and name not in ("mathbb", "frac", "dfrac", "tfrac", "sqrt"):
        return SYMBOLS.get(name, name), i
    arg, i = _group(tex, i)
    if name == "mathbb":
        return "".join(_BLACKBOARD.get(c, c) for c in arg), i
    text = tex_to_text(arg)
    if name in ("frac", "dfrac", "tfrac"):
        den, i = _group(tex, i)
        return f"{_wrap(text)}/{_wrap(tex_to_text(den))}", i
    if name in _ACCENTS:
        return (text + _ACCENTS[name] if len(text) == 1 else f"{name}({text})"), i
    return (("√" + text if len(text) == 1 else f"√({text})") if name == "sqrt" else text), i


def tex_to_text(tex: str) -> str:
    """Plain Unicode text for a TeX math fragment (without ``$`` or ``\\(``...``\\)`` delimiters).

    Examples:
        >>> tex_to_text(r"O(1/k)")
        'O(1/k)'
        >>> tex_to_text(r"\\chi^2")
        'χ²'
        >>> tex_to_text(r"\\pi M \\ne \\pi")
        'π M ≠ π'
        >>> tex_to_text(r"p_{\\mathrm{eff}}/n")
        'p_eff/n'
        >>> tex_to_text(r"2\\bar R")
        '2R̄'
    """
    out, i = [], 0
    while i < len(tex):
        c = tex[i]
        if c == "\\":
            m = _COMMAND.match(tex, i)
            if m is None:
                i += 1
                continue
            text, i = _command(m.group(1), tex, m.end())
            if text and out and out[-1][-1:].isalpha() and text[0].isalpha() and m.group(1) in SYMBOLS \
                    and len(m.group(1)) > 1 and SYMBOLS[m.group(1)].isascii():
                out.append(" ")  # "k\log k" -> "k log k"
            out.append(text)
        elif c in "^_":
            arg, i = _group(tex, i + 1)
            out.append(_script(tex_to_text(arg), _SUP if c == "^" else _SUB, c))
        elif c in "{}":
            i += 1
        elif c == "~":
            out.append(" ")
            i += 1
        else:
            out.append(c)
            i += 1
    return re.sub(r" {2,}", " ", "".join(out)).strip()
