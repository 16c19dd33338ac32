"""Stacked horizontal bars as inline SVG, written directly (no matplotlib: importing it cost a
design-review page of `plan`, `step` or `memory` about 1 s of its 1.6-2 s).

The same conventions as the matplotlib charts (report/html_charts.py): text stays text, every
segment has its own colour and hatch and its name in the legend, the numbers are in the table
beside the chart, and the output is deterministic (no ids but the patterns', numbered in order).
"""

from __future__ import annotations

import math

from optimus_calc.record import record

W, LEFT, RIGHT, ROW_H, BAR_H, LEGEND_ROW = 1000.0, 150.0, 20.0, 46.0, 28.0, 20.0
MAX_LABEL = 48  # characters of a row label: a margin of at most 16 + 7.2 x 48 = 362 units


@record
class Segment:
    name: str
    value: float
    colour: str
    hatch: str = ""      # "", "/", "\\", "-", "|", doubled for denser, "x" / "+" for both
    alpha: float = 1.0


@record
class VLine:
    x: float
    label: str           # in the legend
    tag: str             # beside the line, at the top of the plot
    dashed: bool = False
    tag_left: bool = False


def esc(text: str) -> str:
    return (str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;"))


def num(v: float) -> str:
    return f"{v:.2f}".rstrip("0").rstrip(".")


def nice_ticks(top: float) -> list[float]:
    """Ticks from 0 to at most ``top`` at a step of 1, 2 or 5 x 10^k, five to ten of them."""
    if not math.isfinite(top) or top <= 0:
        return [0.0]
    raw = top / 6
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    return [i * step for i in range(int(top / step + 1e-9) + 1)]


def tick_text(v: float) -> str:
    return f"{v:g}" if abs(v) < 1e6 else f"{v:.3g}"


def _pattern(pid: str, colour: str, hatch: str, alpha: float) -> str:
    """A fill of ``colour`` crossed by white lines in the hatch's directions (matplotlib's
    hatch letters: a doubled letter draws twice as dense)."""
    size = 6 if len(hatch) > 1 and hatch[0] == hatch[1] else 10
    lines = []
    for ch in set(hatch):
        if ch in "/x":
            lines.append(f"M0,{size} L{size},0")
        if ch in "\\x":
            lines.append(f"M0,0 L{size},{size}")
        if ch in "-+":
            lines.append(f"M0,{size / 2} L{size},{size / 2}")
        if ch in "|+":
            lines.append(f"M{size / 2},0 L{size / 2},{size}")
    path = (f'<path d="{" ".join(sorted(lines))}" stroke="#ffffff" stroke-width="0.8"/>'
            if lines else "")
    return (f'<pattern id="{pid}" width="{size}" height="{size}" patternUnits="userSpaceOnUse">'
            f'<rect width="{size}" height="{size}" fill="{colour}" fill-opacity="{alpha:g}"/>'
            f"{path}</pattern>")


def cut(text: str, chars: int) -> str:
    """``text`` cut to ``chars`` characters with an ellipsis (the full text stays in the table
    beside the chart and in the bar's tooltip)."""
    return text if len(text) <= chars else text[:max(chars - 1, 1)] + "\u2026"


def legend(entries: list[tuple[str, str, str]], x0: float, most: int) -> tuple[list[str], int]:
    """The legend's elements from ``x0`` to the right edge, and its rows: columns as wide as
    the longest entry (swatch, gap and ~7 units a character), at most ``most`` of them, so no
    entry runs into the next or past the edge (an entry longer than the width is cut)."""
    fit = int((W - x0 - 34) / 7.2)
    entries = [(cut(name, fit), fill, dash) for name, fill, dash in entries]
    widest = max((34 + 7.2 * len(name) for name, _, _ in entries), default=0.0)
    cols = max(1, min(most, int((W - x0) // widest))) if widest else most
    col_w, out = (W - x0) / cols, []
    for i, (name, fill, dash) in enumerate(entries):
        x, y = x0 + (i % cols) * col_w, 10 + (i // cols) * LEGEND_ROW
        if dash:
            extra = f' stroke-dasharray="{dash}"' if dash != "-" else ""
            out.append(f'<line x1="{x:g}" y1="{y + 7:g}" x2="{x + 18:g}" y2="{y + 7:g}" '
                       f'stroke="#000000" stroke-width="1.5"{extra}/>')
        else:
            out.append(f'<rect x="{x:g}" y="{y:g}" width="18" height="14" fill="{fill}"/>')
        out.append(f'<text x="{x + 24:g}" y="{y + 12:g}">{esc(name)}</text>')
    return out, math.ceil(len(entries) / cols) if entries else 0


def stacked_bars(rows: list[tuple[str, list[Segment]]], xmax: float, xlabel: str, label: str,
                 vlines: tuple[VLine, ...] = (), legend_cols: int = 5, ident: str = "b") -> str:
    """``rows`` (a label and its segments, top to bottom) as stacked bars on one x axis from 0
    to ``xmax``, the legend above, ``vlines`` across the plot; ``label``: the accessible name;
    ``ident``: the prefix of the chart's pattern ids (unique on a page of several charts)."""
    styles: dict[tuple, str] = {}
    for _, segs in rows:
        for s in segs:
            styles.setdefault((s.colour, s.hatch, s.alpha), f"{ident}-p{len(styles)}")
    # one legend entry per part (rows that share a part share its entry)
    entries = list(dict.fromkeys((s.name, f"url(#{styles[s.colour, s.hatch, s.alpha]})", "")
                                 for _, segs in rows for s in segs if s.value > 0))
    entries += [(v.label, "none", "4,3" if v.dashed else "-") for v in vlines]
    # room for the longest row label (about 7 units a character at font size 13), at most
    # MAX_LABEL characters: a longer one is cut, the plot keeps most of the width
    rows = [(cut(name, MAX_LABEL), segs) for name, segs in rows]
    left = max(LEFT, 16 + 7.2 * max((len(name) for name, _ in rows), default=0))
    legend_svg, n_leg = legend(entries, left, legend_cols)
    top = 10 + n_leg * LEGEND_ROW + 10
    plot_h = len(rows) * ROW_H
    height = top + plot_h + 48
    span = W - left - RIGHT
    xmax = xmax if math.isfinite(xmax) and xmax > 0 else 1.0
    sx = (lambda v: left + span * v / xmax)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W:g} {height:g}" role="img" '
           f'aria-label="{esc(label)}" font-family="sans-serif" font-size="13">',
           "<defs>" + "".join(_pattern(pid, *key) for key, pid in styles.items()) + "</defs>",
           *legend_svg]
    for r, (name, segs) in enumerate(rows):
        yc = top + r * ROW_H + ROW_H / 2
        out.append(f'<text x="{left - 8:g}" y="{yc + 4:g}" text-anchor="end">{esc(name)}'
                   "</text>")
        acc = 0.0  # the row's total so far
        for s in segs:
            if s.value <= 0:
                continue
            x0, x1 = sx(acc), sx(min(acc + s.value, xmax))
            out.append(f'<rect x="{x0:.2f}" y="{yc - BAR_H / 2:g}" width="{max(x1 - x0, 0):.2f}" '
                       f'height="{BAR_H:g}" fill="url(#{styles[s.colour, s.hatch, s.alpha]})" '
                       f'stroke="#ffffff" stroke-width="0.8"><title>{esc(s.name)}: '
                       f"{num(s.value)}</title></rect>")
            acc += s.value
    base = top + plot_h
    out.append(f'<line x1="{left:g}" y1="{base:g}" x2="{W - RIGHT:g}" y2="{base:g}" '
               'stroke="#000000" stroke-width="1"/>')
    out.append(f'<line x1="{left:g}" y1="{top:g}" x2="{left:g}" y2="{base:g}" '
               'stroke="#000000" stroke-width="1"/>')
    for t in nice_ticks(xmax):
        x = sx(t)
        out.append(f'<line x1="{x:.2f}" y1="{base:g}" x2="{x:.2f}" y2="{base + 5:g}" '
                   'stroke="#000000" stroke-width="1"/>')
        out.append(f'<text x="{x:.2f}" y="{base + 19:g}" text-anchor="middle">'
                   f"{tick_text(t)}</text>")
    out.append(f'<text x="{left + span / 2:g}" y="{base + 40:g}" text-anchor="middle">'
               f"{esc(xlabel)}</text>")
    for v in vlines:
        x = sx(min(max(v.x, 0.0), xmax))
        dash = ' stroke-dasharray="4,3"' if v.dashed else ""
        out.append(f'<line x1="{x:.2f}" y1="{top - 4:g}" x2="{x:.2f}" y2="{base:g}" '
                   f'stroke="#000000" stroke-width="{1.2 if v.dashed else 1.6}"{dash}/>')
        anchor, dx = ("end", -4) if v.tag_left else ("start", 4)
        out.append(f'<text x="{x + dx:.2f}" y="{top + 10:g}" text-anchor="{anchor}" '
                   f'font-size="12">{esc(v.tag)}</text>')
    out.append("</svg>")
    return "\n".join(out)
