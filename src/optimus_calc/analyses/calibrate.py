"""Fit named efficiency parameters to a user's measured runs (``optimus-calc calibrate``).

Every prediction is the evaluator's (evaluate/step.py ``step_of``) with the candidate parameter
values put into the GPU entry, the node's scale-up link and NIC entries, or the assumptions;
nothing here computes physics. The fit is a
bounded Gauss-Newton in log space (log prediction - log measured over log parameters), with a
weak pull towards the defaults so a flat direction stays where it was.

Identifiability: a parameter is fitted only when (a) some run's prediction moves with it
(elasticity |d log pred / d log p| >= :data:`MIN_ELASTICITY`), (b) its column of the Jacobian is
not (nearly) a combination of the columns already kept (smallest / largest singular value of the
column-normalised Jacobian >= :data:`MIN_SINGULAR_RATIO`), and (c) fewer parameters than runs are
fitted (n runs fit at most n - 1, so that every leave-one-out subset still determines them; one
run fits one). The others stay at their defaults, and the report says why.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass, replace

import numpy as np

from optimus_calc.errors import InputError

MEASURES = {"measured_step_time_s": "step_time_s", "measured_tokens_per_s": "tokens_per_s",
            "measured_gpu_memory_bytes": "gpu_memory_bytes"}
MIN_ELASTICITY = 0.02       # a 10% parameter change moves some run by at least 0.2%
MIN_SINGULAR_RATIO = 0.05   # columns closer to collinear than this are not separable
PRIOR_WEIGHT = 1e-3         # weak pull of each log-parameter towards its default
MAX_ROWS = 1000


@dataclass(frozen=True)
class Param:
    name: str
    where: str        # "gpu" (catalog GPU field), "link" (the node's intra_link), "nic" (the
                      # node's compute NIC) or "assumptions"
    lo: float
    hi: float
    what: str


# In priority order: the first of two parameters the runs cannot tell apart is the one fitted.
CANDIDATES = (
    Param("gemm_eta_max", "gpu", 0.05, 1.0, "GEMM-efficiency curve scale of the GPU"),
    Param("flash_attention_eta", "gpu", 0.05, 1.0, "FlashAttention kernel efficiency"),
    Param("attention_eta", "gpu", 0.02, 1.0, "unfused attention-core efficiency"),
    Param("gemm_half_GFLOP", "gpu", 0.01, 1e4, "GEMM size at half efficiency, GFLOP"),
    Param("link_efficiency", "link", 0.05, 1.0,
          "achievable fraction of the node's scale-up link (intra_link) bandwidth"),
    Param("nic_efficiency", "nic", 0.05, 1.0, "achievable fraction of the NIC's line rate"),
    Param("hbm_efficiency", "assumptions", 0.05, 1.0, "achievable fraction of HBM bandwidth"),
    Param("cuda_context_GB", "assumptions", 0.01, 100.0, "CUDA context and workspaces, GB"),
    Param("fragmentation", "assumptions", 0.001, 1.0, "allocator fragmentation fraction"),
)


@dataclass(frozen=True)
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
    from optimus_calc.evaluate.step import step_of
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
    mem, st = step_of(replace(inp, hw=hw, assumptions=asm), inp.model.name)
    return float(mem.worst.total_bytes if run.figure == "gpu_memory_bytes"
                 else getattr(st, run.figure))


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
    """d log(prediction) / d log(parameter), one-sided differences stepping inside the bounds."""
    base = _log_preds(runs, values) if base is None else base
    bounds = {p.name: p for p in CANDIDATES}
    cols = []
    for n in names:
        h = step if values[n] * math.exp(step) <= bounds[n].hi else -step
        cols.append((_log_preds(runs, {**values, n: values[n] * math.exp(h)}) - base) / h)
    return np.array(cols).T.reshape(len(runs), len(names))


def select(jac: np.ndarray, n_runs: int) -> tuple[list[int], dict[int, str]]:
    """Which candidate columns the runs determine (module docstring): kept indices, and the
    reason for each one left at its default."""
    limit = max(1, n_runs - 1)
    kept: list[int] = []
    why: dict[int, str] = {}
    for j in range(jac.shape[1]):
        col = jac[:, j]
        if np.max(np.abs(col)) < MIN_ELASTICITY:
            why[j] = f"the runs barely depend on it (elasticity < {MIN_ELASTICITY:g})"
            continue
        if len(kept) >= limit:
            why[j] = (f"{n_runs} run{'s' if n_runs != 1 else ''} determine at most {limit} "
                      "parameter(s) with one run left out")
            continue
        sub = jac[:, kept + [j]]
        sv = np.linalg.svd(sub / np.linalg.norm(sub, axis=0), compute_uv=False)
        if sv[-1] / sv[0] < MIN_SINGULAR_RATIO:
            why[j] = "not separable from the parameters already fitted with these runs"
            continue
        kept.append(j)
    return kept, why


def fit(runs: list[Run], start: dict[str, float], names: list[str],
        iterations: int = 12) -> dict[str, float]:
    """Bounded Gauss-Newton in log space on ``names``; the other values stay as in ``start``."""
    if not names:
        return dict(start)
    ps = [next(p for p in CANDIDATES if p.name == n) for n in names]
    lo, hi = np.log([p.lo for p in ps]), np.log([p.hi for p in ps])
    x0 = np.log([start[n] for n in names])
    meas = np.log([r.measured for r in runs])

    def values_at(x):
        return {**start, **{n: float(math.exp(v)) for n, v in zip(names, x)}}

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


@dataclass(frozen=True)
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
    kept, why = select(jac, len(runs))
    why_named = {**{names[j]: w for j, w in why.items()}, **several}
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
