"""Document for `optimus-calc validate`."""

from __future__ import annotations

from dataclasses import asdict

from optimus_calc.report.document import Column, Document, Table


def validate_document(cases) -> Document:
    """``cases``: the :func:`optimus_calc.validate.run_all` results."""
    from optimus_calc.validate import by_regime, summary
    from optimus_calc.report.common import cite
    rows = [{**asdict(c), "regime": str(c.regime) if c.regime else "", "source": cite(c.source),
             "error": c.error, "ok": c.ok} for c in cases]
    regimes = by_regime(cases)
    stats = summary(cases)
    n_ok = stats["ok"]
    table = Table(title="", rows=rows, columns=[
        Column("section", "§"), Column("case", "case", align="left"),
        Column("published", "published", ".4g"), Column("predicted", "predicted", ".4g"),
        Column("unit", "unit", align="left"), Column("error", "error", "+.1%"),
        Column("tolerance", "tolerance", ".0%"), Column("ok", "ok")])
    notes = [f"{n_ok} of {len(cases)} cases within tolerance; mean |error| "
             f"{stats['mean_abs_error']:.1%}, largest {stats['max_abs_error']:.1%}",
             "sections: 1 ZeRO model states, 2 OptimusNIC example, 3 Korthikanti activations, "
             "4 Narayanan throughput (A100, GEMM-efficiency curve), 5 optimizer step off the GPU, "
             "6 nccl-tests all-reduce, 7 the offloaded step (optimusnic.md Tables 3 and 4), "
             "9 Megatron-LM H100 weak scaling"]
    notes += [f"{c.case}: {c.note}" for c in cases if c.note]
    notes.append("per regime (GPU family x framework x offload x model class): the error "
                 "ranges `step`, `plan` and `sweep` show for layouts like these (a throughput "
                 "error e is a step-time error 1 / (1 + e) - 1)")
    per_regime = Table(title="errors per regime", rows=regimes, columns=[
        Column("regime", "regime", align="left"), Column("kind", "figure", align="left"),
        Column("cases", "cases"), Column("mean_abs_error", "mean |error|", ".1%"),
        Column("min_error", "lowest", "+.1%"), Column("max_error", "highest", "+.1%")])
    return Document(title="validate: published vs predicted",
                    data={"cases": rows, **stats, "regimes": regimes},
                    tables=[table, per_regime], notes=notes,
                    csv=Table(title="", rows=rows, columns=[Column(k, k) for k in rows[0]]))
