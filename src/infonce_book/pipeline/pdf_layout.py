"""Where the text of a PDF lies: the box of every character, read from the page's content stream.

:func:`glyph_boxes` interprets the text operators of a page (``BT``/``ET``, ``Tf``, ``Tm``,
``Td``/``TD``/``T*``, ``Tc``/``Tw``/``Tz``/``TL``/``Ts``, ``Tj``/``TJ``/``'``/``"``) under the
graphics state's ``cm``/``q``/``Q`` and returns, for each character shown, its horizontal extent
(from its origin to its advance) and its baseline in page coordinates (points, origin bottom-left),
following the PDF specification (ISO 32000-1, 9.4.4 "Text space details": the advance is
``((w0 - Tj/1000) * Tfs + Tc + Tw) * Th``, with ``w0`` the glyph's width from the font's ``/W``
or ``/Widths``). :func:`outside` lists the characters that lie outside a rectangle: the PDF
test, and ``infonce-book pdf`` itself, use it to find a formula, table or code line cut at the
page's margin.

Fonts: composite fonts (``Type0``, 2-byte codes as chromium writes them, widths from ``/W`` and
``/DW``), simple fonts (``/FirstChar`` and ``/Widths``) and Type 3 fonts (their ``/FontMatrix``).
Invisible text (rendering mode 3 or 7) is not counted. Fonts read with :mod:`pypdf`; the
content stream is split into operands and operators by :func:`_operations` (a regular
expression, several times faster than pypdf's parser on chromium's streams; a stream with an
inline image, which a regular expression cannot split, is left to pypdf's parser).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Glyph", "glyph_boxes", "outside"]


@dataclass(frozen=True)
class Glyph:
    """One character shown on a page: ``x0``..``x1`` (points, ``x0 <= x1``) and baseline ``y``;
    ``code`` is the font's code as a hex string (the unicode text is not needed to place it).
    ``stretched``: drawn scaled in one direction more than twice the other, as MathJax draws the
    extender of a tall delimiter (a glyph stretched a thousandfold and clipped to its piece), whose
    origin says nothing about where its ink lies vertically."""

    x0: float
    x1: float
    y: float
    code: str
    stretched: bool = False


def _mul(a, b):
    """The product of two PDF matrices ``[a b c d e f]`` (``a`` applied first)."""
    return [a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3],
            a[2] * b[0] + a[3] * b[2], a[2] * b[1] + a[3] * b[3],
            a[4] * b[0] + a[5] * b[2] + b[4], a[4] * b[1] + a[5] * b[3] + b[5]]


class _Font:
    """A font resource's code width (text space units per unit font size) and code length."""

    def __init__(self, font):
        font = font.get_object()
        self.two_byte = font.get("/Subtype") == "/Type0"
        self.scale = float(font["/FontMatrix"][0]) if font.get("/Subtype") == "/Type3" else 0.001
        self.widths: dict[int, float] = {}
        if self.two_byte:
            desc = font["/DescendantFonts"][0].get_object()
            self.default = float(desc.get("/DW", 1000))
            w = list(desc.get("/W", []))
            i = 0
            while i < len(w):
                first = int(w[i])
                if isinstance(w[i + 1].get_object(), list):
                    for k, v in enumerate(w[i + 1].get_object()):
                        self.widths[first + k] = float(v)
                    i += 2
                else:
                    for c in range(first, int(w[i + 1]) + 1):
                        self.widths[c] = float(w[i + 2])
                    i += 3
        else:
            self.default = float(font.get("/FontDescriptor", {}).get("/MissingWidth", 0)) \
                if "/FontDescriptor" in font else 0.0
            first = int(font.get("/FirstChar", 0))
            for k, v in enumerate(font.get("/Widths", [])):
                self.widths[first + k] = float(v)

    def codes(self, data: bytes) -> list[int]:
        if self.two_byte:
            return [int.from_bytes(data[i:i + 2], "big") for i in range(0, len(data) - 1, 2)]
        return list(data)

    def width(self, code: int) -> float:
        return self.widths.get(code, self.default) * self.scale


class _TextState:
    def __init__(self):
        self.tc = self.tw = self.ts = self.tl = 0.0
        self.th = 1.0
        self.tfs = 0.0
        self.font: _Font | None = None
        self.render = 0
        self.tm = self.tlm = [1.0, 0.0, 0.0, 1.0, 0.0, 0.0]


def _show(state: _TextState, ctm, data: bytes, out: list[Glyph]) -> None:
    font = state.font
    if font is None:
        return
    for code in font.codes(bytes(data)):
        w0 = font.width(code)
        space = state.tw if (not font.two_byte and code == 32) else 0.0
        tx = (w0 * state.tfs + state.tc + space) * state.th
        trm = _mul([state.tfs * state.th, 0, 0, state.tfs, 0, state.ts], _mul(state.tm, ctm))
        start = trm[4]
        end = _mul([1, 0, 0, 1, w0, 0], trm)[4]
        if state.render not in (3, 7):
            sx, sy = abs(trm[0]) + abs(trm[1]), abs(trm[2]) + abs(trm[3])
            stretched = sx > 2 * sy or sy > 2 * sx
            out.append(Glyph(min(start, end), max(start, end), trm[5], f"{code:x}", stretched))
        state.tm = _mul([1, 0, 0, 1, tx, 0], state.tm)


def _operate(op: bytes, args: list, state: _TextState, ctm, resources, fonts, out) -> None:
    """One text operator (the graphics-state ones are handled by :func:`glyph_boxes`)."""
    nums = [float(a) for a in args if isinstance(a, (int, float))]
    if op == b"BT":
        state.tm = state.tlm = [1.0, 0.0, 0.0, 1.0, 0.0, 0.0]
    elif op == b"Tf":
        name = str(args[0])
        if name not in fonts:
            fonts[name] = _Font(resources["/Font"][name])
        state.font, state.tfs = fonts[name], float(args[1])
    elif op == b"Tm":
        state.tm = state.tlm = [float(a) for a in args]
    elif op in (b"Td", b"TD"):
        if op == b"TD":
            state.tl = -nums[1]
        state.tm = state.tlm = _mul([1, 0, 0, 1, nums[0], nums[1]], state.tlm)
    elif op == b"T*":
        state.tm = state.tlm = _mul([1, 0, 0, 1, 0, -state.tl], state.tlm)
    elif op in (b"Tc", b"Tw", b"TL", b"Ts", b"Tr"):
        setattr(state, {b"Tc": "tc", b"Tw": "tw", b"TL": "tl", b"Ts": "ts", b"Tr": "render"}[op],
                nums[0] if op != b"Tr" else int(nums[0]))
    elif op == b"Tz":
        state.th = nums[0] / 100
    elif op == b"Tj":
        _show(state, ctm, args[0], out)
    elif op in (b"'", b'"'):
        if op == b'"':
            state.tw, state.tc = nums[0], nums[1]
        state.tm = state.tlm = _mul([1, 0, 0, 1, 0, -state.tl], state.tlm)
        _show(state, ctm, args[-1], out)
    elif op == b"TJ":
        for item in args[0]:
            if isinstance(item, (int, float)):
                state.tm = _mul([1, 0, 0, 1, -float(item) / 1000 * state.tfs * state.th, 0], state.tm)
            else:
                _show(state, ctm, item, out)


_TOKEN = re.compile(rb"""
    (?P<ws>[ \t\r\n\f\x00]+|%[^\r\n]*)
  | (?P<num>[+-]?(?:\d+\.?\d*|\.\d+))
  | (?P<name>/[^ \t\r\n\f\x00()<>\[\]{}/%]*)
  | (?P<hex><[0-9A-Fa-f \t\r\n]*>)
  | (?P<lit>\((?:\\.|[^\\()]|\((?:\\.|[^\\()])*\))*\))
  | (?P<open>\[|<<) | (?P<close>\]|>>)
  | (?P<op>[A-Za-z'"*][A-Za-z0-9'"*]*)
""", re.X | re.S)
_ESCAPES = {b"n": b"\n", b"r": b"\r", b"t": b"\t", b"b": b"\b", b"f": b"\f"}


def _literal(raw: bytes) -> bytes:
    body = raw[1:-1]
    return re.sub(rb"\\([0-7]{1,3}|.)", lambda m: bytes([int(m.group(1), 8)]) if m.group(1)[:1].isdigit()
                  else _ESCAPES.get(m.group(1), m.group(1)), body, flags=re.S)


def _operations(data: bytes):
    """``(operands, operator)`` of a content stream, as pypdf's ``ContentStream.operations`` gives
    them for the operators used here (numbers as floats, strings as bytes, arrays as lists,
    names as ``str``; dictionaries are skipped); ``None`` if the stream has an inline image."""
    if re.search(rb"(?:^|\s)BI\s", data):
        return None
    ops, stack, depth = [], [[]], 0
    for m in _TOKEN.finditer(data):
        kind = m.lastgroup
        if kind == "ws":
            continue
        tok = m.group()
        if kind == "open":
            stack.append([])
            depth += tok == b"<<"
        elif kind == "close":
            item = stack.pop()
            if tok == b"]":
                stack[-1].append(item)
            else:
                depth -= 1
        elif kind == "op" and len(stack) == 1:
            ops.append((stack[0], tok))
            stack = [[]]
        elif kind == "num":
            stack[-1].append(float(tok))
        elif kind == "name":
            stack[-1].append(tok.decode("latin-1"))
        elif kind == "hex":
            digits = re.sub(rb"\s", b"", tok[1:-1])
            stack[-1].append(bytes.fromhex((digits + b"0" * (len(digits) % 2)).decode()))
        elif kind == "lit":
            stack[-1].append(_literal(tok))
        else:
            stack[-1].append(tok)  # true, false, null inside operands
    return ops


def glyph_boxes(page, reader) -> list[Glyph]:
    """Every character shown on ``page`` (a :class:`pypdf.PageObject` of ``reader``), in page
    coordinates (points). Form XObjects are not entered (chromium draws its text on the page)."""
    from pypdf.generic import ContentStream  # optional dependency, as in pipeline/pdf.py

    contents = page.get_contents()
    if contents is None:
        return []
    resources = page.get("/Resources", {}).get_object()
    ctm = [1.0, 0.0, 0.0, 1.0, 0.0, 0.0]
    stack: list = []
    state = _TextState()
    fonts: dict = {}
    out: list[Glyph] = []
    ops = _operations(contents.get_data())
    if ops is None:
        ops = ContentStream(contents, reader, "bytes").operations
    for args, op in ops:
        if op == b"q":
            stack.append(ctm)
        elif op == b"Q":
            ctm = stack.pop() if stack else ctm
        elif op == b"cm":
            ctm = _mul([float(a) for a in args], ctm)
        else:
            _operate(op, args, state, ctm, resources, fonts, out)
    return out


def outside(glyphs: list[Glyph], left: float, bottom: float, right: float, top: float,
            tolerance: float = 0.5) -> list[Glyph]:
    """The glyphs not wholly inside the rectangle ``[left, right] x [bottom, top]`` (points),
    with ``tolerance`` points of slack (a glyph's advance may end a hair past its ink); a
    ``stretched`` glyph is placed horizontally only."""
    return [g for g in glyphs if g.x0 < left - tolerance or g.x1 > right + tolerance
            or (not g.stretched and (g.y < bottom - tolerance or g.y > top + tolerance))]
