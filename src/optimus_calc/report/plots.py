"""Charts for ``--plot FILE.png|svg``, drawn from a Document's plain data.

matplotlib (Agg backend) is imported only here and only when a chart is asked for. Output is
deterministic: a fixed SVG hash salt, no date/creator/software metadata. The CLI's one output
writer (cli/common.py write_file) writes the bytes to a temporary name in the target directory
and moves them into place (``os.replace``), so a failure never leaves a partial image.

Kinds (``Document.plot``):
- ``sweep``: tokens/s, MFU and (with ``--tokens``) days to train and (priced) cost vs nodes, one
  line per model / node type (and sequence, batch, SmartNIC or offload target when the sweep
  varies them), the SmartNIC what-if dashed; each point is labelled with its recommended layout.
- ``memory``: GPU memory per part (weights, gradients, optimizer state, activations, overheads)
  stacked per pipeline stage, with the GPU capacity (dashed) and the usable memory, capacity less
  the headroom margin (solid).

Every value axis starts at 0, so a small spread looks small.
- ``compare``: the same stacked parts per offload strategy, with the GPU capacity line.
- ``comm``: bus bandwidth (and algorithm bandwidth) vs message size, log-2 x axis, as
  nccl-tests plots it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from optimus_calc.errors import InputError

FORMATS = {".png": "png", ".svg": "svg"}
PARTS = [("weights_bytes", "weights"), ("gradients_bytes", "gradients"),
         ("optimizer_bytes", "optimizer state"), ("activations_bytes", "activations"),
         ("overhead_bytes", "overheads")]
DPI = 100
GB = 1e9


def check_path(path: str) -> str:
    """The image format ``path``'s extension names; a one-line input error for any other."""
    ext = Path(path).suffix.lower()
    if ext not in FORMATS:
        raise InputError(f"--plot {path[:200]!r}: the file name must end in .png or .svg")
    return FORMATS[ext]  # the path itself is checked by the writer (cli/common.py check_target)


def _pyplot():
    try:
        import matplotlib
    except ModuleNotFoundError:
        raise InputError("--plot needs matplotlib: pip install matplotlib") from None
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt
    matplotlib.rcParams.update({"svg.hashsalt": "optimus-calc", "svg.fonttype": "path",
                                "path.simplify": False, "figure.dpi": DPI})
    return plt


def tight(fig) -> None:
    """``fig.tight_layout()``'s subplot parameters, applied without leaving a layout engine on
    the figure: ``tight_layout`` leaves a placeholder engine, and a figure with an engine is drawn
    once more, unseen, before ``savefig`` draws it (matplotlib backend_bases.py print_figure)
    (a third of a PNG's CPU; the bytes are the same)."""
    from matplotlib.layout_engine import TightLayoutEngine
    TightLayoutEngine(pad=1.08, rect=None).execute(fig)  # tight_layout()'s defaults


def _from_zero(ax, top: float) -> None:
    """Every value axis starts at 0 (a 0.03-point MFU spread must look flat, issue 20); the top
    leaves room for the point labels."""
    ax.set_ylim(0, top * 1.12 if top > 0 else 1.0)


def _thousands():
    from matplotlib.ticker import FuncFormatter
    return FuncFormatter(lambda v, _pos: f"{v:,.0f}" if abs(v) >= 100 else f"{v:g}")


def _stacked(ax, labels: list[str], parts: list[dict[str, float]], capacity: float | None,
             title: str, usable: float | None = None) -> None:
    bottom = [0.0] * len(labels)
    x = list(range(len(labels)))
    for key, name in PARTS:
        vals = [p.get(key, 0.0) / GB for p in parts]
        ax.bar(x, vals, bottom=bottom, label=name, width=0.6)
        bottom = [b + v for b, v in zip(bottom, vals)]
    if capacity:
        ax.axhline(capacity / GB, color="grey", linestyle="--", linewidth=1,
                   label=f"GPU capacity {capacity / GB:g} GB")
    if capacity and usable is not None:
        # what memory and the planner judge against: capacity less the --headroom margin
        ax.axhline(usable / GB, color="black", linestyle="-", linewidth=1.2,
                   label=f"usable {usable / GB:g} GB (capacity less "
                         f"{1 - usable / capacity:.0%} headroom)")
    ax.set_xticks(x)
    ax.set_xticklabels(labels, rotation=20 if len(labels) > 3 else 0, ha="right"
                       if len(labels) > 3 else "center", fontsize=8)
    ax.set_ylabel("GB per GPU (1 GB = 1e9 bytes)")
    ax.set_title(title, fontsize=10)
    _from_zero(ax, 1.2 * max(bottom + [(capacity or 0.0) / GB]))  # room for the legend
    ax.legend(fontsize=7, ncol=2, loc="upper right")


def _memory(plt, data: dict[str, Any]):
    stages = data.get("stages") or [data["per_gpu"]]
    fig, ax = plt.subplots(figsize=(max(5, 1.2 * len(stages) + 3), 4.5))
    labels = [f"stage {s.get('index', s.get('stage', i))}" for i, s in enumerate(stages)]
    name = data.get("model", {}).get("name", "")
    per_gpu = data.get("per_gpu", {})
    _stacked(ax, labels, stages, per_gpu.get("capacity_bytes"), f"memory per GPU: {name}",
             usable=per_gpu.get("usable_bytes"))
    return fig


def _compare(plt, data: dict[str, Any]):
    rows = data["strategies"]
    fig, ax = plt.subplots(figsize=(max(6, 1.3 * len(rows) + 2), 5))
    parts = [{k: r.get(f"gpu_{k}", 0.0) for k, _ in PARTS} for r in rows]
    cap = rows[0].get("gpu_capacity_bytes") if rows else None
    _stacked(ax, [r["strategy"] for r in rows], parts, cap,
             f"GPU memory per offload strategy: {data.get('model', '')}",
             usable=rows[0].get("gpu_usable_bytes") if rows else None)
    return fig


def layout_label(r: dict[str, Any]) -> str:
    """A sweep point's label: the recommended layout (``TP4 PP1 DP16 Z3``, then EP/CP when > 1
    and the offload target when there is one), or why nothing fits."""
    if not r.get("fits", True) or r.get("tp") is None:
        return "no layout fits"
    parts = [f"TP{r['tp']}", f"PP{r['pp']}", f"DP{r['dp']}"]
    parts += [f"{k.upper()}{r[k]}" for k in ("ep", "cp") if (r.get(k) or 1) > 1]
    parts.append(f"Z{r.get('zero')}")
    if r.get("offload") not in (None, "", "none"):
        parts.append(str(r["offload"]))
    return " ".join(parts)


SWEEP_PANELS = [("tokens_per_s", "tokens/s", 1.0), ("mfu", "MFU (%)", 100.0),
                ("train_days", "days to train", 1.0), ("cost_usd", "cost to train (USD)", 1.0)]


def sweep_groups(rows: list[dict]) -> dict[tuple, list[dict]]:
    """One line per model / node type and per swept setting (sequence, batch, SmartNIC offered,
    and the offload target when the sweep varies it). A batch the rule sets per layout
    (``global_batch_rule``) is no swept setting: it splits no line."""
    swept = [f for f in ("seq_len", "global_batch", "smartnic_offered")
             if f != "global_batch" or not all(r.get("global_batch_rule") for r in rows)]
    fields = [f for f in swept if len({r.get(f) for r in rows}) > 1]
    same_point: dict[tuple, int] = {}
    for r in rows:
        k = (r["model"], r["node"], r["nodes"], *(r.get(f) for f in fields), r.get("smartnic"))
        same_point[k] = same_point.get(k, 0) + 1
    by_offload = any(n > 1 for n in same_point.values())
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        key = (r["model"], r["node"], *(f"{f} {r.get(f)}" for f in fields),
               f"offloads {r.get('offload')}" if by_offload else "")
        groups.setdefault(key, []).append(r)
    return groups


def sweep_panels(rows: list[dict]) -> list[tuple[str, str, float]]:
    """The panels some row has a value for (key, axis label, scale); no point has a layout:
    an empty tokens/s panel, which says so."""
    return ([p for p in SWEEP_PANELS if any(r.get(p[0]) is not None for r in rows)]
            or SWEEP_PANELS[:1])


def whatif_groups(rows: list[dict]) -> dict[tuple, list[dict]]:
    """The SmartNIC what-if's tokens/s, one dashed line per model / node type / card."""
    whatif: dict[tuple, list[dict]] = {}
    for r in rows:
        if r.get("smartnic") and r.get("whatif_smartnic_tokens_per_s") is not None:
            whatif.setdefault((r["model"], r["node"], f"what-if {r['smartnic']}"), []).append(r)
    return whatif


SWEEP_TITLE = "sweep: recommended layout per node count (labels: TP PP DP ZeRO, offload)"


def _sweep(plt, data: dict[str, Any]):
    """Tokens/s, MFU, and with ``--tokens`` days to train (and cost when priced) against nodes,
    every axis from 0, every point labelled with its recommended layout (issue 20)."""
    rows = data["rows"]
    panels = sweep_panels(rows)
    fig, axes = plt.subplots(len(panels), 1, figsize=(7.5, 2.6 * len(panels) + 0.6),
                             sharex=True, squeeze=False)
    axes = [a[0] for a in axes]
    groups, whatif = sweep_groups(rows), whatif_groups(rows)
    for ax, (key, label, scale) in zip(axes, panels):
        top = 0.0
        for name, pts in groups.items():
            pts = sorted((p for p in pts if p.get(key) is not None), key=lambda p: p["nodes"])
            if not pts:
                continue
            xs = [p["nodes"] for p in pts]
            ys = [p[key] * scale for p in pts]
            top = max([top, *ys])
            line, = ax.plot(xs, ys, marker="o", label=" / ".join(str(x) for x in name if x))
            for p, x, y in zip(pts, xs, ys):
                ax.annotate(layout_label(p), (x, y), fontsize=6, xytext=(3, 3),
                            textcoords="offset points", color=line.get_color())
        if key == "tokens_per_s":
            for name, pts in whatif.items():
                pts = sorted(pts, key=lambda p: p["nodes"])
                ys = [p["whatif_smartnic_tokens_per_s"] for p in pts]
                top = max([top, *ys])
                ax.plot([p["nodes"] for p in pts], ys, marker="x", linestyle="--",
                        label=" / ".join(name))
        ax.set_ylabel(label, fontsize=9)
        _from_zero(ax, top)
        ax.yaxis.set_major_formatter(_thousands())
        ax.margins(x=0.12)  # the last point's label stays inside
        ax.grid(True, linewidth=0.3)
    axes[0].set_title(SWEEP_TITLE, fontsize=10)
    if axes[0].get_legend_handles_labels()[0]:
        axes[0].legend(fontsize=7)
    else:
        axes[0].text(0.5, 0.5, "no point has a layout (the reason column says why)",
                     transform=axes[0].transAxes, ha="center", va="center", fontsize=9)
    axes[-1].set_xlabel("nodes")
    axes[-1].set_xticks(sorted({r["nodes"] for r in rows}))
    return fig


def comm_title(data: dict[str, Any]) -> str:
    topo = data.get("topology", {})
    where = f", {topo['ranks']} ranks on {topo['nodes']} node(s)" if topo else ""
    return (f"{data.get('algo', '')} {data.get('collective', '')}{where}: bus bandwidth "
            "(nccl-tests convention)")


BATCH_SWEEP_TITLE = "breakeven: where the offload pays off"


def _comm(plt, data: dict[str, Any]):
    rows = data.get("rows") or [data]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    xs = [r["size_bytes"] for r in rows]
    ax.plot(xs, [r["busbw_GBps"] for r in rows], marker="o", label="busbw")
    ax.plot(xs, [r["algbw_GBps"] for r in rows], marker=".", linestyle=":", label="algbw")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("GB/s")
    _from_zero(ax, max([0.0, *(r["busbw_GBps"] for r in rows), *(r["algbw_GBps"] for r in rows)]))
    ax.set_title(comm_title(data), fontsize=10)
    ax.grid(True, which="both", linewidth=0.3)
    ax.legend(fontsize=8)
    return fig


def _sensitivity(plt, data: dict[str, Any]):
    """`breakeven --sensitivity`: % change of step time per +1% of each hardware parameter."""
    rows = data["sensitivity"]
    labels = [f"{r['label']} ({r['entry']})" for r in rows]
    vals = [r["step_time_elasticity"] for r in rows]
    fig, ax = plt.subplots(figsize=(7, 0.35 * len(rows) + 1.4))
    y = list(range(len(rows)))
    ax.barh(y, vals, color=["tab:green" if v < 0 else "tab:red" for v in vals])
    ax.set_yticks(y)
    ax.set_yticklabels(labels, fontsize=7)
    ax.invert_yaxis()
    ax.axvline(0, color="black", linewidth=0.5)
    ax.set_xlabel("% change of step time per +1% of the parameter (negative: faster)")
    ax.set_title("breakeven --sensitivity", fontsize=10)
    ax.grid(True, axis="x", linewidth=0.3)
    tight(fig)
    return fig


KINDS = {"memory": _memory, "compare": _compare, "sweep": _sweep, "comm": _comm,
         "sensitivity": _sensitivity}


def _batch_sweep(plt, data: dict[str, Any]):
    """breakeven --sweep: step time with the optimizer offloaded and on the GPU per batch."""
    sw = data["batch_sweep"]
    rows = sw["rows"]
    fig, ax = plt.subplots(figsize=(7, 3.6))
    xs = [r["global_batch"] if sw["what"] == "global-batch" else r["micro_batches"]
          for r in rows]
    ax.plot(xs, [r["offload_step_s"] - r["gpu_step_s"] for r in rows], marker="o",
            label="step offloaded - step on the GPU")
    ax.plot(xs, [r["optimizer_exposed_s"] for r in rows], marker="x", linestyle=":",
            label="optimizer exposed (offloaded)")
    ax.axhline(0.0, linewidth=0.6, color="black")
    be = sw["breakeven_global_batch"] if sw["what"] == "global-batch" else \
        sw["breakeven_micro_batches"]
    if be is not None:
        ax.axvline(be, linestyle="--", linewidth=0.8, color="grey", label="break-even")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("global batch" if sw["what"] == "global-batch" else "micro-batches per step")
    ax.set_ylabel("seconds")
    ax.grid(True, linewidth=0.3)
    ax.legend(fontsize=7)
    ax.set_title(BATCH_SWEEP_TITLE, fontsize=10)
    return fig


KINDS["batch_sweep"] = _batch_sweep


def build_figure(kind: str, data: dict[str, Any]):
    """The matplotlib figure of ``kind`` for a Document's data (tests read its axes and lines:
    the plot data, not pixels). The caller closes it (``figure_bytes`` does)."""
    return KINDS[kind](_pyplot(), data)


def figure_bytes(kind: str, data: dict[str, Any], fmt: str) -> bytes:
    """The chart as PNG or SVG bytes (pure: data in, bytes out)."""
    import io
    plt = _pyplot()
    fig = KINDS[kind](plt, data)
    try:
        tight(fig)
        buf = io.BytesIO()
        meta = ({"Date": None, "Creator": None} if fmt == "svg" else {"Software": None})
        fig.savefig(buf, format=fmt, metadata=meta, dpi=DPI)
        return buf.getvalue()
    finally:
        plt.close(fig)


def plot_bytes(doc, path: str) -> bytes:
    """``doc``'s chart, in the format ``path`` names. Writing it is the CLI's one output writer
    (cli/common.py write_file: atomic, never over an input, every failure one line)."""
    fmt = check_path(path)
    if doc.plot not in KINDS:
        raise InputError("--plot: this command has no chart with these options (breakeven "
                         "draws one with --sensitivity or --sweep)")
    return figure_bytes(doc.plot, doc.data, fmt)
