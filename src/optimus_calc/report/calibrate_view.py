"""Document for `optimus-calc calibrate`: each run's error before and after, leave-one-out."""

from __future__ import annotations

from optimus_calc.report.common import pct
from optimus_calc.report.document import Column, Document, Table


def calibrate_document(cal, runs_file: str, output: str) -> Document:
    """``cal``: an analyses.calibrate.Calibration."""
    import os

    from optimus_calc.analyses.calibrate_fit import CANDIDATES
    runs_file, output = os.path.basename(runs_file), os.path.basename(output)
    desc = {p.name: p.what for p in CANDIDATES}
    rows = [{"row": r.row, "run": r.label, "framework": r.framework or "",
             "figure": r.figure, "measured": r.measured, "error_before": b, "error_after": a,
             "error_loo": loo}
            for r, b, a, loo in zip(cal.runs, cal.before, cal.after, cal.loo)]
    params = [{"parameter": k, "what": desc[k], "default": cal.defaults[k], "fitted": v,
               "change": v / cal.defaults[k] - 1 if cal.defaults[k] else None}
              for k, v in cal.fitted.items()]
    n = len(cal.runs)
    notes = [f"fitted {len(cal.fitted)} parameter(s) of {len(CANDIDATES)} on {n} run(s) of "
             f"{cal.gpu}: {', '.join(cal.fitted) or 'none'}"]
    notes += [f"{k} ends on the {side} bound of its range ({cal.fitted[k]:.4g}): the runs ask "
              "for more than it may move; the 'after' column is what is left"
              for k, side in cal.on_bound.items()]
    notes += [f"kept at its default: {k} ({desc[k]}): {why}"
              for k, why in cal.kept_at_default.items()]
    notes += [f"disagreeing runs: {d}" for d in cal.disagreements]
    notes += other_kernel_notes(cal.runs)
    # a run on a framework whose rules refuse its layout: the row or the rule is wrong
    notes += [f"row {r.row}: {why}" for r in cal.runs
              if "rules reject" in (why := getattr(getattr(r.inputs, "framework", None), "why",
                                                   "") or "")]
    rng = cal.loo_range
    if rng is not None:
        errs = [abs(e) for e in cal.loo if e is not None]
        notes.append(f"leave-one-out: mean |error| {sum(errs) / len(errs):.1%}; as step-time "
                     f"error {rng[0]:+.1%} / {rng[1]:+.1%}, the error range of figures on "
                     f"{cal.gpu} with --profile {output}")
    elif any(e is not None for e in cal.loo):  # every run measured GPU memory
        errs = [abs(e) for e in cal.loo if e is not None]
        notes.append(f"leave-one-out: mean |error| {sum(errs) / len(errs):.1%}, GPU memory "
                     "runs only: no step-time error range (figures keep the public one)")
    else:
        notes.append(f"{'one run' if len(cal.runs) == 1 else 'one layout'}: no leave-one-out "
                     "error (figures keep the public error range)")
    data = {"runs_file": runs_file, "profile": output, "gpu": cal.gpu, "runs": rows,
            "fitted": cal.fitted, "defaults": {k: cal.defaults[k] for k in cal.fitted},
            "on_bound": cal.on_bound,
            "kept_at_default": cal.kept_at_default, "disagreements": cal.disagreements,
            "loo_error_low": rng[0] if rng else None, "loo_error_high": rng[1] if rng else None}
    csv_rows = [{"run": r["run"], "framework": r["framework"], "figure": r["figure"],
                 "value": r["measured"], "error_before_pct": pct(r["error_before"]),
                 "error_after_pct": pct(r["error_after"]), "error_loo_pct": pct(r["error_loo"])}
                for r in rows]
    return Document(
        title=f"calibrate: {n} run(s) from {runs_file} -> {output}", data=data,
        csv=Table(title="", rows=csv_rows, columns=[Column(k, k) for k in csv_rows[0]]),
        tables=[Table(title="runs: prediction / measured - 1", rows=rows, columns=[
                    Column("row", "row"), Column("run", "run", align="left"),
                    Column("figure", "measured", align="left"),
                    Column("measured", "value", ".4g"),
                    Column("error_before", "before", "+.1%"),
                    Column("error_after", "after", "+.1%"),
                    Column("error_loo", "left out", "+.1%")]),
                Table(title="fitted parameters", rows=params, columns=[
                    Column("parameter", "parameter", align="left"),
                    Column("what", "", align="left"), Column("default", "default", ".4g"),
                    Column("fitted", "fitted", ".4g"), Column("change", "change", "+.1%")])],
        notes=notes)


def other_kernel_notes(runs) -> list[str]:
    """A note per fused attention kernel the runs time that is not their GPU's default (named
    with --attention-kernel, or their framework profile's: the DeepSpeed engine's
    FlashAttention-2, evaluate/efficiency.kernel_of): a profile carries the default kernel's
    efficiency only (flash_attention_eta)."""
    from optimus_calc.evaluate.efficiency import kernel_of
    from optimus_calc.frameworks.registry import named_kernel
    named: dict[tuple[str, str, str, str], int] = {}
    for r in runs:
        gpu, tr = r.inputs.hw.gpu, r.inputs.training
        k = named_kernel(tr)
        how = f"name --attention-kernel {k}"
        if not k and tr.flash_attention:
            k = kernel_of(gpu, None, getattr(r.inputs, "assumptions", None))
            how = f"time {k} under their framework's profile"
        if k and k != gpu.attention_kernel:
            key = (k, gpu.name, gpu.attention_kernel, how)
            named[key] = named.get(key, 0) + 1
    return [f"{n} run(s) {how}, not {g}'s default ({d}): a profile carries "
            f"the default kernel's efficiency only (flash_attention_eta), so their attention "
            f"time is fitted through the other parameters, and a --attention-kernel {k} "
            f"prediction keeps the catalog's {k} efficiency"
            for (k, g, d, how), n in named.items()]
