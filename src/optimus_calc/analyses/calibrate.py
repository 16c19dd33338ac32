"""Fit named efficiency parameters to a user's measured runs (``optimus-calc calibrate``): the
candidates, the prediction and the fit are in analyses/calibrate_fit.py (its docstring says how
parameters are chosen); here, what the runs must satisfy, the leave-one-out error and the
:class:`Calibration` the report and the profile are made from (analyses/calibrate_io.py)."""

from __future__ import annotations

from dataclasses import field

import numpy as np

from optimus_calc.analyses.calibrate_fit import (CANDIDATES, FIXED_HINT, PRIOR_WEIGHT, Run,
                                                 RunSet, defaults_of, entry_names, fit, jacobian,
                                                 predict, select)
from optimus_calc.errors import InputError
from optimus_calc.record import record

# Leave-one-out by the linearised hat-matrix residual r_i / (1 - h_ii) of the fitted problem
# (Cook and Weisberg 1982, "Residuals and Influence in Regression" section 2.2; exact for linear
# least squares, ridge included); a run whose leverage h_ii exceeds this carries more than half
# of some parameter's determination, where the efficiency curves' non-linearity makes the
# linearised estimate poor: it is refitted without it instead (warm-started from the full fit).
# Assumed. Few runs fitting several parameters are all refitted; of 50 runs, a handful.
MAX_LINEAR_LEVERAGE = 0.5

# A fit that ends on a parameter bound with a run still more than 100% off (prediction over
# measured above 2, or below 1/2) describes runs unlike the model: no profile is written.
MAX_PINNED_RESIDUAL = 1.0
# Runs of one layout whose measurements differ more than this factor are reported (assumed: run-
# to-run noise of one layout is a few percent; 1.5x is a different configuration or a typo).
DISAGREE_FACTOR = 1.5


def impossible(rs: RunSet, defaults: dict[str, float], source: str = "") -> None:
    """Refuse a run the hardware cannot produce, naming its row and the physical reason: a time
    or throughput above what the GPUs' dense peak allows (the MFU it implies, model FLOPs over
    peak x GPUs x measured step time, above 100%), or a GPU memory above the GPU's capacity or
    below the weights the GPU holds (memory.weights_bytes of the most loaded stage)."""
    from optimus_calc.evaluate.memory import estimate_memory
    for r in rs.reps:
        inp = r.inputs
        line = "line" if source.lower().endswith((".yaml", ".yml")) else "row"
        where = f"runs file {source} {line} {r.row}, column measured_{r.figure}"
        if r.figure == "gpu_memory_bytes":
            cap = inp.hw.gpu.memory_GB * 1e9
            if r.measured > cap:
                raise InputError(f"{where}: {r.measured:.4g} bytes is more than the "
                                 f"{inp.hw.gpu.name} holds ({cap:.4g} bytes)")
            weights = estimate_memory(inp.model, inp.hw, inp.layout, inp.training,
                                      inp.assumptions).worst.weights_bytes
            if r.measured < weights:
                raise InputError(f"{where}: {r.measured:.4g} bytes is less than the weights "
                                 f"each GPU holds in this layout ({weights:.4g} bytes)")
            continue
        pred, mfu = predict(r, defaults), _figure(r, "mfu")
        implied = mfu * (r.measured / pred if r.figure == "tokens_per_s" else pred / r.measured)
        # MFU is against the BF16 peak; FP8 and NVFP4 GEMMs may run up to their own peak
        bound = _quantized_peak_ratio(inp)
        if implied > bound:
            above = ("above 100%" if bound == 1 else f"above the {bound:.3g} its "
                     f"{inp.training.gemm_recipe.peak.upper()} peak allows")
            raise InputError(f"{where}: {r.measured:.4g} is faster than the GPUs' dense peak "
                             f"allows (it implies an MFU of {implied:.3g}, {above})")


def _quantized_peak_ratio(inp) -> float:
    """The quantized GEMMs' peak over the BF16 peak (1 without FP8 or NVFP4)."""
    from optimus_calc.evaluate.fp8 import is_fp8
    tr, peaks = inp.training, inp.hw.gpu.peak_TFLOPS
    if not is_fp8(tr):
        return 1.0
    return max(1.0, peaks.flops_per_s(tr.gemm_recipe.peak) / peaks.flops_per_s("bf16"))


def _figure(run: Run, figure: str) -> float:
    from optimus_calc.evaluate.step import step_figure
    return step_figure(run.inputs, run.inputs.model.name, figure)


def disagreements(rs: RunSet) -> list[str]:
    """One line per layout given more than once with measurements more than
    :data:`DISAGREE_FACTOR` apart: the rows, and how far apart."""
    out = []
    for g in rs.groups():
        vals = [rs.runs[k].measured for k in g]
        if max(vals) > DISAGREE_FACTOR * min(vals):
            rows = ", ".join(str(rs.runs[k].row) for k in g)
            out.append(f"rows {rows} describe the same layout ({rs.runs[g[0]].label}) but "
                       f"measure {min(vals):.4g} to {max(vals):.4g} ({max(vals) / min(vals):.3g}x "
                       "apart): the fit takes their geometric mean")
    return out


def _off(e: float) -> float:
    """How far off a run is, 1 or more either way (prediction / measured = 1 + e, which rounds
    to 0 when the prediction is below 1e-16 of the measurement: infinitely far)."""
    ratio = 1 + e
    return max(ratio, 1 / ratio) if ratio > 0 else float("inf")


def on_bound(values: dict[str, float], names) -> dict[str, str]:
    """The fitted parameters the fit left on a bound of their range: name -> "lower"/"upper"."""
    by = {p.name: p for p in CANDIDATES}
    return {n: "lower" if values[n] <= by[n].lo * (1 + 1e-9) else "upper" for n in names
            if values[n] <= by[n].lo * (1 + 1e-9) or values[n] >= by[n].hi * (1 - 1e-9)}


def pinned(values: dict[str, float], names: list[str], after: list[float]) -> str:
    """Why the fit cannot be a profile ("" when it can): a parameter on a bound while a run is
    still more than :data:`MAX_PINNED_RESIDUAL` off."""
    worst = max(after, key=_off)
    if _off(worst) <= 1 + MAX_PINNED_RESIDUAL:
        return ""
    at = [f"{n} = {values[n]:.4g}" for n in on_bound(values, names)]
    if not at:
        return ""
    return (f"the fit ends on the bound of {', '.join(at)} with a run's prediction still "
            f"{f'{1 + worst:.3g}' if 1 + worst > 0 else 'below 1e-15'}x its measurement: "
            "the runs are not like the model (check the layout columns and the units of the "
            "measurements); no profile written")


def leave_one_out(rs: RunSet, defaults: dict[str, float], values: dict[str, float],
                  names: list[str]) -> list[float]:
    """Each run's leave-one-out error (prediction / measured - 1 with the parameters refitted
    without it and every other run of its layout: a copy left in would predict it), by the
    linearised hat-matrix residual r_i / (1 - h_ii) of the fitted problem
    (:data:`MAX_LINEAR_LEVERAGE`): H = J (J'J + w I)^-1 J' over the parameters not on a bound,
    J the Jacobian of the log predictions at the fit, w the prior weight. A run of higher
    leverage is refitted without it, warm-started at ``values`` with that Jacobian less the
    run's row."""
    pred = rs.log_preds(values)
    resid = pred - rs.log_meas
    by = {p.name: p for p in CANDIDATES}
    free = [j for j, n in enumerate(names) if by[n].lo < values[n] < by[n].hi]
    lev = np.zeros(len(rs))
    if free:
        jac_all = jacobian(rs, values, names, pred)
        jac = jac_all[:, free]
        a = jac.T @ jac + PRIOR_WEIGHT * np.eye(len(free))
        lev = np.einsum("ij,ij->i", jac @ np.linalg.inv(a), jac)
    loo, refits = [], {}
    for i, r in enumerate(rs.runs):
        g = np.flatnonzero(rs.inv == rs.inv[i])   # the run's layout, all its copies
        if lev[i] * len(g) <= MAX_LINEAR_LEVERAGE:
            # (I - H_GG)^-1 r_G with H_GG = h 1 1' (identical rows): r_i + h / (1 - n h) sum r_G
            loo.append(float(np.expm1(resid[i] + lev[i] / (1 - lev[i] * len(g))
                                      * resid[g].sum())))
            continue
        if int(rs.inv[i]) not in refits:   # the fit's Jacobian less the layout's rows starts it
            refits[int(rs.inv[i])] = fit(rs.without(g), defaults, names, init=values,
                                         jac0=np.delete(jac_all, g, axis=0))
        loo.append(predict(r, refits[int(rs.inv[i])]) / r.measured - 1)
    return loo


@record
class Calibration:
    runs: list[Run]
    defaults: dict[str, float]
    fitted: dict[str, float]      # only the kept parameters
    kept_at_default: dict[str, str]   # name -> why
    before: list[float]           # prediction / measured - 1 per run
    after: list[float]
    loo: list[float | None]       # leave-one-out error per run (None with one layout)
    gpu: str
    link: str = ""                # the runs' scale-up link ("" when they use several)
    nic: str = ""                 # the runs' NIC ("" when they use several)
    disagreements: list[str] = field(default_factory=list)  # same layout, measures far apart

    @property
    def on_bound(self) -> dict[str, str]:
        """The fitted parameters left on a bound (:func:`on_bound`): the runs ask for more."""
        return on_bound(self.fitted, list(self.fitted))

    @property
    def loo_range(self) -> tuple[float, float] | None:
        """The leave-one-out errors of the time and throughput runs in the step-time sense
        (predicted / true step time - 1, regimes.py): the profile's error range."""
        errs = [1 / (1 + e) - 1 if r.figure == "tokens_per_s" else e
                for r, e in zip(self.runs, self.loo)
                if e is not None and r.figure != "gpu_memory_bytes"]
        return (min(errs), max(errs)) if errs else None


def calibrate(runs: list[Run], source: str = "") -> Calibration:
    """Select the determinable parameters, fit them, and compute each run's leave-one-out
    error (:func:`leave_one_out`). Runs of one layout are evaluated once (:class:`RunSet`)."""
    from optimus_calc.profile import loo_band_problem
    used = entry_names(runs)
    gpus = sorted(used["gpu"])
    if len(gpus) > 1:
        raise InputError(f"calibrate fits one GPU at a time; the runs use {', '.join(gpus)}: "
                         "give one file per GPU")
    rs = RunSet(runs)
    defaults = defaults_of(runs)
    impossible(rs, defaults, source)
    several = {p.name: f"the runs use several {p.where}s ({', '.join(sorted(used[p.where]))}); "
               "give one file per node type to fit it" for p in CANDIDATES
               if p.where in ("link", "nic") and len(used[p.where]) > 1}
    names = [p.name for p in CANDIDATES if p.name not in several]
    base = rs.log_preds(defaults)
    jac = jacobian(rs, defaults, names, base)
    by = {p.name: p for p in CANDIDATES}
    up_only = tuple(j for j, n in enumerate(names) if by[n].scale and defaults[n] == 0)
    room = np.array([[by[n].to_x(by[n].lo if k == 0 else by[n].hi) - by[n].to_x(defaults[n])
                      for n in names] for k in (0, 1)])
    # distinct layouts: copies count once, and so does one layout's time given as tokens/s and
    # as step time (one fact); its memory is another
    layouts = len({(r.figure == "gpu_memory_bytes", repr(r.inputs)) for r in runs})
    kept, why = select(jac, layouts, base - rs.log_meas, up_only, room)
    fixed = {p.name for p in CANDIDATES if p.scale}
    why_named = {**{names[j]: w + (FIXED_HINT if names[j] in fixed and "separable" in w else "")
                    for j, w in why.items()}, **several}
    fit_names = [names[j] for j in kept]
    values = fit(rs, defaults, fit_names, jac0=jac[:, kept])
    meas = np.array([r.measured for r in runs])
    before = list(np.exp(base) / meas - 1)
    after = list(np.expm1(rs.log_preds(values) - rs.log_meas))
    problem = pinned(values, fit_names, after)
    if problem:
        raise InputError(f"calibrate: {problem}")
    loo: list[float | None] = [None] * len(runs)
    if len(rs.reps) > 1 and fit_names:
        loo = list(leave_one_out(rs, defaults, values, fit_names))
    elif len(rs.reps) > 1:
        loo = list(after)
    cal = Calibration(runs, defaults, {n: values[n] for n in fit_names},
                      {p.name: why_named[p.name] for p in CANDIDATES if p.name in why_named},
                      [float(e) for e in before], [float(e) for e in after], loo, gpus[0],
                      next(iter(used["link"])) if len(used["link"]) == 1 else "",
                      next(iter(used["nic"])) if len(used["nic"]) == 1 else "",
                      disagreements(rs))
    rng = cal.loo_range
    if rng is not None and loo_band_problem(*rng):
        raise InputError(f"calibrate: {loo_band_problem(*rng)}: the runs are not like the "
                         "model; no profile written")
    return cal
