"""The HTML page's memory and step bars, written as SVG without matplotlib (report/svg_bars.py):
positions by hand, well-formed, escaped, deterministic."""

import xml.etree.ElementTree as ET

import pytest

from optimus_calc.report.svg_bars import Segment, VLine, nice_ticks, stacked_bars

NS = "{http://www.w3.org/2000/svg}"


def els(root, tag):
    return list(root.iter(NS + tag))


def test_nice_ticks_by_hand():
    assert nice_ticks(110.0) == [0, 20, 40, 60, 80, 100]        # 110 / 6 = 18.3 -> step 20
    assert nice_ticks(7.4) == [0, 2, 4, 6]                        # 1.23 -> 2
    assert nice_ticks(0.9) == pytest.approx([0, 0.2, 0.4, 0.6, 0.8])  # 0.15 -> 0.2
    assert nice_ticks(0.0) == [0.0] and nice_ticks(float("nan")) == [0.0]


def test_segments_are_placed_in_proportion():
    svg = stacked_bars([("row", [Segment("a", 2.0, "#000000"), Segment("zero", 0.0, "#111111"),
                                 Segment("b", 3.0, "#222222", "//", 0.5)])],
                       10.0, "x", "chart", (VLine(5.0, "half", "h", dashed=True),))
    root = ET.fromstring(svg)
    bars = [r for r in els(root, "rect") if r.find(NS + "title") is not None]
    # the plot spans 1000 - 150 - 20 = 830 units for 0..10: a = 2 -> 166 wide at 150,
    # b = 3 -> 249 wide at 150 + 166 = 316; the zero segment is drawn nowhere
    assert [(float(r.get("x")), float(r.get("width"))) for r in bars] == [(150, 166), (316, 249)]
    assert [r.find(NS + "title").text for r in bars] == ["a: 2", "b: 3"]
    legend = [t.text for t in els(root, "text")]
    assert "zero" not in legend and {"a", "b", "half", "h", "x", "row"} <= set(legend)
    line = [ln for ln in els(root, "line") if ln.get("stroke-dasharray")][-1]
    assert float(line.get("x1")) == 150 + 830 * 5 / 10          # the dashed line at x = 5
    assert root.get("role") == "img" and root.get("aria-label") == "chart"
    assert len(list(els(root, "pattern"))) == 3                  # one per colour and hatch


def test_text_is_escaped_and_output_deterministic():
    args = ([("<r&>", [Segment('say "x" <y>', 1.0, "#000000")])], 2.0, "a<b", 'q"t')
    svg = stacked_bars(*args)
    assert svg == stacked_bars(*args)
    root = ET.fromstring(svg)  # well-formed: the page is parsed strictly
    assert root.get("aria-label") == 'q"t'
    assert {'say "x" <y>', "<r&>", "a<b"} <= {t.text for t in els(root, "text")}


def test_rows_share_legend_entries_and_long_labels_widen_the_margin():
    seg = lambda n, v: Segment(n, v, "#000000")  # noqa: E731
    label = "OptimusNIC (intel-ipu-e2100, what-if)"  # 37 characters
    root = ET.fromstring(stacked_bars([("a", [seg("w", 1.0)]), (label, [seg("w", 2.0)])],
                                      4.0, "x", "c"))
    assert [t.text for t in els(root, "text")].count("w") == 1   # one entry for both rows
    # margin 16 + 7.2 x 37 = 282.4; plot 1000 - 282.4 - 20 = 697.6 wide for 0..4: every row
    # starts at the margin, the second bar 2 / 4 of the plot wide
    bars = [r for r in els(root, "rect") if r.find(NS + "title") is not None]
    assert [float(r.get("x")) for r in bars] == [282.4, 282.4]
    assert float(bars[1].get("width")) == 348.8


def test_legend_columns_fit_their_longest_entry():
    # the cold review's step chart: "optimizer step + transfers (hidden)" (35 characters) ran
    # past the right edge in five 170-unit columns; one entry is 34 + 7.2 x 35 = 286 units,
    # so (1000 - 150) // 286 = 2 columns of 425
    names = ["compute", "DP communication (hidden)", "optimizer step + transfers (hidden)"]
    root = ET.fromstring(stacked_bars([("r", [Segment(n, 1.0, "#000000") for n in names])],
                                      4.0, "x", "c", ident="step"))
    swatches = [r for r in els(root, "rect") if r.get("width") == "18"]
    assert [float(r.get("x")) for r in swatches] == [150, 575, 150]
    assert all(p.get("id").startswith("step-p") for p in els(root, "pattern"))


def test_a_long_label_is_cut_and_the_plot_keeps_its_width():
    # a 110-character card name (a cold review) took 966 of the 1,000 units; a label is cut at
    # 48 characters (47 and an ellipsis): margin 16 + 7.2 x 48 = 361.6
    root = ET.fromstring(stacked_bars([("n" * 110, [Segment("e" * 200, 1.0, "#000000")])],
                                      2.0, "x", "c"))
    texts = [t.text for t in els(root, "text")]
    assert "n" * 47 + "\u2026" in texts
    bar = next(r for r in els(root, "rect") if r.find(NS + "title") is not None)
    assert float(bar.get("x")) == 361.6 and float(bar.get("width")) == 309.2  # (1000-381.6)/2
    # the legend entry is cut to the width left of the margin: (1000 - 361.6 - 34) / 7.2 = 83
    assert "e" * 82 + "\u2026" in texts
