"""The text table without rich, for documents of printable ASCII and Latin-1 signs and letters
(every built-in name, number and note; `validate`'s "§" column): the same characters rich 15
draws for report/formats.py's table (box SIMPLE_HEAVY without edges, fixed column widths, text
wrapped at word boundaries and a word longer than its column folded), in a few milliseconds and
without importing rich (some 20 ms of a cold `plan`; 0.4 s of `validate`'s 520 kB table). A
document with any other character (a user's config.json name in another script, a wide glyph)
or a table wider than the page is drawn by rich itself (formats.render_table), which measures
cells by their terminal width. tests/test_plain_table.py checks the two agree.

The behaviour reproduced, of rich 15.0.0 (MIT licence; tested against it): word wrapping
(``rich/_wrap.py`` divide_line: a word is its leading and trailing whitespace, a line is broken
before the word that does not fit, a word wider than the line is folded), the line clean-up
(``Text.wrap``: trailing whitespace past the width dropped, then justified and cropped;
``containers.Lines.justify``: left pads, right and center strip the right first), and the table
(``rich/table.py``: each cell padded by the table's padding except at the outer edges, rows top-
aligned, the header row bottom-aligned, cells joined by the box's space divider, a heavy rule under
the header, the caption wrapped at the table's width and left-justified).
"""

from __future__ import annotations

import re

_WORD = re.compile(r"\s*\S+\s*")
# printable ASCII, and Latin-1's printable signs and letters (U+00A1-U+00FF but the soft hyphen
# U+00AD): one terminal cell each (rich.cells.cell_len), none of them whitespace to str.split or
# re's \s, so wrapped as ASCII is (U+00A0, a no-break space, is whitespace to both: left to rich)
_PRINTABLE = re.compile(r"[\x20-\x7e\n\u00a1-\u00ac\u00ae-\u00ff]*")
RULE = "\u2501"  # box SIMPLE_HEAVY's head-row horizontal (and cross, without edges)


def plain(text: str) -> bool:
    """Printable ASCII, Latin-1's printable signs and letters, and newlines only: one
    character, one terminal cell."""
    return _PRINTABLE.fullmatch(text) is not None


def _breaks(line: str, width: int) -> list[int]:
    """Where rich breaks ``line`` at ``width`` columns, folding over-long words."""
    out: list[int] = []
    offset = 0
    for m in _WORD.finditer(line):
        start, word = m.start(), m.group()
        size = len(word.rstrip())
        if width - offset >= size:
            offset += len(word)
        elif size > width:
            pieces = [word[i:i + width] for i in range(0, len(word), width)]
            for k, piece in enumerate(pieces):
                if start:
                    out.append(start)
                if k == len(pieces) - 1:
                    offset = len(piece)
                else:
                    start += len(piece)
        elif offset and start:
            out.append(start)
            offset = len(word)
    return out


def wrap(text: str, width: int, justify: str = "default") -> list[str]:
    """``text``'s lines at ``width`` columns, justified: default (as wrapped), left (padded),
    right or center."""
    lines: list[str] = []
    for line in text.split("\n"):
        cuts = [0, *_breaks(line, width), len(line)]
        for a, b in zip(cuts, cuts[1:]):
            piece = line[a:b]
            if len(piece) > width:  # whitespace past the width goes
                trail = len(piece) - len(piece.rstrip())
                piece = piece[:len(piece) - min(trail, len(piece) - width)]
            if justify == "left":
                piece = piece[:width].ljust(width)
            elif justify == "right":
                piece = piece.rstrip()[:width].rjust(width)
            elif justify == "center":
                piece = piece.rstrip()[:width]
                piece = (" " * ((width - len(piece)) // 2) + piece).ljust(width)
            lines.append(piece[:width])
    return lines


def table(headers: list[str], rows: list[list[str]], widths: list[int], aligns: list[str],
          pad: tuple[int, int], caption: str | None) -> list[str]:
    """The table's lines: columns of ``widths`` (content), ``pad`` (left, right) cells inside
    the table, none at its outer edges; ``aligns`` left/right/center."""
    n = len(widths)
    pads = [(0 if i == 0 else pad[0], 0 if i == n - 1 else pad[1]) for i in range(n)]
    total = sum(widths) + sum(a + b for a, b in pads) + n - 1

    def row(cells: list[str], bottom: bool) -> list[str]:
        parts = [wrap(c, w, j) for c, w, j in zip(cells, widths, aligns)]
        height = max(len(p) for p in parts)
        out = []
        for p, w, (left, right) in zip(parts, widths, pads):
            blank = [" " * w] * (height - len(p))
            p = blank + p if bottom else p + blank
            out.append([" " * left + line.ljust(w)[:w] + " " * right for line in p])
        return [" ".join(c[i] for c in out) for i in range(height)]
    lines = row(headers, True) + [RULE * total]
    for cells in rows:
        lines += row(cells, False)
    if caption:
        lines += wrap(caption, total, "left")
    return lines
