"""The minimum-card part of `breakeven` (analyses/breakeven/card.py and reach.py)."""

from __future__ import annotations

from optimus_calc.report.document import Column, Table

UNITS = {"host_link.bandwidth_GBps": "GB/s", "memory_GB": "GB", "memory_bandwidth_GBps": "GB/s",
         "cores": "cores", "core_bandwidth_GBps": "GB/s", "core_GHz": "GHz",
         "fabric_fp32_TFLOPS": "TFLOP/s", "expansion_bandwidth_GBps": "GB/s",
         "expansion_memory_GB": "GB"}


def card_data(mc, reach) -> dict:
    data: dict = {"card": mc.named.card.name, "multiple": mc.multiple,
                  "evaluations": mc.evaluations}
    if mc.corner is not None:
        data["corner"] = {f.field: f.corner for f in mc.fields}
        data["fields"] = [{"field": f.field, "unit": UNITS.get(f.field, ""), "named": f.named,
                           "at_multiple": f.named * mc.multiple, "corner": f.corner,
                           "binding": f.binding} for f in mc.fields]
    if reach is not None:
        data["unreachable"] = {"binding": reach.binding, "changes": list(reach.changes)}
    return data


def card_table(mc) -> Table:
    m = mc.multiple
    rows = [{"field": f.field, "unit": UNITS.get(f.field, ""), "named": f.named,
             "multiple": f.named * m if f.field != "cores" else f.named,
             "corner": f.corner, "ratio": f"{f.corner / f.named:.3g}x" if f.named else "-",
             "binds": "yes" if f.binding else "no (kept)"} for f in mc.fields]
    return Table(
        title=f"minimum card: {m:.4g} x {mc.named.card.name} (uniform multiple), and the "
              "cheapest corner (each field at its least value with the others at theirs)",
        rows=rows, columns=[Column("field", "field", align="left"),
                            Column("unit", "unit", align="left"),
                            Column("named", mc.named.card.name, ".4g"),
                            Column("multiple", f"x {m:.4g}", ".4g"),
                            Column("corner", "corner", ".4g"), Column("ratio", "corner/named"),
                            Column("binds", "binds", align="left")])


def card_notes(mc, reach, saved: str | None) -> list[str]:
    notes: list[str] = []
    if mc.corner is not None:
        st = mc.state_at_corner
        notes.append(f"multiple and corner: bisection with the evaluator as the oracle "
                     f"({mc.evaluations} evaluations); the multiple scales every field but "
                     "the core count (cores x per-core bandwidth and the clock scale through "
                     "the per-core figures); at the corner: step "
                     f"{st.step_time_s:.4g} s, optimizer exposed {st.optimizer_exposed_s:.3g} s")
        if saved:
            notes.append(f"saved the corner as a catalog entry to {saved} (use it with "
                         "--catalog-dir DIR --smartnic NAME)")
        else:
            notes.append("--save-card FILE writes the corner as a catalog entry "
                         "(--save-scale 1.02 for a margin)")
    if reach is not None:
        notes.append(f"no card meets the goal: {reach.binding}")
        if reach.changes:
            notes.append("reachable with: " + "; or ".join(reach.changes))
        else:
            notes.append("no change of the GPU-host link or micro-batch tried makes it "
                         "reachable")
    return notes
