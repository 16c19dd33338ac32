"""The HTML page's line charts and signed bars, written as SVG without matplotlib
(report/svg_lines.py; html_charts.sweep_chart, comm_chart, batch_sweep_chart,
sensitivity_chart)."""

import re
import xml.etree.ElementTree as ET

import pytest

from optimus_calc.report import html_charts as C
from optimus_calc.report.svg_lines import (PANEL_H, Panel, Series, line_panels, signed_bars,
                                           ticks, value_text)

NS = "{http://www.w3.org/2000/svg}"


def _points(line) -> list[tuple[float, float]]:
    return [tuple(map(float, p.split(","))) for p in line.get("points").split()]


def test_ticks_cross_zero_at_1_2_5_steps():
    # span 1.7: 1.7 / 6 = 0.283, the step the next of 0.1 x (1, 2, 5) above it: 0.5
    assert ticks(-0.5, 1.2) == [-0.5, 0.0, 0.5, 1.0]
    # span 170,000: 28,333 a sixth, step 50,000
    assert ticks(0.0, 170_000.0) == [0.0, 50_000.0, 100_000.0, 150_000.0]
    assert ticks(0.0, 0.0) == [0.0]


def test_a_line_is_drawn_at_its_values():
    # one panel, y from 0: the values 0, 50 and 100 (top 100 + 12% of the span = 112, ticks
    # to 100 at 20s, so the axis ends at 112): y of 0 is the panel's bottom, and 100 sits
    # 100 / 112 of the panel above it; x linear, 1 -> 2 a third of 1 -> 4
    svg = line_panels([Panel("tokens/s", (Series("a", (1, 2, 4), (0, 50, 100), "#0072B2"),))],
                      [(1, "1"), (2, "2"), (4, "4")], "nodes", "chart")
    root = ET.fromstring(svg)
    assert root.get("role") == "img" and root.get("aria-label") == "chart"
    (line,) = root.iter(f"{NS}polyline")
    (x1, y1), (x2, y2), (x4, y4) = _points(line)
    assert (x2 - x1) / (x4 - x1) == pytest.approx(1 / 3, abs=1e-3)
    assert y1 - y4 == pytest.approx(PANEL_H * 100 / 112, abs=0.02)
    assert y1 - y2 == pytest.approx(PANEL_H * 50 / 112, abs=0.02)
    frame = next(r for r in root.iter(f"{NS}rect"))
    assert x1 > float(frame.get("x"))  # inside the plot
    assert svg == line_panels([Panel("tokens/s", (Series("a", (1, 2, 4), (0, 50, 100),
                                                         "#0072B2"),))],
                              [(1, "1"), (2, "2"), (4, "4")], "nodes", "chart")


def test_log2_axis_and_legend_entries():
    # sizes 1 KiB, 1 MiB, 1 GiB on a log-2 axis: equal steps of 10 doublings
    xs = (2.0 ** 10, 2.0 ** 20, 2.0 ** 30)
    svg = line_panels([Panel("GB/s", (Series("busbw", xs, (1, 2, 3), "#0072B2", "o"),
                                      Series("algbw", xs, (1, 1, 2), "#E69F00", "s", True)))],
                      [(x, "") for x in xs], "bytes", "c", log2_x=True)
    root = ET.fromstring(svg)
    a, b = [_points(p) for p in root.iter(f"{NS}polyline")]
    assert a[1][0] - a[0][0] == pytest.approx(a[2][0] - a[1][0], abs=1e-6)
    texts = [t.text for t in root.iter(f"{NS}text")]
    assert "busbw" in texts and "algbw" in texts
    dashed = [p.get("stroke-dasharray") for p in root.iter(f"{NS}polyline")]
    assert dashed == [None, "6,4"]  # the second line dashed: colour is not the only carrier


def test_a_negative_value_extends_the_axis_below_zero():
    svg = line_panels([Panel("s", (Series("d", (16, 32, 64), (1.1, 0.45, -0.05), "#0072B2"),),
                             zero_line=True, vline=(48.0, "break-even"))],
                      [(16, "16"), (32, "32"), (64, "64")], "global batch", "c", log2_x=True)
    root = ET.fromstring(svg)
    (line,) = root.iter(f"{NS}polyline")
    top = min(float(r.get("y")) for r in root.iter(f"{NS}rect"))
    # the lowest point stays inside the panel
    assert max(y for _, y in _points(line)) < top + PANEL_H
    assert "break-even" in [t.text for t in root.iter(f"{NS}text")]


def test_signed_bars_are_as_long_as_their_values():
    # -0.914 and -0.0312 (breakeven --sensitivity's GPU peak and HBM bandwidth rows): widths
    # 0.914 / 0.0312 = 29.3 apart; a 0 row has no width, and its value reads "0"
    svg = signed_bars([("peak", -0.914), ("hbm", -0.0312), ("memory", 0.0), ("nic", 0.2)],
                      "% per +1%", "s")
    root = ET.fromstring(svg)
    bars = [r for r in root.iter(f"{NS}rect") if r.find(f"{NS}title") is not None]
    w = {r.find(f"{NS}title").text.split(":")[0]: float(r.get("width")) for r in bars}
    assert w["peak"] / w["hbm"] == pytest.approx(0.914 / 0.0312, rel=1e-3)
    assert w["memory"] == 0 and w["nic"] / w["peak"] == pytest.approx(0.2 / 0.914, rel=1e-3)
    texts = [t.text for t in root.iter(f"{NS}text")]
    assert "-0.914" in texts and "+0.2" in texts and "0" in texts


def test_the_commands_charts_read_their_data():
    comm = {"collective": "all-reduce", "algo": "ring", "size_units": "binary", "rows": [
        {"size_bytes": 1024.0 * 2 ** k, "busbw_GBps": 10.0 * k, "algbw_GBps": 5.0 * k}
        for k in range(1, 5)]}
    root = ET.fromstring(C.comm_chart(comm, "comm"))
    assert [len(_points(p)) for p in root.iter(f"{NS}polyline")] == [4, 4]
    texts = [t.text for t in root.iter(f"{NS}text")]
    assert "2 KiB" in texts and "16 KiB" in texts  # the log-2 ticks named in binary units
    sweep = {"rows": [
        {"model": "m", "node": "dgx-h100", "nodes": n, "tokens_per_s": 1000.0 * n, "mfu": 0.5,
         "tp": 8, "pp": 1, "dp": n, "zero": 1, "fits": True} for n in (1, 2, 4)]}
    root = ET.fromstring(C.sweep_chart(sweep, "sweep"))
    assert len(list(root.iter(f"{NS}polyline"))) == 2  # tokens/s and MFU
    assert [t.text for t in root.iter(f"{NS}text")].count("TP8 PP1 DP2 Z1") == 2
    empty = {"rows": [{"model": "m", "node": "dgx-h100", "nodes": 1, "fits": False}]}
    assert "no point has a layout" in C.sweep_chart(empty, "sweep")
    assert not re.search(r"\bnan\b|\binf\b", C.sweep_chart(empty, "sweep"))


def test_value_ticks_stay_short_and_inside_the_margin():
    # a cost axis reaches millions: "3,000,000" ran into the axis title (a cold review); from
    # 1e6 on the ticks read 3M, 1.5G, 2T; the margin is as wide as the widest tick
    assert [value_text(v) for v in (50, 150, 250_000, 3e6, 1.5e9, 2e12, -0.5)] == [
        "50", "150", "250,000", "3M", "1.5G", "2T", "-0.5"]
    svg = line_panels([Panel("cost to train (USD)", (Series("a", (1, 2), (1e12, 3e13),
                                                            "#0072B2"),))],
                      [(1, "1"), (2, "2")], "nodes", "c")
    root = ET.fromstring(svg)
    frame = float(next(root.iter(f"{NS}rect")).get("x"))
    ticks_x = [float(t.get("x")) for t in root.iter(f"{NS}text") if t.get("text-anchor") ==
               "end" and t.text and t.text[0].isdigit()]
    widest = max(len(t.text) for t in root.iter(f"{NS}text") if t.get("text-anchor") == "end"
                 and t.text and t.text[0].isdigit())
    assert all(x == frame - 6 for x in ticks_x) and frame - 6 - 7.4 * widest > 30  # title room


def test_nothing_to_draw_is_drawn_as_nothing():
    # all zero (a sensitivity page whose elasticities are all 0) or no row: an axis from -1 to
    # 1, no division by zero; x of 0, nan or inf on a log axis: left out, never "nan"
    for rows in ([("a", 0.0)], [], [("b", float("nan"))]):
        ET.fromstring(signed_bars(rows, "x", "l"))
    svg = line_panels([Panel("y", (Series("a", (0, 1, 2, float("nan"), float("inf")),
                                          (1, 2, 3, 4, 5), "#000000"),))],
                      [(0, "0"), (1, "1"), (2, "2")], "x", "l", log2_x=True, title="t <&>")
    root = ET.fromstring(svg)
    assert "nan" not in svg and "inf" not in svg
    assert [len(_points(p)) for p in root.iter(f"{NS}polyline")] == [2]  # x 1 and 2 only
    assert "t <&>" in [t.text for t in root.iter(f"{NS}text")]  # the title, escaped


def test_crowded_x_labels_are_thinned_and_doubling_nodes_go_log():
    # node counts 1, 2, 4 ... 128 on a linear axis drew "1" and "2" as "12" (a cold review):
    # the sweep draws them on a log-2 axis, evenly apart, and a label that would touch the last
    # one drawn is left out (its tick stays)
    rows = [{"model": "m", "node": "dgx-h100", "nodes": n, "tokens_per_s": 1000.0 * n,
             "mfu": 0.5, "tp": 8, "pp": 1, "dp": n, "zero": 1, "fits": True}
            for n in (1, 2, 4, 8, 16, 32, 64, 128)]
    root = ET.fromstring(C.sweep_chart({"rows": rows}, "sweep"))
    xs = [float(t.get("x")) for t in root.iter(f"{NS}text") if t.text in
          {"1", "2", "4", "8", "16", "32", "64", "128"} and t.get("text-anchor") == "middle"]
    gaps = [b - a for a, b in zip(xs, xs[1:])]
    assert len(xs) == 8 and max(gaps) - min(gaps) < 1e-6  # log 2: equal steps
    svg = line_panels([Panel("y", (Series("a", (1, 1.01, 1.02, 5), (1, 2, 3, 4), "#000000"),))],
                      [(1, "1000"), (1.01, "1010"), (1.02, "1020"), (5, "5000")], "x", "l")
    labels = [t.text for t in ET.fromstring(svg).iter(f"{NS}text") if t.text in
              {"1000", "1010", "1020", "5000"}]
    assert labels == ["1000", "5000"]
    # the axis keeps its end labelled: 1, 64, 127, 128 drop 127 rather than 128
    svg = line_panels([Panel("y", (Series("a", (1, 64, 127, 128), (1, 2, 3, 4), "#000000"),))],
                      [(n, f"{n}") for n in (1, 64, 127, 128)], "nodes", "l")
    shown = [t.text for t in ET.fromstring(svg).iter(f"{NS}text") if t.get("y") and
             t.get("text-anchor") == "middle" and t.text in {"1", "64", "127", "128"}]
    assert shown == ["1", "64", "128"]


def test_breakeven_sweep_and_sensitivity_draw_both_charts(run, tmp_path):
    # the page drew only the sweep's chart when both were asked (a cold review)
    page = tmp_path / "b.html"
    r = run("breakeven", "llama70b", "--nodes", 2, "--tp", 2, "--pp", 4, "--zero", 3,
            "--recompute", "full", "--seq-len", 2048, "--global-batch", 16, "--device",
            "bluefield-3", "--sweep", "global-batch", "--sensitivity", "--format", "html",
            "-o", page)
    assert r.code == 0
    labels = re.findall(r'<svg [^>]*aria-label="([^"]*)"', page.read_text())
    assert len(labels) == 2


def test_the_batch_rule_splits_no_line(run):
    # 1, 3, 5, 7, 13 nodes take the rule's 512, 516, 515, 518, 520 sequences (a multiple of DP
    # x micro-batch holding 512): one line, not five one-point series (a cold review); a typed
    # list of batches still gives a line per batch
    d = run("sweep", "--models", "llama70b", "--node", "dgx-h100", "--nodes", "1,3,5,7,13",
            "--format", "json").json()
    assert len({r["global_batch"] for r in d["rows"]}) > 1
    assert all(r["global_batch_rule"] for r in d["rows"])
    root = ET.fromstring(C.sweep_chart(d, "sweep"))
    assert len(list(root.iter(f"{NS}polyline"))) == 2  # tokens/s and MFU, one line each
    typed = [dict(r, global_batch_rule=False) for r in d["rows"]]
    root = ET.fromstring(C.sweep_chart({"rows": typed}, "sweep"))
    assert not list(root.iter(f"{NS}polyline"))  # five batches: five one-point series
