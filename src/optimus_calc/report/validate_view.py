"""Document for `optimus-calc validate`."""

from __future__ import annotations

from dataclasses import fields

from optimus_calc.report.document import Column, Document, Table


def validate_document(cases, missing=()) -> Document:
    """``cases``: the :func:`optimus_calc.validate.run_all` results; ``missing``: the public
    rows the tool cannot express (:func:`optimus_calc.validate.not_expressed`)."""
    from optimus_calc.validate_table import NOT_REFIT, by_regime, overall, summary
    from optimus_calc.report.common import cite
    # the case's own fields, not asdict: it would deep-copy the fit and host callables'
    # captured setups before dropping them
    rows = [{**{f.name: getattr(c, f.name) for f in fields(c) if f.name not in ("fit", "host")},
             "regime": str(c.regime) if c.regime else "", "source": cite(c.source),
             "error": c.error, "loso_error": c.loso_error, "ok": c.ok} for c in cases]
    regimes = by_regime(cases)
    stats = summary(cases)
    cv = overall(cases)
    n_ok = stats["ok"]
    table = Table(title="", rows=rows, columns=[
        Column("section", "§"), Column("case", "case", align="left"),
        Column("published", "published", ".4g"), Column("predicted", "predicted", ".4g"),
        Column("unit", "unit", align="left"), Column("error", "error", "+.1%"),
        Column("loso_error", "LOSO error", "+.1%"),
        Column("tolerance", "tolerance", ".0%"), Column("ok", "ok")])
    notes = [f"{n_ok} of {len(cases)} cases within tolerance; mean |error| "
             f"{stats['mean_abs_error']:.1%}, largest {stats['max_abs_error']:.1%}",
             "sections: 1 ZeRO model states, 2 OptimusNIC example, 3 Korthikanti activations, "
             "4 Narayanan throughput (A100, GEMM-efficiency curve), 5 optimizer step off the GPU, "
             "6 nccl-tests all-reduce, 7 the offloaded step (optimusnic.md Tables 3 and 4), "
             "9 Megatron-LM H100 weak scaling, 10 torchtitan FSDP 8 -> 128 ratio, 12 every "
             "published end-to-end row (public_cases.py)",
             f"{len(cases)} cases and {len(missing)} public rows listed, not scored (not "
             f"expressible, or a regression by its table; below): {len(cases) + len(missing)} "
             "public rows in all",
             f"step time and throughput, {cv['rows']} rows: mean |error| in-sample "
             f"{cv['mean_abs_error']:.1%}, leave-one-source-out {cv['loso_mean_abs_error']:.1%} "
             f"({cv['refitted']} rows refitted without their source, the public rows priced "
             "by the step model at the refit, sections 4 and 9 by their affine form; the "
             "others' LOSO error is their in-sample error)",
             "not refitted: " + "; ".join(NOT_REFIT)]
    notes += [f"{c.case}: {c.note}" for c in cases if c.note]
    notes.append("per regime (GPU family x framework x offload x model class x precision x "
                 "sequence band x scale band): the error ranges `step`, `plan` and `sweep` "
                 "show for layouts like these come from the leave-one-source-out residuals (a "
                 "throughput error e is a step-time error 1 / (1 + e) - 1)")
    per_regime = Table(title="errors per regime", rows=regimes, columns=[
        Column("regime", "regime", align="left"), Column("kind", "figure", align="left"),
        Column("cases", "cases"), Column("mean_abs_error", "in-sample mean |error|", ".1%"),
        Column("loso_mean_abs_error", "LOSO mean |error|", ".1%"),
        Column("min_error", "in-sample lowest", "+.1%"),
        Column("max_error", "in-sample highest", "+.1%")])
    missing_rows = [{"source": cite(s), "row": r, "why": w} for s, r, w in missing]
    not_expr = Table(title="public rows listed, not scored (the reason)", rows=missing_rows,
                     columns=[
        Column("row", "row", align="left"), Column("why", "why", align="left"),
        Column("source", "source", align="left")])
    return Document(title="validate: published vs predicted",
                    data={"cases": rows, **stats, "cross_validated": cv, "regimes": regimes,
                          "not_expressed": missing_rows},
                    tables=[table, per_regime] + ([not_expr] if missing_rows else []),
                    notes=notes,
                    csv=Table(title="", rows=rows, columns=[Column(k, k) for k in rows[0]]))
