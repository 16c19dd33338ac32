"""Documents for `breakeven`: one device's requirements, the catalog-wide view, sensitivity."""

from __future__ import annotations

from typing import assert_never

from optimus_calc.analyses.breakeven.case import Goal
from optimus_calc.evaluate.hw_params import LINK_ROLES
from optimus_calc.report.common import (framework_header, hardware_data, layout_data, layout_text,
                                        model_data, training_data, training_text)
from optimus_calc.report.common import applied_imbalance, imbalance_note
from optimus_calc.report.batch_sweep_view import sweep_data, sweep_note, sweep_table
from optimus_calc.report.card_view import card_data, card_notes, card_table
from optimus_calc.report.document import Column, Document, Table
from optimus_calc.specs.training import Offload
from optimus_calc.units import GB


def method_short(method: str) -> str:
    short = ("sympy" if method.startswith("closed form") else
             "floor" if method.startswith("exposure floor") else
             "integer search" if method.startswith("exact search") else "search")
    return short + ("*" if "disagreed" in method else "")


def _num(v: float) -> str:
    return f"{v:.4g}"


def value_text(v: float | None, unit: str) -> str:
    return "-" if v is None else f"{_num(v)} {unit}"


def device_name(res) -> str:
    hw, off = res.case.hw, res.case.layout.offload
    return hw.smartnic.name if off is Offload.SMARTNIC else hw.cpu.name


def device_kind(res) -> str:
    hw, off = res.case.hw, res.case.layout.offload
    return hw.smartnic.device_type if off is Offload.SMARTNIC else "cpu"


def requirement_data(r) -> dict:
    p = r.param
    return {"parameter": p.field if p.role in LINK_ROLES else p.name,
            "role": p.role, "entry": r.entry, "label": p.label, "unit": p.unit,
            "current": r.current, "required": r.required, "ratio": r.ratio, "status": r.status,
            "method": r.method, "equation": r.equation, "binding": r.binding}


def _limit(res) -> tuple[str, float | None]:
    """The device's own parameter that limits it (cards per node aside): the cheapest fix when
    the goal is not met, the tightest margin when it is."""
    r = res.tightest(own=True) if res.goal_met else res.cheapest(own=True)
    if r is None:
        return ("no single parameter" if not res.goal_met else "none", None)
    return requirement_data(r)["parameter"], r.ratio


def _cards_per_gpu(res) -> float | None:
    for r in res.requirements:
        if r.param.role == "layout" and r.required is not None:
            return r.required / res.case.hw.gpus_per_node
    return None


def margin_text(res) -> str:
    m = res.margin
    return f"{m / GB:+.3g} GB" if _margin_unit(res.goal) == "bytes" else f"{m:+.3g} s"


def _margin_unit(goal: Goal) -> str:
    match goal:
        case Goal.FIT:
            return "bytes"  # capacity left on the device
        case Goal.HIDE | Goal.MATCH:
            return "s"      # time left in the window / against the reference
        case _:
            assert_never(goal)


def device_data(res) -> dict:
    st = res.state
    limit, ratio = _limit(res)
    return {
        "device": device_name(res), "kind": device_kind(res),
        "offload": res.case.layout.offload.value,
        "devices_per_node": (res.case.layout.smartnics_per_node or res.case.hw.gpus_per_node)
        if res.case.layout.offload is Offload.SMARTNIC else res.case.hw.node.cpus,
        "goal_met": res.goal_met, "margin": res.margin,
        "margin_unit": _margin_unit(res.goal),
        "limiting_parameter": limit, "limiting_ratio": ratio,
        "cards_per_gpu_required": _cards_per_gpu(res),
        "step_time_s": st.step_time_s, "optimizer_s": st.optimizer_s,
        "offload_transfer_s": st.offload_transfer_s, "window_s": st.window_s,
        "pipeline_s": st.pipeline_s, "gradient_in_s": st.gradient_in_s,
        "weights_out_s": st.weights_out_s,
        "optimizer_exposed_s": st.optimizer_exposed_s,
        "offload_bytes_per_device": st.offload_bytes_per_device,
        "offload_capacity_bytes_per_device": st.offload_capacity_per_device,
        "spill_bytes_per_device": st.spill_bytes_per_device,
        "gpu_memory_bytes": st.gpu_bytes, "layout_fits": st.reasons == 0,
        "requirements": [requirement_data(r) for r in res.requirements],
        "not_entering": [{"parameter": p.field, "role": p.role,
                          "entry": p.entry_name(res.case.hw)} for p in res.not_entering],
    }


def _now_columns(goal: Goal) -> list[Column]:
    time_cols = [Column("opt", "optimizer s", ".4g"), Column("xfer", "transfers s", ".4g"),
                 Column("window", "window s", ".4g")]
    match goal:
        case Goal.FIT:
            return [Column("state", "state GB/device", ".4g"),
                    Column("capacity", "capacity GB", ".4g")]
        case Goal.HIDE:
            return time_cols
        case Goal.MATCH:
            return time_cols + [Column("step", "step s", ".4g")]
        case _:
            assert_never(goal)


def _now_cells(res) -> dict:
    st = res.state
    return {"state": st.offload_bytes_per_device / GB,
            "capacity": st.offload_capacity_per_device / GB, "opt": st.optimizer_s,
            "xfer": st.offload_transfer_s, "window": st.window_s,
            "exposed": st.optimizer_exposed_s, "step": st.step_time_s}


def now_text(res) -> str:
    st = res.state
    goal = res.goal
    match goal:
        case Goal.FIT:
            return (f"{st.offload_bytes_per_device / GB:.4g} GB of optimizer state per device, "
                    f"capacity {st.offload_capacity_per_device / GB:.4g} GB")
        case Goal.HIDE | Goal.MATCH:
            pass
        case _:
            assert_never(goal)
    off = res.case.layout.offload
    if off is Offload.SMARTNIC:
        s = (f"card pipeline {st.pipeline_s:.4g} s (gradient in {st.gradient_in_s:.4g} s, "
             f"update {st.optimizer_s:.4g} s, weights out {st.weights_out_s:.4g} s over "
             f"{st.layers:.0f} layers), window {st.window_s:.4g} s (the last micro-batch's "
             "backward + the next forward + the exposed DP time)")
    elif off is Offload.SUPERCHIP:
        s = (f"step {st.optimizer_s:.4g} s (transfers {st.offload_transfer_s:.4g} s of it), "
             f"window {st.window_s:.4g} s (the last micro-batch's backward; the last bucket "
             "follows it)")
    else:
        s = (f"step {st.optimizer_s:.4g} s (transfers {st.offload_transfer_s:.4g} s of it) "
             "after the backward, window 0 s")
    s += f": {st.optimizer_exposed_s:.4g} s exposed; step {st.step_time_s:.4g} s"
    if goal is Goal.MATCH:
        s += f" vs reference {res.reference_s:.4g} s"
    return s


REQ_COLUMNS = [Column("n", "#"), Column("label", "parameter", align="left"),
               Column("field", "field", align="left"), Column("entry", "entry", align="left"),
               Column("current", "current"), Column("required", "required"),
               Column("ratio", "ratio"), Column("method", "method", align="left")]


def _req_rows(res) -> list[dict]:
    rows = []
    for n, r in enumerate(res.requirements, 1):
        d = requirement_data(r)
        req = {"never": "never", "any": "any"}.get(r.status) or value_text(r.required, d["unit"])
        rows.append({"n": n, "label": d["label"], "field": d["parameter"], "entry": d["entry"],
                     "current": value_text(r.current, d["unit"]), "required": req,
                     "ratio": "-" if r.ratio is None else f"{r.ratio:.3g}x",
                     "method": method_short(r.method), "binding": r.binding})
    return rows


def binding_notes(requirements) -> list[str]:
    """One note per distinct binding, naming the parameters it applies to (the host
    strategies' exposure floor is the same for all of them)."""
    groups: dict[str, list[str]] = {}
    for n, r in enumerate(requirements, 1):
        if r.binding:
            groups.setdefault(r.binding, []).append(f"#{n} {r.param.name}")
    return [f"{', '.join(names)}: {text}" for text, names in groups.items()]


def _sens_parts(sens) -> tuple[list[dict], Table, Table]:
    case, items = sens
    data = [{"parameter": s.param.field, "role": s.param.role, "entry": s.entry,
             "label": s.param.label, "unit": s.param.unit, "current": s.current,
             "step_time_elasticity": s.step_elasticity,
             "gpu_headroom_elasticity": s.headroom_elasticity} for s in items]
    rows = [{"label": d["label"], "entry": d["entry"],
             "current": value_text(d["current"], d["unit"]),
             "e_t": f"{d['step_time_elasticity']:+.3f}",
             "e_h": None if d["gpu_headroom_elasticity"] is None
             else f"{d['gpu_headroom_elasticity']:+.3f}"} for d in data]
    table = Table(title=f"sensitivity of {layout_text(case.layout)}: % change per +1% of the "
                        "parameter", rows=rows, columns=[
        Column("label", "parameter", align="left"), Column("entry", "entry", align="left"),
        Column("current", "current"), Column("e_t", "step time"),
        Column("e_h", "GPU memory headroom")])
    csv = Table(title="", rows=data, columns=[Column(k, k) for k in (
        "parameter", "role", "entry", "unit", "current", "step_time_elasticity",
        "gpu_headroom_elasticity")])
    return data, table, csv


def breakeven_document(inp, goal, results, ref, sens, single: bool, card=None,
                       saved: str | None = None, planned: bool = False,
                       sweep=None) -> Document:
    """``card``: (MinimumCard, Reach | None) for one SmartNIC; ``saved``: where its corner
    was written."""
    data: dict = {"model": model_data(inp.model), "hardware": hardware_data(inp.hw),
                  "layout": layout_data(inp.layout), "training": training_data(inp.training),
                  "assumptions": dict(inp.assumptions), "goal": goal.value,
                  **applied_imbalance(inp.model, inp.assumptions, inp.layout),
                  "goal_text": goal.text}
    lay_text = (layout_text(results[0].case.layout) if single else
                layout_text(inp.layout).split(", offload")[0] + ", the optimizer on each device "
                "in turn")
    data["layout_planned"] = planned
    if planned:
        lay_text += " (no layout given: the planner's layout for this node and device)"
    header = [("layout", lay_text), *framework_header(inp),
              ("training", training_text(inp))]
    notes: list[str] = []
    if ref is not None:
        data["reference"] = {"label": ref.label, **layout_data(ref.layout),
                             "micro_batch": ref.training.micro_batch,
                             "recompute": ref.training.recompute.value,
                             "step_time_s": ref.step_time_s, "fits": ref.fits}
        header.append(("reference", f"{ref.label}: {layout_text(ref.layout)}, micro-batch "
                                    f"{ref.training.micro_batch}, recompute "
                                    f"{ref.training.recompute.value}: {ref.step_time_s:.4g} s"
                                    + ("" if ref.fits else " (does not fit GPU memory)")))
    tables: list[Table] = []
    csv: Table
    title = (f"breakeven: {inp.model.name} on {inp.hw.nodes} x {inp.hw.node.name} "
             f"({inp.hw.gpus} x {inp.hw.gpu.name}), goal {goal.value}")
    if single:
        suffix, csv = _single_parts(results[0], goal, data, header, tables, notes, card, saved)
        title += suffix
    else:
        csv = _catalog_parts(results, goal, data, tables, notes)
    plot = "sensitivity" if sens is not None else ""
    if sweep is not None:
        data["batch_sweep"] = sweep_data(sweep)
        tables.append(sweep_table(sweep))
        notes.append(sweep_note(sweep))
        plot = "batch_sweep"
    if sens is not None:
        sdata, stable, scsv = _sens_parts(sens)
        data["sensitivity"] = sdata
        tables.append(stable)
        csv = scsv
    notes += imbalance_note(inp.model, inp.assumptions, inp.layout)
    notes.append("methods: sympy = closed form on the registry's expressions (`optimus-calc "
                 "explain compute.optimizer_step_time`, optimusnic.pipeline_time, "
                 "memory.spill_bytes), checked against the evaluator; floor = the strategy's "
                 "exposure has a floor no value removes (offload.exposed_zero_offload, "
                 "offload.exposed_superoffload_stv's last sub-group and step()), confirmed "
                 "at the bound; search = bracketing over the evaluator with the parameter "
                 "changed (the host "
                 "strategies' phase-by-phase step, links, capacities, cards); * = the closed "
                 "form disagreed with the evaluator and was replaced")
    return Document(title=title, header=header, data=data, tables=tables, notes=notes, csv=csv,
                    plot=plot)


def _single_parts(res, goal, data: dict, header: list, tables: list, notes: list, card,
                  saved) -> tuple[str, Table]:
    """One device: its figures, the minimum card, the requirements; (the title's suffix, the
    CSV table)."""
    d = device_data(res)
    data.update({k: v for k, v in d.items()})
    data["layout"] = layout_data(res.case.layout)
    name = d["device"]
    header.append(("now", now_text(res) + ("; goal met" if res.goal_met
                                           else "; goal not met")))
    unreachable = card is not None and card[1] is not None
    if card is not None:
        data["minimum_card"] = card_data(*card)
        if card[0].corner is not None:
            tables.append(card_table(card[0]))
        notes += card_notes(card[0], card[1], saved)
    if not unreachable:  # a table of "never" says less than the verdict
        tables.append(Table(title=f"what {name} needs to {goal.text} (each parameter "
                                  "alone, the rest as in the catalog)",
                            rows=_req_rows(res), columns=REQ_COLUMNS))
        notes += binding_notes(res.requirements)
    if res.not_entering:
        notes.append("not in this goal's equations: " + ", ".join(
            f"{p.field} ({p.entry_name(res.case.hw)})" for p in res.not_entering))
    if not d["layout_fits"]:
        notes.append("the layout does not fit as it is (see `optimus-calc memory`); the "
                     "requirements are for its step as evaluated")
    csv = Table(title="", rows=[{"device": name, "goal": goal.value, **r}
                                for r in d["requirements"]],
                columns=[Column(k, k) for k in (
                    "device", "goal", "parameter", "role", "entry", "unit", "current",
                    "required", "ratio", "status", "method", "binding")])
    return f", {name}", csv


def _catalog_parts(results, goal, data: dict, tables: list, notes: list) -> Table:
    """One row per device of the catalog; returns the CSV table."""
    devs = [device_data(r) for r in results]
    data["devices"] = devs
    rows = []
    for res, d in zip(results, devs):
        lim = d["limiting_parameter"]
        if d["limiting_ratio"] is not None:
            lim += f" {d['limiting_ratio']:.3g}x"
        cards = d["cards_per_gpu_required"]
        kind = {"smartnic": d["kind"], "superchip": "superchip"}.get(d["offload"], "host cpu")
        rows.append({"device": d["device"], "kind": kind,
                     "met": d["goal_met"], "margin": margin_text(res), **_now_cells(res),
                     "cards": "-" if cards is None else f"{cards:.3g}", "limit": lim})
    tables.append(Table(
        title=f"offload devices: can each {goal.text}? (margin < 0: short by that much)",
        rows=rows,
        columns=[Column("device", "device", align="left"),
                 Column("kind", "kind", align="left"), Column("met", "met"),
                 Column("margin", "margin"), *_now_columns(Goal(goal)),
                 Column("cards", "cards/GPU needed"),
                 Column("limit", "limiting parameter", align="left")]))
    notes.append("limiting parameter: the cheapest single change of the device's own "
                 "parameters when the goal is not met, the one with the least room when it "
                 "is (required / current); cards/GPU needed: the fewest cards per GPU that "
                 "meet the goal")
    if goal.value != "fit":
        notes.append("optimizer s: a card's step (its transfers come on top) or a host "
                     "strategy's whole step (transfers included); window: what the step "
                     "overlaps with (OptimusNIC: the last micro-batch's backward + the next "
                     "forward + the exposed DP time; SuperOffload: the last micro-batch's "
                     "backward, the last bucket after it; ZeRO-Offload: nothing)")
    no_fit = [d["device"] for d in devs if not d["layout_fits"]]
    if no_fit:  # as the one-device view says it: a "yes" on a layout that does not fit
        notes.append(f"the layout does not fit as it is with {', '.join(no_fit)} (see "
                     "`optimus-calc memory`; layout_fits in JSON and CSV); their rows are for "
                     "its step as evaluated")
    notes.append("`optimus-calc breakeven ... --device NAME` lists every parameter of one "
                 "device; JSON has them for all")
    return Table(title="", rows=[{k: v for k, v in d.items()
                                  if k not in ("requirements", "not_entering")}
                                 for d in devs],
                 columns=[Column(k, k) for k in devs[0] if k not in (
                     "requirements", "not_entering")])
