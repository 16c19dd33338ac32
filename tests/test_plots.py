"""Plots a planner reads correctly (issue 20): checked on the plot data (axes, lines, labels),
not on pixels. The figures are built from the same JSON document the command prints."""

import pytest

pytest.importorskip("matplotlib")

from optimus_calc.report.plots import build_figure, layout_label  # noqa: E402

MEMORY = ["memory", "llama70b", "--nodes", 4, "--tp", 8, "--pp", 4]
SWEEP = ["sweep", "--models", "llama-2-7b", "--nodes", "1,2,4", "--seq-len", 2048,
         "--tokens", "1T"]


def _figure(run, kind, *args):
    r = run(*args, "--format", "json")
    assert r.code == 0, r.err
    return r.json(), build_figure(kind, r.json())


def _close(fig):
    import matplotlib.pyplot as plt
    plt.close(fig)


@pytest.mark.parametrize("headroom,usable_gb", [(None, 76.0), ("0.1", 72.0)])
def test_memory_plot_draws_usable_memory_from_zero(run, headroom, usable_gb):
    extra = ["--headroom", headroom] if headroom else []
    data, fig = _figure(run, "memory", *MEMORY, *extra)
    try:
        ax = fig.axes[0]
        assert ax.get_ylim()[0] == 0
        lines = {ln.get_label().split(" ")[0]: ln for ln in ax.get_lines()}
        cap = data["per_gpu"]["capacity_bytes"]
        # H100 80 GB: usable = capacity x (1 - headroom) = 80 x 0.95 = 76 GB (0.9: 72 GB)
        frac = float(headroom or 0.05)
        assert list(lines["usable"].get_ydata()) == pytest.approx([cap * (1 - frac) / 1e9] * 2)
        assert lines["usable"].get_ydata()[0] == pytest.approx(usable_gb)
        assert lines["GPU"].get_ydata()[0] == pytest.approx(80.0)
        assert f"{frac:.0%} headroom" in lines["usable"].get_label()
        # the tallest stack and the capacity line are inside the axis
        assert ax.get_ylim()[1] > 80.0
    finally:
        _close(fig)


def test_sweep_plot_axes_from_zero_layout_labels_and_days_panel(run):
    data, fig = _figure(run, "sweep", *SWEEP)
    try:
        labels = [ax.get_ylabel() for ax in fig.axes]
        # --tokens without a price: tokens/s, MFU and the training-days panel
        assert labels == ["tokens/s", "MFU (%)", "days to train"]
        for ax in fig.axes:
            assert ax.get_ylim()[0] == 0, ax.get_ylabel()
        days = fig.axes[2].get_lines()[0]
        want = sorted((r["nodes"], r["train_days"]) for r in data["rows"])
        assert list(days.get_xdata()) == [n for n, _ in want]
        assert list(days.get_ydata()) == pytest.approx([d for _, d in want])
        # every point labelled with its layout, never with the bare offload target "none"
        texts = [t.get_text() for t in fig.axes[0].texts]
        assert len(texts) == 3 and all(t.startswith("TP") for t in texts)
        assert texts == [layout_label(r) for r in sorted(data["rows"], key=lambda r: r["nodes"])]
        assert "none" not in " ".join(texts)
    finally:
        _close(fig)


def test_sweep_plot_cost_panel_when_priced(run):
    _, fig = _figure(run, "sweep", *SWEEP, "--gpu-hour-price", 2)
    try:
        assert [ax.get_ylabel() for ax in fig.axes][-2:] == ["days to train",
                                                             "cost to train (USD)"]
        assert all(ax.get_ylim()[0] == 0 for ax in fig.axes)
    finally:
        _close(fig)


def test_layout_label():
    row = {"fits": True, "tp": 4, "pp": 2, "dp": 8, "ep": 1, "cp": 2, "zero": 3,
           "offload": "cpu"}
    assert layout_label(row) == "TP4 PP2 DP8 CP2 Z3 cpu"
    assert layout_label({**row, "offload": "none", "cp": 1}) == "TP4 PP2 DP8 Z3"
    assert layout_label({"fits": False, "tp": None}) == "no layout fits"


def test_comm_plot_bandwidth_axis_from_zero(run):
    data, fig = _figure(run, "comm", "comm", "all-reduce", "--sizes", "1MB..1GB", "--nodes", 2)
    try:
        ax = fig.axes[0]
        assert ax.get_ylim()[0] == 0
        busbw = ax.get_lines()[0].get_ydata()
        assert list(busbw) == pytest.approx([r["busbw_GBps"] for r in data["rows"]])
    finally:
        _close(fig)
