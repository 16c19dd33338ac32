"""The HTML page's charts as inline SVG (matplotlib, as report/plots.py draws ``--plot``).

Drawn from a Document's plain data only. Text stays text in the SVG (``svg.fonttype: none``:
smaller, crisp at any zoom, readable by a screen reader); colour is never the only carrier:
every segment has its own hatch and its name in the legend, and the same numbers are in the
table beside the chart. Deterministic: a fixed hash salt, no metadata.
"""

from __future__ import annotations

import io
import re
from typing import Any

GB = 1e9
# Okabe-Ito, a palette readable with the common colour-vision deficiencies
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442",
           "#999999", "#000000", "#6A3D9A", "#B15928")
# line hatches only (matplotlib's dot, circle and star hatches cost 100+ kB of SVG each)
HATCHES = ("", "//", "\\\\", "xx", "--", "||", "++", "/", "\\", "-", "|")

MEMORY_PARTS = (("weights_bytes", "weights"), ("gradients_bytes", "gradients"),
                ("optimizer_bytes", "optimizer state"), ("activations_bytes", "activations"),
                ("overhead_bytes", "overheads"))
# the step's named terms (step_view.BREAKDOWN keys), shortened for a legend
STEP_TERMS = (("compute_s", "compute"), ("elementwise_s", "element-wise"),
              ("bubble_s", "pipeline bubble"), ("tp_comm_s", "TP exposed"),
              ("cp_comm_s", "CP exposed"), ("ep_comm_s", "EP exposed"),
              ("pp_comm_s", "PP exposed"), ("dp_comm_exposed_s", "DP exposed"),
              ("optimizer_exposed_s", "optimizer exposed"), ("fixed_s", "fixed costs"))


def _pyplot():
    import matplotlib
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt
    return plt


_RC = {"svg.hashsalt": "optimus-calc", "svg.fonttype": "none", "path.simplify": False,
       "font.size": 10, "font.family": "sans-serif", "hatch.linewidth": 0.6}


def _bars(height: float):
    """A figure and its axes without pyplot (matplotlib's object API: pyplot and its backend
    machinery cost ~0.1 s to import, more than drawing a bar)."""
    from matplotlib.figure import Figure
    fig = Figure(figsize=(10, height))
    return fig, fig.subplots()


def _svg(fig, plt, label: str) -> str:
    """The figure as an ``<svg>`` element (no XML prolog, no fixed size: the page scales it),
    with an accessible name; ``plt``: pyplot, where it drew the figure (to close it)."""
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    if plt is not None:
        plt.close(fig)
    text = buf.getvalue()
    text = text[text.index("<svg"):]
    # no RDF metadata: its namespace URLs would be the page's only addresses
    text = re.sub(r"\s*<metadata>.*?</metadata>", "", text, flags=re.S)
    text = re.sub(r'\s+xmlns:(dc|cc|rdf)="[^"]*"', "", text)
    text = re.sub(r'<svg ([^>]*?)width="[^"]*" height="[^"]*"',
                  r'<svg \1role="img" aria-label="' + _attr(label) + '"', text, count=1)
    return text


def _attr(text: str) -> str:
    return (text.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")
            .replace(">", "&gt;"))


def _segments(ax, y: float, parts: list[tuple[str, float]], styles=None,
              height: float = 0.55) -> None:
    """One stacked horizontal bar; ``styles``: (colour, hatch, alpha) per part, else the
    palette's and hatches' i-th."""
    left = 0.0
    for i, (name, v) in enumerate(parts):
        colour, hatch, alpha = (styles[i] if styles else
                                (PALETTE[i % len(PALETTE)], HATCHES[i % len(HATCHES)], 1.0))
        if v <= 0:
            continue
        ax.barh(y, v, left=left, height=height, color=colour, hatch=hatch, alpha=alpha,
                edgecolor="white", linewidth=0.8, label=name)
        left += v


def memory_chart(per_gpu: dict[str, Any]) -> str:
    """One GPU's memory (the most loaded stage) as a stacked bar against the usable memory
    (capacity less the --headroom margin, solid) and the capacity (dashed), in GB."""
    import matplotlib
    with matplotlib.rc_context(_RC):
        fig, ax = _bars(1.5)
        parts = [(name, per_gpu.get(key, 0.0) / GB) for key, name in MEMORY_PARTS]
        _segments(ax, 0, parts)
        usable, cap = per_gpu["usable_bytes"] / GB, per_gpu["capacity_bytes"] / GB
        ax.axvline(usable, color="black", linewidth=1.6, label=f"usable {usable:.1f} GB")
        ax.axvline(cap, color="black", linestyle="--", linewidth=1.2,
                   label=f"capacity {cap:g} GB")
        ax.text(usable, 0.42, "usable ", ha="right", va="center", fontsize=9)
        ax.text(cap, 0.42, " capacity", ha="left", va="center", fontsize=9)
        ax.set_ylim(-0.6, 0.6)
        ax.set_yticks([0], [f"stage {per_gpu.get('stage', 0)}"])
        ax.set_xlabel("GB per GPU (decimal, 10^9 bytes)")
        ax.set_xlim(0, max(cap, per_gpu["total_bytes"] / GB) * 1.12)
        ax.spines[["top", "right"]].set_visible(False)
        ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=7, frameon=False,
                  fontsize=9)
        return _svg(fig, None, "GPU memory per part against the usable memory and capacity")


def step_chart(data: dict[str, Any]) -> str:
    """The step as a stacked bar of its named terms (what the step pays), and beside it what
    is overlapped and hidden (DP communication and the optimizer step beyond their exposed
    parts), in seconds. ``data``: a step Document's data."""
    import matplotlib
    b = data["breakdown"]
    exposed = [(name, b.get(key, 0.0)) for key, name in STEP_TERMS]
    hidden = hidden_parts(data)
    with matplotlib.rc_context(_RC):
        fig, ax = _bars(2.0)
        _segments(ax, 1, exposed)
        # a hidden part wears its exposed part's colour, faded, with a hatch of its own
        keys = [k for k, _ in STEP_TERMS]
        styles = [(PALETTE[keys.index(k) % len(PALETTE)], "//", 0.45)
                  for k in ("dp_comm_exposed_s", "optimizer_exposed_s")]
        _segments(ax, 0, [(f"{n} (hidden)", v) for n, v in hidden], styles)
        ax.set_ylim(-0.6, 1.6)
        ax.set_yticks([1, 0], ["step (exposed)", "overlapped (hidden)"])
        ax.set_xlabel("seconds per step")
        ax.set_xlim(0, max(data["step_time_s"], sum(v for _, v in hidden)) * 1.04)
        ax.spines[["top", "right"]].set_visible(False)
        ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=5, frameon=False,
                  fontsize=9)
        return _svg(fig, None, "step time as named terms, and the overlapped work beside it")


def hidden_parts(data: dict[str, Any]) -> list[tuple[str, float]]:
    """What runs under the step without adding to it: the DP communication and the optimizer
    step (with its transfers) less their exposed parts, from the step Document's data."""
    b = data["breakdown"]
    return [("DP communication", max(0.0, b["dp_comm_s"] - b["dp_comm_exposed_s"])),
            ("optimizer step + transfers",
             max(0.0, b["optimizer_s"] + b["offload_transfer_s"] - b["optimizer_exposed_s"]))]


def plot_chart(kind: str, data: dict[str, Any], label: str) -> str:
    """A ``--plot`` chart (report/plots.py) as inline SVG."""
    import matplotlib

    from optimus_calc.report.plots import build_figure
    plt = _pyplot()
    with matplotlib.rc_context(_RC):
        fig = build_figure(kind, data)
        matplotlib.rcParams.update(_RC)  # plots.py's own settings are for files
        for ax in fig.axes:  # a hatch per stacked part: colour is not the only carrier
            for i, bars in enumerate(ax.containers):
                for patch in bars:
                    patch.set_hatch(HATCHES[i % len(HATCHES)])
                    patch.set_edgecolor("white")
            if ax.get_legend() is not None:
                ax.legend(fontsize=8)
        fig.tight_layout()
        return _svg(fig, plt, label)
