"""The HTML page's charts as inline SVG, written directly: the memory, step and compare bars
(report/svg_bars.py) and the lines of `sweep`, `comm` and `breakeven --sweep/--sensitivity`
(report/svg_lines.py), the same data report/plots.py draws into a ``--plot`` file. No page
imports matplotlib (it cost each about 1 s).

Drawn from a Document's plain data only. Text stays text in the SVG (smaller, crisp at any
zoom, readable by a screen reader); colour is never the only carrier: every segment has its
own hatch, every line its marker and dash, each its name in the legend, and the same numbers
are in the table beside the chart. Deterministic.
"""

from __future__ import annotations

import math
from typing import Any

GB = 1e9
# Okabe-Ito, a palette readable with the common colour-vision deficiencies
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442",
           "#999999", "#000000", "#6A3D9A", "#B15928")
# line hatches only (report/svg_bars.py draws each as white lines across the colour)
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


def _size_ticks(xs: list[float], binary: bool) -> list[tuple[float, str]]:
    """A tick at each message size, named as `comm`'s table names it (units.fmt_bytes: KiB where
    the sizes were typed in binary units, kB else)."""
    from optimus_calc.units import fmt_bytes
    xs = sorted({x for x in xs if math.isfinite(x) and x > 0})
    return [(x, fmt_bytes(x, binary=binary).replace(".00 ", " ")) for x in xs]


def _log2_ticks(xs: list[float]) -> list[tuple[float, str]]:
    """A tick at each power of two over the points (fewer past ten), as a number."""
    xs = [x for x in xs if math.isfinite(x) and x > 0]
    lo, hi = (math.floor(math.log2(min(xs))), math.ceil(math.log2(max(xs)))) if xs else (0, 1)
    step = max(1, math.ceil((hi - lo + 1) / 10))
    return [(2.0 ** k, f"{2.0 ** k:g}") for k in range(lo, hi + 1, step)]


def sweep_chart(data: dict[str, Any], label: str) -> str:
    """`sweep`: tokens/s, MFU and (with --tokens) days and cost to train against nodes, a line
    per model / node type / swept setting, the SmartNIC what-if dashed, each point labelled with
    its recommended layout (report/plots.py's panels and groups)."""
    from optimus_calc.report.plots import (SWEEP_TITLE, layout_label, sweep_groups,
                                           sweep_panels, whatif_groups)
    from optimus_calc.report.svg_lines import MARKERS, Panel, Series, line_panels
    rows = data["rows"]
    groups, whatif = list(sweep_groups(rows).items()), whatif_groups(rows)
    out = []
    for key, ylabel, scale in sweep_panels(rows):
        series = []
        for i, (name, pts) in enumerate(groups):
            pts = sorted((p for p in pts if p.get(key) is not None), key=lambda p: p["nodes"])
            if pts:
                series.append(Series(" / ".join(str(x) for x in name if x),
                                     tuple(p["nodes"] for p in pts),
                                     tuple(p[key] * scale for p in pts),
                                     PALETTE[i % len(PALETTE)], MARKERS[i % len(MARKERS)],
                                     labels=tuple(layout_label(p) for p in pts)))
        if key == "tokens_per_s":
            for j, (name, pts) in enumerate(whatif.items(), start=len(groups)):
                pts = sorted(pts, key=lambda p: p["nodes"])
                series.append(Series(" / ".join(name), tuple(p["nodes"] for p in pts),
                                     tuple(p["whatif_smartnic_tokens_per_s"] for p in pts),
                                     PALETTE[j % len(PALETTE)], "x", dashed=True))
        out.append(Panel(ylabel, tuple(series)))
    empty = not any(p.series for p in out)
    nodes = sorted({r["nodes"] for r in rows})
    # node counts that double (1, 2, 4 ... 128) crowd a linear axis at its left: log 2 where
    # they span 8x or more
    wide = len(nodes) > 2 and nodes[0] > 0 and nodes[-1] / nodes[0] >= 8
    return line_panels(out, [(n, f"{n:g}") for n in nodes], "nodes", label, log2_x=wide,
                       note="no point has a layout (the reason column says why)" if empty
                       else "", title=SWEEP_TITLE)


def comm_chart(data: dict[str, Any], label: str) -> str:
    """`comm`: bus and algorithm bandwidth against the message size, log-2 x axis, as
    nccl-tests plots it."""
    from optimus_calc.report.plots import comm_title
    from optimus_calc.report.svg_lines import Panel, Series, line_panels
    rows = data.get("rows") or [data]
    xs = tuple(float(r["size_bytes"]) for r in rows)
    panel = Panel("GB/s", (
        Series("busbw", xs, tuple(r["busbw_GBps"] for r in rows), PALETTE[0], "o"),
        Series("algbw", xs, tuple(r["algbw_GBps"] for r in rows), PALETTE[1], "s",
               dashed=True)))
    return line_panels([panel], _size_ticks(list(xs), data.get("size_units") == "binary"),
                       "message size", label,
                       log2_x=True, title=comm_title(data))


def batch_sweep_chart(data: dict[str, Any], label: str) -> str:
    """`breakeven --sweep`: the step offloaded less the step on the GPU, and the optimizer
    step exposed, per batch (log-2 x axis); the break-even is where the first crosses 0."""
    from optimus_calc.report.plots import BATCH_SWEEP_TITLE
    from optimus_calc.report.svg_lines import Panel, Series, line_panels
    sw = data["batch_sweep"]
    rows = sw["rows"]
    by_batch = sw["what"] == "global-batch"
    xs = tuple(float(r["global_batch"] if by_batch else r["micro_batches"]) for r in rows)
    be = sw["breakeven_global_batch"] if by_batch else sw["breakeven_micro_batches"]
    panel = Panel("seconds", (
        Series("step offloaded - step on the GPU", xs,
               tuple(r["offload_step_s"] - r["gpu_step_s"] for r in rows), PALETTE[0], "o"),
        Series("optimizer exposed (offloaded)", xs,
               tuple(r["optimizer_exposed_s"] for r in rows), PALETTE[1], "x", dashed=True)),
        zero_line=True, vline=None if be is None else (float(be), "break-even"))
    return line_panels([panel], _log2_ticks(list(xs)),
                       "global batch" if by_batch else "micro-batches per step", label,
                       log2_x=True, title=BATCH_SWEEP_TITLE)


def sensitivity_chart(data: dict[str, Any], label: str) -> str:
    """`breakeven --sensitivity`: % change of the step per +1% of each hardware parameter."""
    from optimus_calc.report.svg_lines import signed_bars
    return signed_bars([(f"{r['label']} ({r['entry']})", r["step_time_elasticity"])
                        for r in data["sensitivity"]],
                       "% change of step time per +1% of the parameter (negative: faster)",
                       label, title="breakeven --sensitivity: the step's change per +1% of each "
                                    "parameter")


# the --plot charts the page draws as SVG directly, by Document.plot (memory and compare: the
# bars above; every --plot kind has one, so no page imports matplotlib)
LINE_CHARTS = {"sweep": sweep_chart, "comm": comm_chart, "batch_sweep": batch_sweep_chart,
               "sensitivity": sensitivity_chart}
