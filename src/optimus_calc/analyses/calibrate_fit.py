"""The fit of ``optimus-calc calibrate`` (analyses/calibrate.py): the candidate parameters, the
evaluator's prediction of a run with them, and the bounded Gauss-Newton fit.

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

import math
from dataclasses import replace

import numpy as np

from optimus_calc.record import record

MIN_ELASTICITY = 0.02       # a 10% parameter change moves some run by at least 0.2%
MIN_SINGULAR_RATIO = 0.05   # columns closer to collinear than this are not separable
PRIOR_WEIGHT = 1e-3         # weak pull of each log-parameter towards its default
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
    Param("flash_attention_eta", "gpu", 0.05, 1.0, "FlashAttention kernel efficiency at head "
          "dim 128 (a run at head dim 64 reads it times the GPU's attention_head_dim64 ratio)"),
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
    Param("moe_layer_host_s", "assumptions", 0.0, 0.1,
          "host time per MoE layer per micro-batch (the dispatcher's host sync), s",
          scale=1e-3),
)


@record
class Run:
    row: int            # line of the runs file (header = 1)
    inputs: object      # inputs.Inputs
    figure: str         # step_time_s, tokens_per_s or gpu_memory_bytes
    measured: float
    framework: str      # "" when the column is absent
    label: str


def predict(run: Run, values: dict[str, float]) -> float:
    """The evaluator's figure for ``run`` with ``values`` put in place (GPU fields, assumptions)."""
    from optimus_calc.evaluate.step import step_figure
    inp = run.inputs
    gpu_upd = {p.name: values[p.name] for p in CANDIDATES if p.where == "gpu" and p.name in values}
    own = _profile_set(inp)  # the run's framework sets these (its physics, not a fit's)
    asm_upd = {p.name: values[p.name] for p in CANDIDATES
               if p.where == "assumptions" and p.name in values and p.name not in own}
    hw_upd = {"gpu": inp.hw.gpu.model_copy(update=gpu_upd)} if gpu_upd else {}
    if "link_efficiency" in values:
        hw_upd["intra_link"] = inp.hw.intra_link.model_copy(
            update={"efficiency": values["link_efficiency"]})
    if "nic_efficiency" in values:
        hw_upd["nic"] = inp.hw.nic.model_copy(update={"efficiency": values["nic_efficiency"]})
    hw = replace(inp.hw, **hw_upd) if hw_upd else inp.hw  # one copy of the record, not three
    asm = inp.assumptions.model_copy(update=asm_upd) if asm_upd else inp.assumptions
    return step_figure(replace(inp, hw=hw, assumptions=asm), inp.model.name, run.figure)


def _profile_set(inp) -> set[str]:
    """The assumptions the run's framework profile set (frameworks/physics.Choice.applied: e.g.
    DeepSpeed's moe_layer_host_s = 0, or Megatron-LM's with a full-iteration CUDA graph)."""
    choice = getattr(inp, "framework", None)
    return {x.name for x in choice.applied} if choice is not None else set()


def _holder(inp, where: str):
    """The object holding a candidate of kind ``where`` for one run's inputs; the assumptions
    before its framework profile (another run's profile value is not a default)."""
    choice = getattr(inp, "framework", None)
    asm = choice.before[1] if choice is not None and choice.before else inp.assumptions
    return {"gpu": inp.hw.gpu, "link": inp.hw.intra_link, "nic": inp.hw.nic,
            "assumptions": asm}[where]


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

    def __init__(self, runs: list[Run], memo: dict | None = None):
        index: dict = {}
        inv = [index.setdefault((r.figure, repr(r.inputs)), len(index)) for r in runs]
        reps: list = [None] * len(index)
        for r, i in zip(runs, inv):
            reps[i] = reps[i] or r
        self.runs, self.reps, self.inv = list(runs), reps, np.array(inv, dtype=int)
        self.log_meas = np.log([r.measured for r in runs])
        # predictions by (run, values), shared with the subsets of leave-one-out: a fit starts
        # from values another fit already evaluated (the runs outlive the set, so ids are stable)
        self.memo: dict = {} if memo is None else memo

    def __len__(self) -> int:
        return len(self.runs)

    def without(self, drop) -> "RunSet":
        """The set less run ``drop`` (an index or an array of indices)."""
        gone = set(np.atleast_1d(drop).tolist())
        return RunSet([r for k, r in enumerate(self.runs) if k not in gone], self.memo)

    def log_preds(self, values) -> np.ndarray:
        """log prediction per run (each distinct layout evaluated once per set of values)."""
        key = tuple(sorted(values.items()))
        return np.log([self._predict(r, key, values) for r in self.reps])[self.inv]

    def _predict(self, run: Run, key: tuple, values) -> float:
        got = self.memo.get((id(run), key))
        if got is None:
            got = self.memo[(id(run), key)] = predict(run, values)
        return got

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
           up_only: tuple[int, ...] = (), room: np.ndarray | None = None
           ) -> tuple[list[int], dict[int, str]]:
    """Which candidate columns the runs determine (module docstring): kept indices, and the
    reason for each one left at its default. Without ``resid`` the columns are taken in order;
    with the runs' log residuals (prediction over measured) each round takes, among the
    determinable columns, the one whose linearised fit leaves the least cost (:func:`_left`;
    the earlier on a tie), so a fixed cost does not take the place of the efficiency the runs
    point at. ``up_only``: columns at a lower bound of 0 (fixed costs), which cannot move down;
    ``room``: (down, up) per column, how far each may move in its coordinate (its bounds).
    ``n_runs``: the distinct layouts (copies of one layout determine nothing more)."""
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
                why[j] = ("one layout determines one parameter" if n_runs == 1 else
                          f"{n_runs} distinct layouts determine at most {limit} parameter(s), "
                          "so that each leave-one-out refit still determines them")
            break
        pick = open_[0] if resid is None else _best(jac, kept, open_, resid, up_only, room)
        kept.append(pick)
        open_.remove(pick)
    return kept, why


def _best(jac, kept, open_, resid, up_only, room=None) -> int:
    """The column to fit next: the one leaving the least linearised cost; a fixed cost only
    when it leaves < :data:`FIXED_PREFERENCE` x the best efficiency's (a constant absorbs any
    gap, an efficiency carries to other layouts)."""
    left = {j: _left(jac, kept + [j], resid, up_only, room) for j in open_}
    tie = TIE_RESIDUAL * len(resid)   # within it, the earlier candidate (CANDIDATES order)

    def first(js):
        return min(j for j in js if left[j] <= min(left[k] for k in js) + tie) if js else None
    eff = [j for j in open_ if j not in up_only]
    best_eff, best = first(eff), first(open_)
    if best_eff is None or best == best_eff or left[best] < FIXED_PREFERENCE * left[best_eff]:
        return best
    return best_eff


def _left(jac: np.ndarray, cols: list[int], resid: np.ndarray, up_only,
          room: np.ndarray | None = None) -> float:
    """The cost :func:`fit` minimises (squared log residual plus the prior's pull) that a
    linearised step on ``cols`` leaves, the step kept inside the bounds (``room``) as the fit
    keeps it; no step when it would push a fixed cost below 0. Without the prior and the
    bounds a column the runs barely move would win by asking for a tenfold change (a review:
    hbm_efficiency 0.9 -> 0.09 on two compute-bound runs, where gemm_eta_max fits them)."""
    a = jac[:, cols]
    ridge = np.vstack([a, math.sqrt(PRIOR_WEIGHT) * np.eye(len(cols))])
    delta = np.linalg.lstsq(ridge, np.concatenate([-resid, np.zeros(len(cols))]),
                            rcond=None)[0]
    if any(d < 0 for c, d in zip(cols, delta) if c in up_only):
        return float(resid @ resid)
    if room is not None:
        delta = np.clip(delta, room[0][cols], room[1][cols])
    left = resid + a @ delta
    return float(left @ left + PRIOR_WEIGHT * delta @ delta)


def fit(runs, start: dict[str, float], names: list[str],
        iterations: int = 12, init: dict[str, float] | None = None,
        jac0: np.ndarray | None = None, tie: float = TIE_RESIDUAL) -> dict[str, float]:
    """Bounded Gauss-Newton on ``names`` (each in its coordinate, Param.to_x); the other values
    stay as in ``start``, towards which the weak prior pulls. ``init``: where the iteration
    starts (a leave-one-out refit starts from the full fit), default ``start``; ``jac0``: the
    Jacobian there, if known. Between finite-difference Jacobians (at most ``iterations``) the
    Jacobian follows each step by Broyden's rank-one update (Broyden 1965, Math. Comp. 19,
    577-593: one evaluation per run per step instead of one per run per parameter); a step the
    updated Jacobian cannot make, or convergence on it, asks for a fresh one. Converged: a step
    on a fresh Jacobian that moves no coordinate by 1e-4 or lowers the cost by less than ``tie``
    per run (default :data:`TIE_RESIDUAL`: the fits tie, so the floor of a valley of parameters
    the runs barely tell apart is not walked to its end)."""
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

    tie = tie * len(runs)   # a step that lowers the cost less than this has converged
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
        moved, fell = float(np.max(np.abs(dx))), c - c_new
        x, pred, c = x_new, p_new, c_new
        if moved < 1e-4 or fell < tie:
            if fresh:
                break
            jac = None   # converged on an updated Jacobian: confirm with a fresh one
            continue
        jac = jac + np.outer(dp - jac @ dx, dx) / float(dx @ dx)
        fresh = False
    return values_at(x)
