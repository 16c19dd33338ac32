"""Fit named efficiency parameters to a user's measured runs (``optimus-calc calibrate``).

Every prediction is the evaluator's (evaluate/step.py ``step_of``) with the candidate parameter
values put into the GPU entry, the node's scale-up link and NIC entries, or the assumptions;
nothing here computes physics. The fit is a bounded Gauss-Newton on log prediction - log
measured over each parameter's coordinate (an efficiency's log; a fixed cost, whose default 0
has no log, over its plausible size :attr:`Param.scale`), with a weak pull towards the defaults
so a flat direction stays where it was. Which ones: :func:`select`.

Identifiability: a parameter is fitted only when (a) some run's prediction moves with it
(elasticity |d log pred / d x| >= :data:`MIN_ELASTICITY`: a 10% change of an efficiency moves
some run by 0.2%, a fixed cost of its scale by 2%), (b) its column of the Jacobian is
not (nearly) a combination of the columns already kept (smallest / largest singular value of the
column-normalised Jacobian >= :data:`MIN_SINGULAR_RATIO`), and (c) fewer parameters than runs are
fitted (n runs fit at most n - 1, so that every leave-one-out subset still determines them; one
run fits one). A fixed cost passes (b) only when the runs differ in work per step relative to
its count (a per-step cost: tokens per step; a per-layer cost: layers x micro-batches against
tokens), else it is collinear with the efficiencies. The others stay at their defaults, and the
report says why."""

from __future__ import annotations

import csv
import io
import math
from dataclasses import replace

import numpy as np

from optimus_calc.errors import InputError
from optimus_calc.record import record

MEASURES = {"measured_step_time_s": "step_time_s", "measured_tokens_per_s": "tokens_per_s",
            "measured_gpu_memory_bytes": "gpu_memory_bytes"}
MIN_ELASTICITY = 0.02       # a 10% parameter change moves some run by at least 0.2%
MIN_SINGULAR_RATIO = 0.05   # columns closer to collinear than this are not separable
PRIOR_WEIGHT = 1e-3         # weak pull of each log-parameter towards its default
MAX_ROWS = 1000
FIXED_PREFERENCE = 0.5      # a fixed cost goes before an efficiency if it leaves < half (select)
TIE_RESIDUAL = 1e-6         # squared log residual per run (0.1% rms) within which fits tie


@record
class Param:
    name: str
    where: str        # "gpu" (catalog GPU field), "link" (the node's intra_link), "nic" (the
                      # node's compute NIC) or "assumptions"
    lo: float
    hi: float
    what: str
    scale: float = 0.0  # 0: a factor, fitted in log space; > 0: an additive cost (default 0
                        # allowed), fitted in units of this plausible size, s

    def to_x(self, value: float) -> float:  # the fit's coordinate: log factor, cost / scale
        return math.log(value) if not self.scale else value / self.scale

    def from_x(self, x: float) -> float:
        return float(math.exp(x)) if not self.scale else float(x) * self.scale

# the note added when the runs cannot tell a fixed cost from the efficiencies
FIXED_HINT = ("; a fixed cost needs runs that differ in work per step (global batch, layers x "
              "micro-batches) relative to its count")


# In priority order (ties of select). The fixed costs' scales are plausible sizes (assumed): a
# second of host work per step; a millisecond per layer and micro-batch (~100 kernel launches).
CANDIDATES = (
    Param("gemm_eta_max", "gpu", 0.05, 1.0, "GEMM-efficiency curve scale of the GPU"),
    Param("step_fixed_s", "assumptions", 0.0, 60.0,
          "framework fixed time per optimizer step, s", scale=1.0),
    Param("flash_attention_eta", "gpu", 0.05, 1.0, "FlashAttention kernel efficiency"),
    Param("layer_fixed_s", "assumptions", 0.0, 0.1,
          "framework fixed time per layer per micro-batch, s", scale=1e-3),
    Param("attention_eta", "gpu", 0.02, 1.0, "unfused attention-core efficiency"),
    Param("gemm_half_GFLOP", "gpu", 0.01, 1e4, "GEMM size at half efficiency, GFLOP"),
    Param("link_efficiency", "link", 0.05, 1.0,
          "achievable fraction of the node's scale-up link (intra_link) bandwidth"),
    Param("nic_efficiency", "nic", 0.05, 1.0, "achievable fraction of the NIC's line rate"),
    Param("hbm_efficiency", "assumptions", 0.05, 1.0, "achievable fraction of HBM bandwidth"),
    Param("cuda_context_GB", "assumptions", 0.01, 100.0, "CUDA context and workspaces, GB"),
    Param("fragmentation", "assumptions", 0.001, 1.0, "allocator fragmentation fraction"),
)


@record
class Run:
    row: int            # line of the runs file (header = 1)
    inputs: object      # inputs.Inputs
    figure: str         # step_time_s, tokens_per_s or gpu_memory_bytes
    measured: float
    framework: str      # "" when the column is absent
    label: str


def read_rows(text: str, path: str) -> list[dict[str, str]]:
    """The runs CSV as rows of column -> text (empty cells dropped)."""
    reader = csv.DictReader(io.StringIO(text))
    if not reader.fieldnames:
        raise InputError(f"runs file {path}: empty (expected a header row of option names)")
    names = [str(n).strip() for n in reader.fieldnames]
    if len(set(names)) != len(names):
        raise InputError(f"runs file {path}: a column name appears twice")
    rows = []
    for i, raw in enumerate(reader):
        if i >= MAX_ROWS:
            raise InputError(f"runs file {path}: more than {MAX_ROWS} runs")
        if None in raw:
            raise InputError(f"runs file {path} row {i + 2}: more cells than columns")
        rows.append({str(k).strip(): str(v).strip() for k, v in raw.items()
                     if v is not None and str(v).strip()})
    if not rows:
        raise InputError(f"runs file {path}: no runs under the header")
    return rows


def measured_of(row: dict[str, str], where: str) -> tuple[str, float]:
    """The one measured column of a row: (figure, value)."""
    given = [k for k in MEASURES if k in row]
    if len(given) != 1:
        raise InputError(f"{where}: give exactly one of {', '.join(MEASURES)} "
                         f"({'none' if not given else ', '.join(given)} given)")
    text = row[given[0]]
    try:
        value = float(text)
    except ValueError:
        raise InputError(f"{where}, column {given[0]}: {text[:40]!r} is not a number") from None
    if not math.isfinite(value) or value <= 0:
        raise InputError(f"{where}, column {given[0]}: {text[:40]!r} must be a positive number")
    return MEASURES[given[0]], value


def predict(run: Run, values: dict[str, float]) -> float:
    """The evaluator's figure for ``run`` with ``values`` put in place (GPU fields, assumptions)."""
    from optimus_calc.evaluate.step import step_figure
    inp = run.inputs
    gpu_upd = {p.name: values[p.name] for p in CANDIDATES if p.where == "gpu" and p.name in values}
    asm_upd = {p.name: values[p.name] for p in CANDIDATES
               if p.where == "assumptions" and p.name in values}
    hw = replace(inp.hw, gpu=inp.hw.gpu.model_copy(update=gpu_upd)) if gpu_upd else inp.hw
    if "link_efficiency" in values:
        hw = replace(hw, intra_link=hw.intra_link.model_copy(
            update={"efficiency": values["link_efficiency"]}))
    if "nic_efficiency" in values:
        hw = replace(hw, nic=hw.nic.model_copy(update={"efficiency": values["nic_efficiency"]}))
    asm = inp.assumptions.model_copy(update=asm_upd) if asm_upd else inp.assumptions
    return step_figure(replace(inp, hw=hw, assumptions=asm), inp.model.name, run.figure)


def _holder(inp, where: str):
    """The object holding a candidate of kind ``where`` for one run's inputs."""
    return {"gpu": inp.hw.gpu, "link": inp.hw.intra_link, "nic": inp.hw.nic,
            "assumptions": inp.assumptions}[where]


def field_of(p: Param) -> str:
    """The catalog / assumptions field a candidate sets (link and NIC: ``efficiency``)."""
    return "efficiency" if p.where in ("link", "nic") else p.name


def defaults_of(runs: list[Run]) -> dict[str, float]:
    """Every candidate's value today (the GPU, link and NIC entries and the assumptions of the
    first run)."""
    inp = runs[0].inputs
    return {p.name: float(getattr(_holder(inp, p.where), field_of(p))) for p in CANDIDATES}


def entry_names(runs: list[Run]) -> dict[str, set[str]]:
    """The catalog names of the GPU, scale-up link and NIC of the runs."""
    return {w: {_holder(r.inputs, w).name for r in runs} for w in ("gpu", "link", "nic")}


def _log_preds(runs, values) -> np.ndarray:
    return np.log([predict(r, values) for r in runs])


def jacobian(runs: list[Run], values: dict[str, float], names: list[str],
             base: np.ndarray | None = None, step: float = 0.02) -> np.ndarray:
    """d log(prediction) / d x(parameter) (x: log of a factor, a cost over its scale),
    one-sided differences stepping inside the bounds."""
    base = _log_preds(runs, values) if base is None else base
    bounds = {p.name: p for p in CANDIDATES}
    cols = []
    for n in names:
        p = bounds[n]
        x = p.to_x(values[n])
        h = step if p.from_x(x + step) <= p.hi else -step
        cols.append((_log_preds(runs, {**values, n: p.from_x(x + h)}) - base) / h)
    return np.array(cols).T.reshape(len(runs), len(names))


def select(jac: np.ndarray, n_runs: int, resid: np.ndarray | None = None,
           up_only: tuple[int, ...] = ()) -> tuple[list[int], dict[int, str]]:
    """Which candidate columns the runs determine (module docstring): kept indices, and the
    reason for each one left at its default. Without ``resid`` the columns are taken in order;
    with the runs' log residuals (prediction over measured) each round takes, among the
    determinable columns, the one whose linearised fit leaves the least residual (the earlier
    on a tie), so a fixed cost does not take the place of the efficiency the runs point at.
    ``up_only``: columns at a lower bound of 0 (fixed costs), which cannot move down."""
    limit = max(1, n_runs - 1)
    kept: list[int] = []
    why: dict[int, str] = {}
    open_ = [j for j in range(jac.shape[1]) if np.max(np.abs(jac[:, j])) >= MIN_ELASTICITY]
    why.update({j: f"the runs barely depend on it (elasticity < {MIN_ELASTICITY:g})"
                for j in range(jac.shape[1]) if j not in open_})
    while open_:
        separable = []
        for j in open_:
            sub = jac[:, kept + [j]]
            sv = np.linalg.svd(sub / np.linalg.norm(sub, axis=0), compute_uv=False)
            if sv[-1] / sv[0] < MIN_SINGULAR_RATIO:
                why[j] = "not separable from the parameters already fitted with these runs"
            else:
                separable.append(j)
        open_ = separable
        if not open_:
            break
        if len(kept) >= limit:
            for j in open_:
                why[j] = (f"{n_runs} run{'s' if n_runs != 1 else ''} determine at most {limit} "
                          "parameter(s) with one run left out")
            break
        pick = open_[0] if resid is None else _best(jac, kept, open_, resid, up_only)
        kept.append(pick)
        open_.remove(pick)
    return kept, why


def _best(jac, kept, open_, resid, up_only) -> int:
    """The column to fit next: the one leaving the least linearised residual; a fixed cost only
    when it leaves < :data:`FIXED_PREFERENCE` x the best efficiency's (a constant absorbs any
    gap, an efficiency carries to other layouts)."""
    left = {j: _left(jac, kept + [j], resid, up_only) for j in open_}
    tie = TIE_RESIDUAL * len(resid)   # within it, the earlier candidate (CANDIDATES order)

    def first(js):
        return min(j for j in js if left[j] <= min(left[k] for k in js) + tie) if js else None
    eff = [j for j in open_ if j not in up_only]
    best_eff, best = first(eff), first(open_)
    if best_eff is None or best == best_eff or left[best] < FIXED_PREFERENCE * left[best_eff]:
        return best
    return best_eff


def _left(jac: np.ndarray, cols: list[int], resid: np.ndarray, up_only) -> float:
    """The residual a linearised least-squares step on ``cols`` leaves (no step when it would
    push a fixed cost below 0)."""
    delta = np.linalg.lstsq(jac[:, cols], -resid, rcond=None)[0]
    if any(d < 0 for c, d in zip(cols, delta) if c in up_only):
        return float(resid @ resid)
    left = resid + jac[:, cols] @ delta
    return float(left @ left)


def fit(runs: list[Run], start: dict[str, float], names: list[str],
        iterations: int = 12) -> dict[str, float]:
    """Bounded Gauss-Newton on ``names`` (each in its coordinate, Param.to_x); the other values
    stay as in ``start``."""
    if not names:
        return dict(start)
    ps = [next(p for p in CANDIDATES if p.name == n) for n in names]
    lo, hi = np.array([p.to_x(p.lo) for p in ps]), np.array([p.to_x(p.hi) for p in ps])
    x0 = np.array([p.to_x(start[p.name]) for p in ps])
    meas = np.log([r.measured for r in runs])

    def values_at(x):
        return {**start, **{p.name: p.from_x(v) for p, v in zip(ps, x)}}

    def cost(res, x):
        return float(res @ res + PRIOR_WEIGHT * (x - x0) @ (x - x0))

    x = x0.copy()
    pred = _log_preds(runs, values_at(x))
    c = cost(pred - meas, x)
    for _ in range(iterations):
        jac = jacobian(runs, values_at(x), names, pred)
        r = pred - meas
        a = jac.T @ jac + PRIOR_WEIGHT * np.eye(len(names))
        g = jac.T @ r + PRIOR_WEIGHT * (x - x0)
        delta = -np.linalg.solve(a + 1e-9 * np.eye(len(names)), g)
        for _half in range(6):   # backtrack until the cost falls
            x_new = np.clip(x + delta, lo, hi)
            p_new = _log_preds(runs, values_at(x_new))
            c_new = cost(p_new - meas, x_new)
            if c_new < c:
                break
            delta /= 2
        else:
            break
        moved = float(np.max(np.abs(x_new - x)))
        x, pred, c = x_new, p_new, c_new
        if moved < 1e-4:
            break
    return values_at(x)


@record
class Calibration:
    runs: list[Run]
    defaults: dict[str, float]
    fitted: dict[str, float]      # only the kept parameters
    kept_at_default: dict[str, str]   # name -> why
    before: list[float]           # prediction / measured - 1 per run
    after: list[float]
    loo: list[float | None]       # leave-one-out error per run (None with one run)
    gpu: str
    link: str = ""                # the runs' scale-up link ("" when they use several)
    nic: str = ""                 # the runs' NIC ("" when they use several)

    @property
    def loo_range(self) -> tuple[float, float] | None:
        """The leave-one-out errors of the time and throughput runs in the step-time sense
        (predicted / true step time - 1, regimes.py): the profile's error range."""
        errs = [1 / (1 + e) - 1 if r.figure == "tokens_per_s" else e
                for r, e in zip(self.runs, self.loo)
                if e is not None and r.figure != "gpu_memory_bytes"]
        return (min(errs), max(errs)) if errs else None


def calibrate(runs: list[Run]) -> Calibration:
    """Select the determinable parameters, fit them, and compute each run's leave-one-out
    error (refitted on the other runs with the same parameters)."""
    used = entry_names(runs)
    gpus = sorted(used["gpu"])
    if len(gpus) > 1:
        raise InputError(f"calibrate fits one GPU at a time; the runs use {', '.join(gpus)}: "
                         "give one file per GPU")
    defaults = defaults_of(runs)
    several = {p.name: f"the runs use several {p.where}s ({', '.join(sorted(used[p.where]))}); "
               "give one file per node type to fit it" for p in CANDIDATES
               if p.where in ("link", "nic") and len(used[p.where]) > 1}
    names = [p.name for p in CANDIDATES if p.name not in several]
    base = _log_preds(runs, defaults)
    jac = jacobian(runs, defaults, names, base)
    by = {p.name: p for p in CANDIDATES}
    up_only = tuple(j for j, n in enumerate(names) if by[n].scale and defaults[n] == 0)
    kept, why = select(jac, len(runs), base - np.log([r.measured for r in runs]), up_only)
    fixed = {p.name for p in CANDIDATES if p.scale}
    why_named = {**{names[j]: w + (FIXED_HINT if names[j] in fixed and "separable" in w else "")
                    for j, w in why.items()}, **several}
    fit_names = [names[j] for j in kept]
    values = fit(runs, defaults, fit_names)
    meas = np.array([r.measured for r in runs])
    before = list(np.exp(base) / meas - 1)
    after = [predict(r, values) / r.measured - 1 for r in runs]
    loo: list[float | None] = [None] * len(runs)
    if len(runs) > 1 and fit_names:
        for i, r in enumerate(runs):
            sub = fit(runs[:i] + runs[i + 1:], defaults, fit_names)
            loo[i] = predict(r, sub) / r.measured - 1
    elif len(runs) > 1:
        loo = list(after)
    return Calibration(runs, defaults, {n: values[n] for n in fit_names},
                       {p.name: why_named[p.name] for p in CANDIDATES if p.name in why_named},
                       [float(e) for e in before], [float(e) for e in after], loo, gpus[0],
                       next(iter(used["link"])) if len(used["link"]) == 1 else "",
                       next(iter(used["nic"])) if len(used["nic"]) == 1 else "")


def _toml_str(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ") + '"'


def profile_toml(cal: Calibration, runs_name: str, date: str) -> str:
    """The profile file: provenance, the fitted values, the LOO error, what stayed default."""
    where = {p.name: p.where for p in CANDIDATES}
    desc = {p.name: p.what for p in CANDIDATES}
    n = len(cal.runs)
    lines = ["# optimus-calc calibration profile (optimus-calc calibrate); apply with",
             "# --profile FILE or OPTIMUS_CALC_PROFILE=FILE. Only the values listed change.",
             "[profile]",
             f"source = {_toml_str(f'fitted on {runs_name}, {date}, {n} runs')}",
             f"runs = {n}"]
    rng = cal.loo_range
    if rng is not None:
        errs = [abs(e) for e in cal.loo if e is not None]
        lines += ["# leave-one-out error range, as predicted / true step time - 1",
                  f"loo_error_low = {rng[0]:.6g}", f"loo_error_high = {rng[1]:.6g}",
                  f"loo_mean_abs_error = {sum(errs) / len(errs):.6g}",
                  f"gpu = {_toml_str(cal.gpu)}"]
    gpu_vals = {k: v for k, v in cal.fitted.items() if where[k] == "gpu"}
    asm_vals = {k: v for k, v in cal.fitted.items() if where[k] == "assumptions"}
    if gpu_vals:
        lines += ["", f"[gpu.{_toml_str(cal.gpu)}]"]
        lines += [f"{k} = {v:.6g}  # {desc[k]}; default {cal.defaults[k]:g}"
                  for k, v in gpu_vals.items()]
    for kind, name in (("link", cal.link), ("nic", cal.nic)):
        vals = {k: v for k, v in cal.fitted.items() if where[k] == kind}
        if vals:
            lines += ["", f"[{kind}.{_toml_str(name)}]"]
            lines += [f"efficiency = {v:.6g}  # {desc[k]}; default {cal.defaults[k]:g}"
                      for k, v in vals.items()]
    if asm_vals:
        lines += ["", "[assumptions]"]
        lines += [f"{k} = {v:.6g}  # {desc[k]}; default {cal.defaults[k]:g}"
                  for k, v in asm_vals.items()]
    lines += ["", "[kept_at_default]"]
    lines += [f"{k} = {_toml_str(w)}" for k, w in cal.kept_at_default.items()]
    return "\n".join(lines) + "\n"
