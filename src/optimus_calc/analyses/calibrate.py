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
from dataclasses import field, replace

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
    """The runs CSV as rows of column -> text (empty cells dropped). Line ends may be LF, CRLF
    or CR alone (classic Mac, some exports): read as universal newlines."""
    try:
        return _read_rows(csv.DictReader(io.StringIO(text, newline=None)), path)
    except csv.Error as exc:
        raise InputError(f"runs file {path}: not a CSV file the reader accepts: {exc}") from None


def _read_rows(reader, path: str) -> list[dict[str, str]]:
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


class RunSet:
    """The runs with identical layouts (same figure, same resolved inputs) evaluated once: a
    runs file of 1,000 copies of one layout costs one evaluation per prediction, not 1,000."""

    def __init__(self, runs: list[Run]):
        index: dict = {}
        inv = [index.setdefault((r.figure, repr(r.inputs)), len(index)) for r in runs]
        reps: list = [None] * len(index)
        for r, i in zip(runs, inv):
            reps[i] = reps[i] or r
        self.runs, self.reps, self.inv = list(runs), reps, np.array(inv, dtype=int)
        self.log_meas = np.log([r.measured for r in runs])

    def __len__(self) -> int:
        return len(self.runs)

    def without(self, i: int) -> "RunSet":
        return RunSet(self.runs[:i] + self.runs[i + 1:])

    def log_preds(self, values) -> np.ndarray:
        """log prediction per run (each distinct layout evaluated once)."""
        return np.log([predict(r, values) for r in self.reps])[self.inv]

    def groups(self) -> list[list[int]]:
        """Indices of the runs of each layout given more than once."""
        out: dict[int, list[int]] = {}
        for k, u in enumerate(self.inv):
            out.setdefault(int(u), []).append(k)
        return [g for g in out.values() if len(g) > 1]


def _as_set(runs) -> RunSet:
    return runs if isinstance(runs, RunSet) else RunSet(runs)


def _log_preds(runs, values) -> np.ndarray:
    return _as_set(runs).log_preds(values)


def jacobian(runs, values: dict[str, float], names: list[str],
             base: np.ndarray | None = None, step: float = 0.02) -> np.ndarray:
    """d log(prediction) / d x(parameter) (x: log of a factor, a cost over its scale),
    one-sided differences stepping inside the bounds."""
    rs = _as_set(runs)
    base = rs.log_preds(values) if base is None else base
    bounds = {p.name: p for p in CANDIDATES}
    cols = []
    for n in names:
        p = bounds[n]
        x = p.to_x(values[n])
        h = step if p.from_x(x + step) <= p.hi else -step
        cols.append((rs.log_preds({**values, n: p.from_x(x + h)}) - base) / h)
    return np.array(cols).T.reshape(len(rs), len(names))


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


def fit(runs, start: dict[str, float], names: list[str],
        iterations: int = 12, init: dict[str, float] | None = None,
        jac0: np.ndarray | None = None) -> dict[str, float]:
    """Bounded Gauss-Newton on ``names`` (each in its coordinate, Param.to_x); the other values
    stay as in ``start``, towards which the weak prior pulls. ``init``: where the iteration
    starts (a leave-one-out refit starts from the full fit), default ``start``; ``jac0``: the
    Jacobian there, if known. Between finite-difference Jacobians (at most ``iterations``) the
    Jacobian follows each step by Broyden's rank-one update (Broyden 1965, Math. Comp. 19,
    577-593: one evaluation per run per step instead of one per run per parameter); a step the
    updated Jacobian cannot make, or convergence on it, asks for a fresh one."""
    if not names:
        return dict(start)
    runs = _as_set(runs)
    ps = [next(p for p in CANDIDATES if p.name == n) for n in names]
    lo, hi = np.array([p.to_x(p.lo) for p in ps]), np.array([p.to_x(p.hi) for p in ps])
    x0 = np.array([p.to_x(start[p.name]) for p in ps])
    meas = runs.log_meas

    def values_at(x):
        return {**start, **{p.name: p.from_x(v) for p, v in zip(ps, x)}}

    def cost(res, x):
        return float(res @ res + PRIOR_WEIGHT * (x - x0) @ (x - x0))

    x = x0.copy() if init is None else np.array([p.to_x(init[p.name]) for p in ps])
    pred = _log_preds(runs, values_at(x))
    c = cost(pred - meas, x)
    jac, fresh, refreshed = (None if jac0 is None else np.array(jac0, dtype=float)), False, 0
    for _ in range(4 * iterations):
        if jac is None:
            if refreshed >= iterations:
                break
            jac, fresh, refreshed = jacobian(runs, values_at(x), names, pred), True, refreshed + 1
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
            if fresh:
                break
            jac = None   # the updated Jacobian points nowhere better: a fresh one
            continue
        dx, dp = x_new - x, p_new - pred
        moved = float(np.max(np.abs(dx)))
        x, pred, c = x_new, p_new, c_new
        if moved < 1e-4:
            if fresh:
                break
            jac = None   # converged on an updated Jacobian: confirm with a fresh one
            continue
        jac = jac + np.outer(dp - jac @ dx, dx) / float(dx @ dx)
        fresh = False
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
    disagreements: list[str] = field(default_factory=list)  # same layout, measures far apart

    @property
    def loo_range(self) -> tuple[float, float] | None:
        """The leave-one-out errors of the time and throughput runs in the step-time sense
        (predicted / true step time - 1, regimes.py): the profile's error range."""
        errs = [1 / (1 + e) - 1 if r.figure == "tokens_per_s" else e
                for r, e in zip(self.runs, self.loo)
                if e is not None and r.figure != "gpu_memory_bytes"]
        return (min(errs), max(errs)) if errs else None


def _impossible(rs: RunSet, defaults: dict[str, float], source: str = "") -> None:
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
        if implied > 1:
            raise InputError(f"{where}: {r.measured:.4g} is faster than the GPUs' dense peak "
                             f"allows (it implies an MFU of {implied:.3g}, above 100%)")


def _figure(run: Run, figure: str) -> float:
    from optimus_calc.evaluate.step import step_figure
    return step_figure(run.inputs, run.inputs.model.name, figure)


def _disagreements(rs: RunSet) -> list[str]:
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


def leave_one_out(rs: RunSet, defaults: dict[str, float], values: dict[str, float],
                  names: list[str]) -> list[float]:
    """Each run's leave-one-out error (prediction / measured - 1 with the parameters refitted
    without it), by the linearised hat-matrix residual r_i / (1 - h_ii) of the fitted problem
    (:data:`MAX_LINEAR_LEVERAGE`): H = J (J'J + w I)^-1 J' over the parameters not on a bound,
    J the Jacobian of the log predictions at the fit, w the prior weight. A run of higher
    leverage is refitted without it, warm-started at ``values``."""
    pred = rs.log_preds(values)
    resid = pred - rs.log_meas
    by = {p.name: p for p in CANDIDATES}
    free = [j for j, n in enumerate(names) if by[n].lo < values[n] < by[n].hi]
    lev = np.zeros(len(rs))
    if free:
        jac = jacobian(rs, values, [names[j] for j in free], pred)
        a = jac.T @ jac + PRIOR_WEIGHT * np.eye(len(free))
        lev = np.einsum("ij,ij->i", jac @ np.linalg.inv(a), jac)
    loo = []
    for i, r in enumerate(rs.runs):
        if lev[i] <= MAX_LINEAR_LEVERAGE:
            loo.append(float(np.expm1(resid[i] / (1 - lev[i]))))
        else:
            sub = fit(rs.without(i), defaults, names, init=values)
            loo.append(predict(r, sub) / r.measured - 1)
    return loo


def _pinned(values: dict[str, float], names: list[str], after: list[float]) -> str:
    """Why the fit cannot be a profile ("" when it can): a parameter on a bound while a run is
    still more than :data:`MAX_PINNED_RESIDUAL` off."""
    by = {p.name: p for p in CANDIDATES}
    worst = max(after, key=lambda e: max(1 + e, 1 / (1 + e)))
    if max(1 + worst, 1 / (1 + worst)) <= 1 + MAX_PINNED_RESIDUAL:
        return ""
    at = [f"{n} = {values[n]:.4g}" for n in names
          if values[n] <= by[n].lo * (1 + 1e-9) or values[n] >= by[n].hi * (1 - 1e-9)]
    if not at:
        return ""
    return (f"the fit ends on the bound of {', '.join(at)} with a run's prediction still "
            f"{1 + worst:.3g}x its measurement: "
            "the runs are not like the model (check the layout columns and the units of the "
            "measurements); no profile written")


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
    _impossible(rs, defaults, source)
    several = {p.name: f"the runs use several {p.where}s ({', '.join(sorted(used[p.where]))}); "
               "give one file per node type to fit it" for p in CANDIDATES
               if p.where in ("link", "nic") and len(used[p.where]) > 1}
    names = [p.name for p in CANDIDATES if p.name not in several]
    base = rs.log_preds(defaults)
    jac = jacobian(rs, defaults, names, base)
    by = {p.name: p for p in CANDIDATES}
    up_only = tuple(j for j, n in enumerate(names) if by[n].scale and defaults[n] == 0)
    kept, why = select(jac, len(runs), base - rs.log_meas, up_only)
    fixed = {p.name for p in CANDIDATES if p.scale}
    why_named = {**{names[j]: w + (FIXED_HINT if names[j] in fixed and "separable" in w else "")
                    for j, w in why.items()}, **several}
    fit_names = [names[j] for j in kept]
    values = fit(rs, defaults, fit_names, jac0=jac[:, kept])
    meas = np.array([r.measured for r in runs])
    before = list(np.exp(base) / meas - 1)
    after = list(np.expm1(rs.log_preds(values) - rs.log_meas))
    problem = _pinned(values, fit_names, after)
    if problem:
        raise InputError(f"calibrate: {problem}")
    loo: list[float | None] = [None] * len(runs)
    if len(runs) > 1 and fit_names:
        loo = list(leave_one_out(rs, defaults, values, fit_names))
    elif len(runs) > 1:
        loo = list(after)
    cal = Calibration(runs, defaults, {n: values[n] for n in fit_names},
                      {p.name: why_named[p.name] for p in CANDIDATES if p.name in why_named},
                      [float(e) for e in before], [float(e) for e in after], loo, gpus[0],
                      next(iter(used["link"])) if len(used["link"]) == 1 else "",
                      next(iter(used["nic"])) if len(used["nic"]) == 1 else "",
                      _disagreements(rs))
    rng = cal.loo_range
    if rng is not None and loo_band_problem(*rng):
        raise InputError(f"calibrate: {loo_band_problem(*rng)}: the runs are not like the "
                         "model; no profile written")
    return cal


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
