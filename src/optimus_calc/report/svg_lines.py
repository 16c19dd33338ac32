"""Line charts (panels sharing an x axis) and signed horizontal bars as inline SVG, written
directly for the HTML page of `sweep`, `comm` and `breakeven --sweep/--sensitivity` (no
matplotlib: importing it cost each page about 1 s of its 1.6 s). ``--plot FILE`` still draws
through matplotlib (report/plots.py), the same data and the same lines.

The conventions of report/svg_bars.py: text stays text, a line has its colour, its marker and
its dash (colour is never the only carrier) and its name in the legend, every value axis starts
at 0 (or below it where a value is negative), the numbers are in the table beside the chart,
and the output is deterministic. Points that are not finite (or not positive on a log axis)
are left out, never written as "nan".
"""

from __future__ import annotations

import math
import re

from optimus_calc.record import record
from optimus_calc.report.svg_bars import W, cut, esc, legend, num, tick_text

RIGHT, PANEL_H, GAP, TITLE_H = 30.0, 220.0, 34.0, 22.0
CHAR_W = 7.4  # units a character of the 13-unit font takes, about
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
    three to ten of them, 0 among them."""
    span = hi - lo
    if not (math.isfinite(span) and span > 0):
        return [0.0]
    raw = span / 6
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step - 1e-9)
    return [i * step for i in range(first, int(math.floor(hi / step + 1e-9)) + 1)]


def value_text(v: float) -> str:
    """A value tick: thousands separated from 100 up, then 1.5M, 2G, 3T (short enough for the
    margin: a cost axis reaches millions)."""
    a = abs(v)
    for unit, size in (("T", 1e12), ("G", 1e9), ("M", 1e6)):
        if a >= size:
            return f"{v / size:g}{unit}"
    return f"{v:,.0f}" if a >= 100 else f"{v:g}"


def _mark(kind: str, x: float, y: float, colour: str) -> str:
    if kind == "s":
        return (f'<rect x="{x - 3.5:.2f}" y="{y - 3.5:.2f}" width="7" height="7" '
                f'fill="{colour}"/>')
    if kind in "^d":
        pts = ((0, -4.5), (4, 3), (-4, 3)) if kind == "^" else ((0, -4.5), (4, 0), (0, 4.5),
                                                                 (-4, 0))
        return ('<path d="M' + " L".join(f"{x + a:.2f},{y + b:.2f}" for a, b in pts)
                + f' Z" fill="{colour}"/>')
    if kind in "x+":
        a = ((-4, -4, 4, 4), (-4, 4, 4, -4)) if kind == "x" else ((-5, 0, 5, 0), (0, -5, 0, 5))
        return "".join(f'<line x1="{x + p:.2f}" y1="{y + q:.2f}" x2="{x + r:.2f}" '
                       f'y2="{y + s:.2f}" stroke="{colour}" stroke-width="2"/>'
                       for p, q, r, s in a)
    return f'<circle cx="{x:.2f}" cy="{y:.2f}" r="3.5" fill="{colour}"/>'


def _ok_x(v: float, log2_x: bool) -> bool:
    return math.isfinite(v) and (v > 0 or not log2_x)


def _x_scale(xs: list[float], log2_x: bool, left: float):
    """The x mapping over the points' range (a 6% margin each side), log base 2 or linear."""
    f = (lambda v: math.log2(v)) if log2_x else (lambda v: v)
    xs = [f(v) for v in xs if _ok_x(v, log2_x)]
    lo, hi = (min(xs), max(xs)) if xs else (0.0, 1.0)
    if hi - lo <= 0:
        lo, hi = lo - 1, hi + 1
    pad = 0.06 * (hi - lo)
    span = W - left - RIGHT
    return lambda v: left + span * (f(v) - lo + pad) / (hi - lo + 2 * pad)


def _y_range(p: Panel) -> tuple[float, float, list[float]]:
    """The panel's value range (0 in it; room above for the point labels, below a negative
    value) and its ticks."""
    ys = [y for s in p.series for y in s.ys if math.isfinite(y)]
    lo, hi = min([0.0, *ys]), max([0.0, *ys])
    span = (hi - lo) or 1.0
    hi, lo = hi + 0.12 * span, (lo - 0.08 * span if lo < 0 else 0.0)
    t = ticks(lo, hi)
    return min(lo, t[0]), max(hi, t[-1]), t


def line_panels(panels: list[Panel], x_ticks: list[tuple[float, str]], xlabel: str,
                label: str, log2_x: bool = False, note: str = "", title: str = "") -> str:
    """``panels`` stacked on one x axis (``x_ticks``: value and text), the ``title`` and the
    legend above; ``label``: the accessible name; ``note``: a line written in an empty chart.
    The left margin fits the longest value tick."""
    ranges = [_y_range(p) for p in panels]
    widest = max((len(value_text(v)) for _, _, t in ranges for v in t), default=1)
    left = 46 + CHAR_W * widest
    seen: dict[str, tuple] = {}
    for p in panels:
        for s in p.series:
            seen.setdefault(s.name, ("6,4" if s.dashed else "-", s.colour, s.marker))
        if p.vline is not None:
            seen.setdefault(p.vline[1], ("3,3", "#777777", ""))
    key, n_leg = _coloured_legend(list(seen.items()), left, TITLE_H if title else 0.0)
    top = (TITLE_H if title else 0.0) + 10 + n_leg * 20 + 14
    height = top + len(panels) * (PANEL_H + GAP) + 40
    xs = [x for p in panels for s in p.series for x in s.xs] + [v for v, _ in x_ticks] + [
        p.vline[0] for p in panels if p.vline is not None]
    sx = _x_scale(xs, log2_x, left)
    mid = left + (W - left - RIGHT) / 2
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W:g} {height:g}" role="img" '
           f'aria-label="{esc(label)}" font-family="sans-serif" font-size="13">', *key]
    if title:
        out.append(f'<text x="{mid:g}" y="16" text-anchor="middle" font-weight="bold">'
                   f"{esc(cut(title, int((W - 20) / CHAR_W)))}</text>")
    for i, (p, yr) in enumerate(zip(panels, ranges)):
        out += _panel(p, yr, top + i * (PANEL_H + GAP), sx, left, log2_x,
                      [(v, t) for v, t in x_ticks if _ok_x(v, log2_x)], i == len(panels) - 1)
    if note:
        out.append(f'<text x="{mid:g}" y="{top + PANEL_H / 2:g}" text-anchor="middle">'
                   f"{esc(note)}</text>")
    out.append(f'<text x="{mid:g}" y="{height - 8:g}" text-anchor="middle">{esc(xlabel)}</text>')
    out.append("</svg>")
    return "\n".join(out)


def _coloured_legend(entries: list[tuple[str, tuple]], left: float,
                     down: float) -> tuple[list[str], int]:
    """svg_bars' legend from ``left``, ``down`` units lower, each line in its own colour and
    dash with its marker on it."""
    out, rows = legend([(n, "none", d) for n, (d, _, _) in entries], left, 3)
    styles = iter(entries)
    for i, e in enumerate(out):
        e = re.sub(r' (y1?2?)="([-\d.]+)"',
                   lambda m: f' {m.group(1)}="{float(m.group(2)) + down:g}"', e)
        if e.startswith("<line"):
            _, (_, colour, marker) = next(styles)
            x, y = (float(v) for v in re.findall(r'[xy]1="([-\d.]+)"', e))
            e = e.replace('stroke="#000000"', f'stroke="{colour}"', 1) + (
                _mark(marker, x + 9, y, colour) if marker else "")
        out[i] = e
    return out, rows


def _thinned(labels: list[tuple[float, str]]) -> list[tuple[float, str]]:
    """The x labels that do not touch their neighbours, from the left, the last one always (an
    axis keeps its end labelled)."""
    def apart(a, b) -> bool:
        return abs(b[0] - a[0]) >= 8 + CHAR_W * (len(a[1]) + len(b[1])) / 2
    kept: list[tuple[float, str]] = []
    for lab in labels:
        if not kept or apart(kept[-1], lab):
            kept.append(lab)
    if labels and kept[-1] != labels[-1]:
        while kept and not apart(kept[-1], labels[-1]):
            kept.pop()
        kept.append(labels[-1])
    return kept


def _panel(p: Panel, yr: tuple, y0: float, sx, left: float, log2_x: bool, x_ticks,
           last: bool) -> list[str]:
    lo, hi, t = yr
    sy = (lambda v: y0 + PANEL_H * (hi - v) / (hi - lo))
    base, right = y0 + PANEL_H, W - RIGHT
    out = [f'<rect x="{left:g}" y="{y0:g}" width="{right - left:g}" height="{PANEL_H:g}" '
           'fill="none" stroke="#000000" stroke-width="1"/>']
    for v in t:
        y = sy(v)
        out.append(f'<line x1="{left:g}" y1="{y:.2f}" x2="{right:g}" y2="{y:.2f}" '
                   'stroke="#dddddd" stroke-width="0.6"/>')
        out.append(f'<text x="{left - 6:g}" y="{y + 4:.2f}" text-anchor="end">'
                   f"{value_text(v)}</text>")
    if p.zero_line and lo < 0:
        out.append(f'<line x1="{left:g}" y1="{sy(0):.2f}" x2="{right:g}" y2="{sy(0):.2f}" '
                   'stroke="#000000" stroke-width="0.8"/>')
    for v, _ in x_ticks:
        x = sx(v)
        out.append(f'<line x1="{x:.2f}" y1="{base:g}" x2="{x:.2f}" y2="{base + 5:g}" '
                   'stroke="#000000" stroke-width="1"/>')
    for x, text in (_thinned([(sx(v), t) for v, t in x_ticks]) if last else []):
        out.append(f'<text x="{x:.2f}" y="{base + 19:g}" text-anchor="middle">{esc(text)}</text>')
    if p.vline is not None and _ok_x(p.vline[0], log2_x):
        x = sx(p.vline[0])
        out.append(f'<line x1="{x:.2f}" y1="{y0:g}" x2="{x:.2f}" y2="{base:g}" '
                   'stroke="#777777" stroke-width="1" stroke-dasharray="3,3"/>')
    out.append(f'<text transform="translate(16,{y0 + PANEL_H / 2:g}) rotate(-90)" '
               f'text-anchor="middle">{esc(p.ylabel)}</text>')
    for s in p.series:
        pts = [(sx(x), sy(y), i) for i, (x, y) in enumerate(zip(s.xs, s.ys))
               if _ok_x(x, log2_x) and math.isfinite(y)]
        if len(pts) > 1:
            dash = ' stroke-dasharray="6,4"' if s.dashed else ""
            out.append('<polyline points="' + " ".join(f"{x:.2f},{y:.2f}" for x, y, _ in pts)
                       + f'" fill="none" stroke="{s.colour}" stroke-width="1.8"{dash}/>')
        for x, y, i in pts:
            out.append(_mark(s.marker, x, y, s.colour))
            if i < len(s.labels) and s.labels[i]:
                # right of the point; left of it in the plot's last fifth, so it stays inside
                anchor, dx = (("end", -5) if x > right - 0.2 * (right - left)
                              else ("start", 5))
                out.append(f'<text x="{x + dx:.2f}" y="{y - 6:.2f}" font-size="10" '
                           f'text-anchor="{anchor}" fill="{s.colour}">'
                           f"{esc(cut(s.labels[i], 40))}</text>")
    return out


def signed_bars(rows: list[tuple[str, float]], xlabel: str, label: str, title: str = "") -> str:
    """One horizontal bar per row from 0 to its value (negative to the left, drawn hatched;
    the value written beside it), on one x axis: `breakeven --sensitivity`. A row whose value
    is not finite is left out; all zero (or none) gives an axis from -1 to 1."""
    rows = [(cut(n, 48), v) for n, v in rows if math.isfinite(v)]
    left = max(150.0, 16 + CHAR_W * max((len(n) for n, _ in rows), default=0))
    lo, hi = min([0.0, *(v for _, v in rows)]), max([0.0, *(v for _, v in rows)])
    if hi - lo <= 0:
        lo, hi = -1.0, 1.0
    pad = 0.15 * (hi - lo)
    lo, hi = lo - (pad if lo < 0 else 0), hi + (pad if hi > 0 else 0)
    t = ticks(lo, hi)
    lo, hi = min(lo, t[0]), max(hi, t[-1])
    span = W - left - RIGHT
    sx = (lambda v: left + span * (v - lo) / (hi - lo))
    top, row_h = 14.0 + (TITLE_H if title else 0.0), 26.0
    base = top + max(len(rows), 1) * row_h
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W:g} {base + 50:g}" '
           f'role="img" aria-label="{esc(label)}" font-family="sans-serif" font-size="13">',
           '<defs><pattern id="neg" width="6" height="6" patternUnits="userSpaceOnUse">'
           '<rect width="6" height="6" fill="#009E73"/><path d="M0,6 L6,0" stroke="#ffffff" '
           'stroke-width="0.8"/></pattern></defs>']
    if title:
        out.append(f'<text x="{W / 2:g}" y="16" text-anchor="middle" font-weight="bold">'
                   f"{esc(cut(title, int((W - 20) / CHAR_W)))}</text>")
    for i, (name, v) in enumerate(rows):
        yc = top + i * row_h + row_h / 2
        x0, x1 = sorted((sx(0.0), sx(v)))
        fill = "url(#neg)" if v < 0 else "#D55E00"
        out.append(f'<text x="{left - 8:g}" y="{yc + 4:g}" text-anchor="end">{esc(name)}</text>')
        out.append(f'<rect x="{x0:.2f}" y="{yc - 8:g}" width="{x1 - x0:.2f}" height="16" '
                   f'fill="{fill}"><title>{esc(name)}: {num(v)}</title></rect>')
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
                   f"{tick_text(v)}</text>")
    out.append(f'<text x="{left + span / 2:g}" y="{base + 42:g}" text-anchor="middle">'
               f"{esc(xlabel)}</text>")
    out.append("</svg>")
    return "\n".join(out)
