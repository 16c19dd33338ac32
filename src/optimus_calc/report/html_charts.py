"""The HTML page's charts as inline SVG: the memory and step bars written directly
(report/svg_bars.py: no matplotlib on the `plan`, `step` and `memory` pages), a command's
``--plot`` chart through matplotlib, as report/plots.py draws it.

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
              ("optimizer_exposed_s", "optimizer exposed"),
              ("param_offload_exposed_s", "weights streamed in"), ("fixed_s", "fixed costs"))


def _pyplot():
    import matplotlib
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt
    return plt


_RC = {"svg.hashsalt": "optimus-calc", "svg.fonttype": "none", "path.simplify": False,
       "font.size": 10, "font.family": "sans-serif", "hatch.linewidth": 0.6}


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


def memory_chart(per_gpu: dict[str, Any]) -> str:
    """One GPU's memory (the most loaded stage) as a stacked bar against the usable memory
    (capacity less the --headroom margin, solid) and the capacity (dashed), in GB."""
    from optimus_calc.report.svg_bars import Segment, VLine, stacked_bars
    segs = [Segment(name, per_gpu.get(key, 0.0) / GB, PALETTE[i % len(PALETTE)],
                    HATCHES[i % len(HATCHES)]) for i, (key, name) in enumerate(MEMORY_PARTS)]
    usable, cap = per_gpu["usable_bytes"] / GB, per_gpu["capacity_bytes"] / GB
    lines = (VLine(usable, f"usable {usable:.1f} GB", "usable", tag_left=True),
             VLine(cap, f"capacity {cap:g} GB", "capacity", dashed=True))
    return stacked_bars([(f"stage {per_gpu.get('stage', 0)}", segs)],
                        max(cap, per_gpu["total_bytes"] / GB) * 1.12,
                        "GB per GPU (decimal, 10^9 bytes)",
                        "GPU memory per part against the usable memory and capacity", lines,
                        legend_cols=4, ident="mem")


def step_chart(data: dict[str, Any]) -> str:
    """The step as a stacked bar of its named terms (what the step pays), and beside it what
    is overlapped and hidden (DP communication and the optimizer step beyond their exposed
    parts), in seconds. ``data``: a step Document's data."""
    from optimus_calc.report.svg_bars import Segment, stacked_bars
    b = data["breakdown"]
    exposed = [Segment(name, b.get(key, 0.0), PALETTE[i % len(PALETTE)],
                       HATCHES[i % len(HATCHES)]) for i, (key, name) in enumerate(STEP_TERMS)]
    hidden = hidden_parts(data)
    # a hidden part wears its exposed part's colour, faded, with a hatch of its own
    keys = [k for k, _ in STEP_TERMS]
    colours = [PALETTE[keys.index(k) % len(PALETTE)]
               for k in ("dp_comm_exposed_s", "optimizer_exposed_s")]
    # the sparse cross no exposed term wears (HATCHES: "xx" is TP's), so a hidden part never
    # looks like an exposed one of a similar grey
    faded = [Segment(f"{n} (hidden)", v, c, "x", 0.45) for (n, v), c in zip(hidden, colours)]
    return stacked_bars([("step (exposed)", exposed), ("overlapped (hidden)", faded)],
                        max(data["step_time_s"], sum(v for _, v in hidden)) * 1.04,
                        "seconds per step",
                        "step time as named terms, and the overlapped work beside it",
                        ident="step")


def compare_chart(data: dict[str, Any]) -> str:
    """`compare`'s GPU memory per offload strategy: a stacked bar per strategy (its parts as in
    memory_chart) against the GPU's capacity (dashed), in GB; ``data``: compare's data."""
    from optimus_calc.report.svg_bars import Segment, VLine, stacked_bars
    rows = data["strategies"]
    bars = [(r["strategy"], [Segment(name, r.get(f"gpu_{key}", 0.0) / GB,
                                     PALETTE[i % len(PALETTE)], HATCHES[i % len(HATCHES)])
                             for i, (key, name) in enumerate(MEMORY_PARTS)]) for r in rows]
    cap = (rows[0].get("gpu_capacity_bytes") or 0.0) / GB if rows else 0.0
    lines = (VLine(cap, f"capacity {cap:g} GB", "capacity", dashed=True),) if cap else ()
    top = max([sum(s.value for s in segs) for _, segs in bars] + [cap]) * 1.12
    return stacked_bars(bars, top, "GB per GPU (decimal, 10^9 bytes)",
                        f"GPU memory per offload strategy: {data.get('model', '')}", lines,
                        legend_cols=4, ident="cmp")


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
