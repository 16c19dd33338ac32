"""Line charts (panels sharing an x axis) and signed horizontal bars as inline SVG, written
directly for the HTML page of `sweep`, `comm` and `breakeven --sweep/--sensitivity` (no
matplotlib: importing it cost each page about 1 s of its 1.6 s). ``--plot FILE`` still draws
through matplotlib (report/plots.py), the same data and the same lines.

The conventions of report/svg_bars.py: text stays text, a line has its colour, its marker and
its dash (colour is never the only carrier) and its name in the legend, every value axis starts
at 0 (or below it where a value is negative), the numbers are in the table beside the chart,
and the output is deterministic.
"""

from __future__ import annotations

import math
import re

from optimus_calc.record import record
from optimus_calc.report.svg_bars import W, _cut, _esc, _legend, _num, _tick_text

LEFT, RIGHT, PANEL_H, GAP = 90.0, 30.0, 220.0, 34.0
MARKERS = ("o", "s", "^", "x", "d", "+")


@record
class Series:
    name: str
    xs: tuple[float, ...]
    ys: tuple[float, ...]
    colour: str
    marker: str = "o"    # one of MARKERS
    dashed: bool = False
    labels: tuple[str, ...] = ()  # a text beside each point (sweep: its layout), or none


@record
class Panel:
    ylabel: str
    series: tuple[Series, ...]
    zero_line: bool = False       # a line at y = 0 (a difference that changes sign)
    vline: tuple[float, str] | None = None  # a dashed grey line at x, named in the legend


def ticks(lo: float, hi: float) -> list[float]:
    """Ticks from ``lo`` to ``hi`` (``lo`` <= 0 <= ``hi``) at a step of 1, 2 or 5 x 10^k,
    four to ten of them, 0 among them."""
    span = hi - lo
    if not (math.isfinite(span) and span > 0):
        return [0.0]
    raw = span / 6
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step - 1e-9)
    return [i * step for i in range(first, int(math.floor(hi / step + 1e-9)) + 1)]


def _value_text(v: float) -> str:
    """A value tick as plots.py's axes write it: thousands separated from 100 up."""
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:g}"


def _mark(kind: str, x: float, y: float, colour: str) -> str:
    if kind == "s":
        return (f'<rect x="{x - 3.5:.2f}" y="{y - 3.5:.2f}" width="7" height="7" '
                f'fill="{colour}"/>')
    if kind == "^":
        return (f'<path d="M{x:.2f},{y - 4.5:.2f} L{x + 4:.2f},{y + 3:.2f} '
                f'L{x - 4:.2f},{y + 3:.2f} Z" fill="{colour}"/>')
    if kind == "d":
        return (f'<path d="M{x:.2f},{y - 4.5:.2f} L{x + 4:.2f},{y:.2f} L{x:.2f},{y + 4.5:.2f} '
                f'L{x - 4:.2f},{y:.2f} Z" fill="{colour}"/>')
    if kind in "x+":
        a = ((-4, -4, 4, 4), (-4, 4, 4, -4)) if kind == "x" else ((-5, 0, 5, 0), (0, -5, 0, 5))
        return "".join(f'<line x1="{x + p:.2f}" y1="{y + q:.2f}" x2="{x + r:.2f}" '
                       f'y2="{y + s:.2f}" stroke="{colour}" stroke-width="2"/>'
                       for p, q, r, s in a)
    return f'<circle cx="{x:.2f}" cy="{y:.2f}" r="3.5" fill="{colour}"/>'


def _x_scale(xs: list[float], log2_x: bool, left: float):
    """The x mapping over the points' range (a 6% margin each side), log base 2 or linear."""
    f = (lambda v: math.log2(v)) if log2_x else (lambda v: v)
    lo, hi = (min(f(v) for v in xs), max(f(v) for v in xs)) if xs else (0.0, 1.0)
    if hi - lo <= 0:
        lo, hi = lo - 1, hi + 1
    pad = 0.06 * (hi - lo)
    span = W - left - RIGHT
    return lambda v: left + span * (f(v) - lo + pad) / (hi - lo + 2 * pad)


def line_panels(panels: list[Panel], x_ticks: list[tuple[float, str]], xlabel: str,
                label: str, log2_x: bool = False, note: str = "") -> str:
    """``panels`` stacked on one x axis (``x_ticks``: value and text), the legend above;
    ``label``: the accessible name; ``note``: a line written in an empty chart."""
    seen: dict[str, tuple] = {}
    for p in panels:
        for s in p.series:
            seen.setdefault(s.name, ("6,4" if s.dashed else "-", s.colour, s.marker))
        if p.vline is not None:
            seen.setdefault(p.vline[1], ("3,3", "#777777", ""))
    legend, n_leg = _coloured_legend(list(seen.items()))
    top = 10 + n_leg * 20 + 14
    height = top + len(panels) * (PANEL_H + GAP) + 40
    xs = [x for p in panels for s in p.series for x in s.xs] + [v for v, _ in x_ticks] + [
        p.vline[0] for p in panels if p.vline is not None]
    sx = _x_scale([x for x in xs if not log2_x or x > 0], log2_x, LEFT)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W:g} {height:g}" role="img" '
           f'aria-label="{_esc(label)}" font-family="sans-serif" font-size="13">', *legend]
    for i, p in enumerate(panels):
        y0 = top + i * (PANEL_H + GAP)
        out += _panel(p, y0, sx, x_ticks, last=i == len(panels) - 1)
    if note:
        out.append(f'<text x="{LEFT + (W - LEFT - RIGHT) / 2:g}" y="{top + PANEL_H / 2:g}" '
                   f'text-anchor="middle">{_esc(note)}</text>')
    out.append(f'<text x="{LEFT + (W - LEFT - RIGHT) / 2:g}" y="{height - 8:g}" '
               f'text-anchor="middle">{_esc(xlabel)}</text>')
    out.append("</svg>")
    return "\n".join(out)


def _coloured_legend(entries: list[tuple[str, tuple]]) -> tuple[list[str], int]:
    """svg_bars' legend, each line in its own colour and dash with its marker on it."""
    out, rows = _legend([(n, "none", d) for n, (d, _, _) in entries], LEFT, 3)
    styles = iter(entries)
    for i, e in enumerate(out):
        if e.startswith("<line"):
            _, (_, colour, marker) = next(styles)
            x, y = (float(v) for v in re.findall(r'[xy]1="([-\d.]+)"', e))
            out[i] = e.replace('stroke="#000000"', f'stroke="{colour}"', 1) + (
                _mark(marker, x + 9, y, colour) if marker else "")
    return out, rows


def _panel(p: Panel, y0: float, sx, x_ticks, last: bool) -> list[str]:
    ys = [y for s in p.series for y in s.ys if math.isfinite(y)]
    lo, hi = min([0.0, *ys]), max([0.0, *ys])
    span = (hi - lo) or 1.0
    hi = hi + 0.12 * span if hi > 0 else (1.0 if lo == 0 else 0.0)  # room for the labels
    lo = lo - 0.08 * span if lo < 0 else 0.0
    t = ticks(lo, hi)
    lo, hi = min(lo, t[0]), max(hi, t[-1])
    sy = (lambda v: y0 + PANEL_H * (hi - v) / (hi - lo))
    base, right = y0 + PANEL_H, W - RIGHT
    out = [f'<rect x="{LEFT:g}" y="{y0:g}" width="{right - LEFT:g}" height="{PANEL_H:g}" '
           'fill="none" stroke="#000000" stroke-width="1"/>']
    for v in t:
        y = sy(v)
        out.append(f'<line x1="{LEFT:g}" y1="{y:.2f}" x2="{right:g}" y2="{y:.2f}" '
                   'stroke="#dddddd" stroke-width="0.6"/>')
        out.append(f'<text x="{LEFT - 6:g}" y="{y + 4:.2f}" text-anchor="end">'
                   f"{_value_text(v)}</text>")
    if p.zero_line and lo < 0:
        out.append(f'<line x1="{LEFT:g}" y1="{sy(0):.2f}" x2="{right:g}" y2="{sy(0):.2f}" '
                   'stroke="#000000" stroke-width="0.8"/>')
    for v, text in x_ticks:
        x = sx(v)
        out.append(f'<line x1="{x:.2f}" y1="{base:g}" x2="{x:.2f}" y2="{base + 5:g}" '
                   'stroke="#000000" stroke-width="1"/>')
        if last:
            out.append(f'<text x="{x:.2f}" y="{base + 19:g}" text-anchor="middle">'
                       f"{_esc(text)}</text>")
    if p.vline is not None:
        x = sx(p.vline[0])
        out.append(f'<line x1="{x:.2f}" y1="{y0:g}" x2="{x:.2f}" y2="{base:g}" '
                   'stroke="#777777" stroke-width="1" stroke-dasharray="3,3"/>')
    out.append(f'<text transform="translate({LEFT - 62:g},{y0 + PANEL_H / 2:g}) rotate(-90)" '
               f'text-anchor="middle">{_esc(p.ylabel)}</text>')
    for s in p.series:
        pts = [(sx(x), sy(y)) for x, y in zip(s.xs, s.ys) if math.isfinite(y)]
        if len(pts) > 1:
            dash = ' stroke-dasharray="6,4"' if s.dashed else ""
            out.append('<polyline points="' + " ".join(f"{x:.2f},{y:.2f}" for x, y in pts)
                       + f'" fill="none" stroke="{s.colour}" stroke-width="1.8"{dash}/>')
        for j, (x, y) in enumerate(pts):
            out.append(_mark(s.marker, x, y, s.colour))
            if j < len(s.labels) and s.labels[j]:
                # right of the point; left of it in the plot's last fifth, so it stays inside
                anchor, dx = (("end", -5) if x > right - 0.2 * (right - LEFT)
                              else ("start", 5))
                out.append(f'<text x="{x + dx:.2f}" y="{y - 6:.2f}" font-size="10" '
                           f'text-anchor="{anchor}" fill="{s.colour}">'
                           f"{_esc(_cut(s.labels[j], 40))}</text>")
    return out


def signed_bars(rows: list[tuple[str, float]], xlabel: str, label: str) -> str:
    """One horizontal bar per row from 0 to its value (negative to the left, drawn hatched;
    the value written beside it), on one x axis: `breakeven --sensitivity`."""
    rows = [(_cut(n, 48), v) for n, v in rows if math.isfinite(v)]
    left = max(LEFT, 16 + 7.2 * max((len(n) for n, _ in rows), default=0))
    lo, hi = min([0.0, *(v for _, v in rows)]), max([0.0, *(v for _, v in rows)])
    pad = 0.15 * ((hi - lo) or 1.0)
    lo, hi = lo - (pad if lo < 0 else 0), hi + (pad if hi > 0 else 0)
    t = ticks(lo, hi)
    lo, hi = min(lo, t[0]), max(hi, t[-1])
    span = W - left - RIGHT
    sx = (lambda v: left + span * (v - lo) / (hi - lo))
    top, row_h = 14.0, 26.0
    base = top + len(rows) * row_h
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W:g} {base + 50:g}" '
           f'role="img" aria-label="{_esc(label)}" font-family="sans-serif" font-size="13">',
           '<defs><pattern id="neg" width="6" height="6" patternUnits="userSpaceOnUse">'
           '<rect width="6" height="6" fill="#009E73"/><path d="M0,6 L6,0" stroke="#ffffff" '
           'stroke-width="0.8"/></pattern></defs>']
    for i, (name, v) in enumerate(rows):
        yc = top + i * row_h + row_h / 2
        x0, x1 = sorted((sx(0.0), sx(v)))
        fill = "url(#neg)" if v < 0 else "#D55E00"
        out.append(f'<text x="{left - 8:g}" y="{yc + 4:g}" text-anchor="end">{_esc(name)}</text>')
        out.append(f'<rect x="{x0:.2f}" y="{yc - 8:g}" width="{x1 - x0:.2f}" height="16" '
                   f'fill="{fill}"><title>{_esc(name)}: {_num(v)}</title></rect>')
        anchor, dx = ("end", -4) if v < 0 else ("start", 4)
        out.append(f'<text x="{sx(v) + dx:.2f}" y="{yc + 4:g}" text-anchor="{anchor}" '
                   f'font-size="11">{f"{v:+.3g}" if v else "0"}</text>')
    out.append(f'<line x1="{sx(0.0):.2f}" y1="{top:g}" x2="{sx(0.0):.2f}" y2="{base:g}" '
               'stroke="#000000" stroke-width="1"/>')
    out.append(f'<line x1="{left:g}" y1="{base:g}" x2="{W - RIGHT:g}" y2="{base:g}" '
               'stroke="#000000" stroke-width="1"/>')
    for v in t:
        out.append(f'<line x1="{sx(v):.2f}" y1="{base:g}" x2="{sx(v):.2f}" y2="{base + 5:g}" '
                   'stroke="#000000" stroke-width="1"/>')
        out.append(f'<text x="{sx(v):.2f}" y="{base + 19:g}" text-anchor="middle">'
                   f"{_tick_text(v)}</text>")
    out.append(f'<text x="{left + span / 2:g}" y="{base + 42:g}" text-anchor="middle">'
               f"{_esc(xlabel)}</text>")
    out.append("</svg>")
    return "\n".join(out)
