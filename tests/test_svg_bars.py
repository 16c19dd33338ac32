"""The HTML page's memory and step bars, written as SVG without matplotlib (report/svg_bars.py):
positions by hand, well-formed, escaped, deterministic."""

import xml.etree.ElementTree as ET

import pytest

from optimus_calc.report.svg_bars import Segment, VLine, nice_ticks, stacked_bars


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
    bars = [r for r in root.iter("rect") if r.find("title") is not None]
    # the plot spans 1000 - 150 - 20 = 830 units for 0..10: a = 2 -> 166 wide at 150,
    # b = 3 -> 249 wide at 150 + 166 = 316; the zero segment is drawn nowhere
    assert [(float(r.get("x")), float(r.get("width"))) for r in bars] == [(150, 166), (316, 249)]
    assert [r.find("title").text for r in bars] == ["a: 2", "b: 3"]
    legend = [t.text for t in root.iter("text")]
    assert "zero" not in legend and {"a", "b", "half", "h", "x", "row"} <= set(legend)
    line = [ln for ln in root.iter("line") if ln.get("stroke-dasharray")][-1]
    assert float(line.get("x1")) == 150 + 830 * 5 / 10          # the dashed line at x = 5
    assert root.get("role") == "img" and root.get("aria-label") == "chart"
    assert len(list(root.iter("pattern"))) == 3                  # one per colour and hatch


def test_text_is_escaped_and_output_deterministic():
    args = ([("<r&>", [Segment('say "x" <y>', 1.0, "#000000")])], 2.0, "a<b", 'q"t')
    svg = stacked_bars(*args)
    assert svg == stacked_bars(*args)
    root = ET.fromstring(svg)  # well-formed: the page is parsed strictly
    assert root.get("aria-label") == 'q"t'
    assert {'say "x" <y>', "<r&>", "a<b"} <= {t.text for t in root.iter("text")}


def test_rows_share_legend_entries_and_long_labels_widen_the_margin():
    seg = lambda n, v: Segment(n, v, "#000000")  # noqa: E731
    label = "OptimusNIC (intel-ipu-e2100, what-if)"  # 37 characters
    root = ET.fromstring(stacked_bars([("a", [seg("w", 1.0)]), (label, [seg("w", 2.0)])],
                                      4.0, "x", "c"))
    assert [t.text for t in root.iter("text")].count("w") == 1   # one entry for both rows
    # margin 16 + 7.2 x 37 = 282.4; plot 1000 - 282.4 - 20 = 697.6 wide for 0..4: every row
    # starts at the margin, the second bar 2 / 4 of the plot wide
    bars = [r for r in root.iter("rect") if r.find("title") is not None]
    assert [float(r.get("x")) for r in bars] == [282.4, 282.4]
    assert float(bars[1].get("width")) == 348.8
