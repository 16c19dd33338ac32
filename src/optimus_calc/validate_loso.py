"""Leave-one-source-out (LOSO) error of the fitted efficiency parameters. Pure.

The fitted parameters (per GPU parameter group, GROUPS): the GEMM curve's ``gemm_eta_max`` and
``gemm_half_GFLOP`` (equations/efficiency.py, fitted before by benchmarks/calibrate_gemm.py),
the unfused attention efficiency ``attention_eta`` and each fused kernel's end-to-end
efficiency (``flash_attention_eta`` / ``attention_kernel_eta``). For each source (a
publication: all tables of one benchmark file are one source), the parameters are refitted on
every other source's rows of the group and the source's rows are predicted with them.

The rows fitted: the dense rows of the group, 16-bit and FP8 (an FP8 row with its recipe's
GEMM ratio held: fitting the H100 curve and attention on both lifted the fused-attention fit off
a value that left every FP8 row slow, changes/jointfit.md). Not refitted (their rows keep the
shipped prediction in the LOSO column, and `validate` says so): the FP8 GEMM ratios
(``fp8_gemm_efficiency`` and the recipes', evaluate/fp8.py), V100's curve (derived: one
public row, which the curve alone cannot fit), the framework profiles, the memory model
(arithmetic, no fit). The Blackwell groups (B200, GB200) are fitted on FP8 rows alone, each at
its recipe's ratio held; the one public dense BF16 Blackwell source (torchtitan's mxfp8.md
table, power-limited B200s: public_cases_tt.py) is scored, never fitted (PublicRow.unfitted),
as are torchtitan's rows that run async TP (public_row.with_async_tp: TP priced exposed).

A row's prediction under parameters theta uses its sensitivity (validate_public.Sensitivity):
P(theta) = P(shipped) x S(shipped) / S(theta) for rates (tokens/s, TFLOP/s), x S(theta) /
S(shipped) for times, with S = a + c_d / eta_d(theta, W) + c_a / min(eta_a(theta), eta_max)
(secants from the shipped values: validate_public.sensitivity). The fit minimises the mean
|log(P / published)| by coordinate descent on grids; a held-out row is then priced by the step
model itself at its fold's refit (FitRow.exact, since round 27).
"""

from __future__ import annotations

import re
from dataclasses import field

import numpy as np

from optimus_calc.record import record

# GPU parameter groups: the catalog GPUs that share one fitted parameter set
GROUPS = {"a100": ("a100-40gb", "a100-80gb"),
          "h100": ("h100-sxm", "h100-pcie", "h200", "gh200-96gb", "gh200-144gb",
                   "h100-sxm-500w"),
          "b200": ("b200", "b300"), "gb200": ("gb200", "gb300")}
# Members whose compute runs at a fitted fraction of the group's (``scale:<gpu>``): the 500 W
# H100 of Meta's Grand Teton hosts (public_cases.py torchtitan rows), and GB300 against GB200
# (the same BF16 and FP8 dense peaks; 1,400 W against 1,200 W, 160 SMs against 148 and twice
# the attention exponent rate: catalog gb300). The factor absorbs all that differs between
# those runs and the group's others (power, SMs, eager PyTorch against Transformer Engine's
# fused kernels): it is fitted, not a clock measurement.
SCALED = ("h100-sxm-500w", "gb300")
KERNELS = ("fa2", "fa3", "cudnn", "fa1")
# A kernel no training row of a fold informs takes another's value, not the shipped one (that
# was fitted on the held-out source itself): FlashAttention-1 as fast as FlashAttention-2 (the
# prior; FA2 Table 1 has it 1.0-1.3x slower end to end, Dao 2023 section 4.2)
PRIOR = {"eta_a:fa1": "eta_a:fa2"}
GRIDS = {"eta_max": np.linspace(0.30, 0.95, 66), "W_half": np.geomspace(0.5, 100.0, 48),
         "eta_u": np.linspace(0.05, 0.60, 56),
         **{f"eta_a:{k}": np.linspace(0.05, 0.90, 86) for k in KERNELS},
         **{f"scale:{g}": np.linspace(0.40, 1.60, 121) for g in SCALED}}
SWEEPS = 4
# The held-out refit's starts (fit_best): the first, middle and third quartile of each
# parameter's grid, the same for every group and fold, read from no row (round 26: one start at
# the shipped values printed 9.30% held out where these gave 9.46%; 9.50% since round 27's
# corrected sensitivity, benchmarks/loso_start.py)
STARTS = tuple({k: float(GRIDS[g][len(GRIDS[g]) * q // 4]) for k, g in
                (("eta_max", "eta_max"), ("W_half", "W_half"), ("eta_u", "eta_u"),
                 ("eta_a", "eta_a:fa2"), ("scale", f"scale:{SCALED[0]}"))}
               for q in (1, 2, 3))
MAX_SWEEPS = 24  # a cap (round 26: 24 and 60 sweeps gave validate the same column)


def _fwd_bwd(fwd_TFLOPs: float, bwd_TFLOPs: float) -> float:
    """A kernel's forward + backward rate from its two measured rates: the backward runs 2.5x
    the forward's FLOPs (flash-attention benchmarks/benchmark_flash_attention.py ``flops``:
    ``2.5 * f`` for "bwd", ``3.5 * f`` for "fwd_bwd")."""
    return 3.5 / (1.0 / fwd_TFLOPs + 2.5 / bwd_TFLOPs)


# One published benchmark of the three kernels on one H100 SXM5 at one shape (Shah et al. 2024,
# FlashAttention-3, arXiv 2407.08608; BF16, head dim 128, seq 8k, TFLOP/s): Fig. 5's causal
# forward panel and Fig. 6's backward (the paper shows no causal backward). Their forward +
# backward ratios (cuDNN 1.62x FlashAttention-2, FlashAttention-3 1.77x; 1.60-1.62x at 4k-16k)
# tie the kernels' end-to-end efficiencies in the H100 fit: one level, fitted on training rows
# of every kernel, times the benchmark's ratio. Free, the cuDNN value rested on one source's
# long-context rows (NeMo's, 4K-1M), and without them it drifted to 0.43 on short-sequence
# rows where attention is a few percent of the step (changes in CHANGELOG, issue 32 round 14).
FA3_PAPER_H100_TFLOPs = {"fa2": (333.0, 318.0), "cudnn": (529.0, 518.0), "fa3": (602.0, 559.0)}
TIED = {"h100": {f"eta_a:{k}": ("eta_a:fa2", _fwd_bwd(*FA3_PAPER_H100_TFLOPs[k])
                                / _fwd_bwd(*FA3_PAPER_H100_TFLOPs["fa2"]))
                 for k in ("cudnn", "fa3")}}
# The parameters refitted per group: the GEMM curve, the unfused attention core and the fused
# kernels' end-to-end efficiencies
FIT_NAMES = ("eta_max", "W_half", "eta_u", *(f"eta_a:{k}" for k in KERNELS),
             *(f"scale:{g}" for g in SCALED))


def group_of(gpu_name: str) -> str | None:
    return next((g for g, names in GROUPS.items() if gpu_name in names), None)


def fold_of(source: str) -> str:
    """The publication of a row's source: the text before its parenthesis, without its table
    number or commit (torchtitan's Tables 1-6 are one benchmark file, one source)."""
    s = re.sub(r"\s*\(.*$", "", source)
    s = re.sub(r",? Table \d+.*$", "", s)
    return re.sub(r" @ [0-9a-f]{6,40}", "", s).strip()


@record
class FitRow:
    key: int            # the case's index in validate's list
    fold: str
    group: str
    gpu: str            # the catalog GPU (SCALED members carry a fitted factor)
    kernel: str         # "" for the unfused attention core
    a: float
    c_d: float
    c_a: float
    W: float            # FLOPs of one weight GEMM
    published: float
    pred0: float        # the shipped prediction
    time_like: bool     # the figure grows with step time (seconds) or with its inverse
    fitted: bool = True  # enters the fit (dense rows, 16-bit and FP8); MoE rows are
    #                      predicted, never fitted: their expert GEMMs follow the dense size only
    #                      approximately (Sensitivity). An FP8 row enters with its recipe's GEMM
    #                      ratio held (specs/assumptions.py; its sensitivity is taken at that
    #                      ratio), so it informs the BF16 curve and the attention kernels
    exact: object = field(default=None, compare=False, repr=False)  # (params, shipped) ->
    #                      the row's prediction by the step model itself at ``params`` (a
    #                      held-out row's price: validate_public.at_params); None: linearised


def shipped_params(gpu, cat=None) -> dict[str, float]:
    """The catalog's values of the group headed by ``gpu``; a SCALED member's factor is its
    gemm_eta_max over the head's (its catalog efficiencies are the head's x the factor)."""
    p = {"eta_max": gpu.gemm_eta_max, "W_half": gpu.gemm_half_GFLOP, "eta_u": gpu.attention_eta,
         f"eta_a:{gpu.attention_kernel}": gpu.flash_attention_eta}
    p.update({f"eta_a:{k}": v for k, v in gpu.attention_kernel_eta.items()})
    for g in SCALED:
        if group_of(g) != group_of(gpu.name):
            continue
        m = cat.find(g, "gpu") if cat is not None else None
        p[f"scale:{g}"] = m.gemm_eta_max / gpu.gemm_eta_max if m is not None else 1.0
    return p


@record
class _Pack:
    """A fit's rows as arrays, built once per fit (the loss runs ~1,000 times per fit)."""
    a: np.ndarray
    c_d: np.ndarray
    c_a: np.ndarray
    w: np.ndarray
    attn_keys: tuple       # the parameter each row's attention reads ("eta_u", "eta_a:<k>"),
    attn_of: np.ndarray    # row -> index into attn_keys; a TIED kernel reads its reference's
    attn_mult: np.ndarray  # ... times its ratio
    own_keys: tuple        # each row's own kernel parameter (the shipped prediction's)
    own_of: np.ndarray
    scale_keys: tuple      # "scale:<gpu>" per distinct GPU
    scale_of: np.ndarray
    published: np.ndarray
    pred0: np.ndarray
    time_like: np.ndarray


def _own_key(r: FitRow) -> str:
    return "eta_u" if not r.kernel else f"eta_a:{r.kernel}"


def _tie(r: FitRow) -> tuple[str, float]:
    """The parameter a row's attention reads in the fit and its factor (TIED, else its own)."""
    return TIED.get(r.group, {}).get(_own_key(r), (_own_key(r), 1.0))


def _pack(rows: list[FitRow]) -> _Pack:
    def index(keys):
        uniq = tuple(dict.fromkeys(keys))
        return uniq, np.array([uniq.index(k) for k in keys], dtype=int)
    attn_keys, attn_of = index([_tie(r)[0] for r in rows])
    own_keys, own_of = index([_own_key(r) for r in rows])
    scale_keys, scale_of = index([f"scale:{r.gpu}" for r in rows])
    col = (lambda f, dtype=float: np.array([getattr(r, f) for r in rows], dtype=dtype))
    return _Pack(col("a"), col("c_d"), col("c_a"), col("W"), attn_keys, attn_of,
                 np.array([_tie(r)[1] for r in rows]), own_keys, own_of, scale_keys, scale_of,
                 col("published"), col("pred0"), col("time_like", bool))


def _S(rows: list[FitRow] | _Pack, p: dict[str, float], own: bool = False) -> np.ndarray:
    """a + (c_d / eta_d(W) + c_a / min(eta_a, eta_max)) / scale for each row under ``p``
    (a row's attention reads eta_u when unfused, its kernel's eta_a else, eta_max if the group
    has no value for it; a TIED kernel its reference's times its ratio, unless ``own``: the
    shipped prediction's reading)."""
    k = rows if isinstance(rows, _Pack) else _pack(rows)
    em = p["eta_max"]
    eta_d = em * k.w / (k.w + p["W_half"] * 1e9)
    keys, of, mult = ((k.own_keys, k.own_of, 1.0) if own
                      else (k.attn_keys, k.attn_of, k.attn_mult))
    eta_a = np.minimum(np.array([p.get(n, em) for n in keys])[of] * mult, em)
    scale = np.array([p.get(n, 1.0) for n in k.scale_keys])[k.scale_of]
    return k.a + (k.c_d / eta_d + k.c_a / eta_a) / scale


def predict(rows: list[FitRow] | _Pack, p: dict[str, float], p0: dict[str, float],
            s0: np.ndarray | None = None, own: bool = False) -> np.ndarray:
    """The rows' predictions under ``p``, from the shipped ones under ``p0`` (``s0``: _S at p0,
    when the caller holds it); ``own``: each row reads its own kernel's value in ``p`` (a fit's
    result, where _prior has set each TIED kernel from its reference), else the fit's reading."""
    k = rows if isinstance(rows, _Pack) else _pack(rows)
    ratio = (_S(k, p0, own=True) if s0 is None else s0) / _S(k, p, own=own)
    return np.where(k.time_like, k.pred0 / ratio, k.pred0 * ratio)


def loss(rows: list[FitRow] | _Pack, p: dict[str, float], p0: dict[str, float],
         s0: np.ndarray | None = None) -> float:
    k = rows if isinstance(rows, _Pack) else _pack(rows)
    return float(np.mean(np.abs(np.log(predict(k, p, p0, s0) / k.published))))


def _losses(k: _Pack, p: dict[str, float], n: str, vals: np.ndarray, p0: dict[str, float],
            s0: np.ndarray) -> np.ndarray:
    """loss(k, {**p, n: v}, p0, s0) for every v of ``vals`` at once: the same element-wise
    arithmetic as _S, predict and loss, on a (values x rows) array."""
    col = np.asarray(vals, dtype=float)[:, None]
    em = col if n == "eta_max" else np.full((1, 1), p["eta_max"])
    wh = col if n == "W_half" else p["W_half"]
    eta_d = em * k.w / (k.w + wh * 1e9)

    def grid(keys, fallback):
        """(values x keys): ``n``'s values in its column, the others' values in ``p`` (the
        ``fallback`` where ``p`` has none), as _S reads them."""
        return np.concatenate([col if key == n else np.broadcast_to(
            p[key] if key in p else fallback, (len(col), 1)) for key in keys], axis=1)
    eta_a = np.minimum(grid(k.attn_keys, em)[:, k.attn_of] * k.attn_mult, em)
    scale = grid(k.scale_keys, 1.0)[:, k.scale_of]
    ratio = s0 / (k.a + (k.c_d / eta_d + k.c_a / eta_a) / scale)
    pred = np.where(k.time_like, k.pred0 / ratio, k.pred0 * ratio)
    return np.mean(np.abs(np.log(pred / k.published)), axis=1)


def informed(rows: list[FitRow], names: tuple[str, ...]) -> list[str]:
    """The parameters in ``names`` that ``rows`` depend on and can tell apart: one row fixes
    eta_max alone; W_half needs GEMMs of two sizes."""
    if len(rows) == 1:
        return [n for n in names if n == "eta_max"]
    out = []
    for n in names:
        if n == "eta_max" or (n == "W_half" and len({round(r.W, -6) for r in rows}) > 1):
            out.append(n)
        elif n == "eta_u" and any(not r.kernel and r.c_a > 0 for r in rows):
            out.append(n)
        elif n.startswith("eta_a:") and any(_tie(r)[0] == n and r.c_a > 0 for r in rows):
            out.append(n)
        elif (n.startswith("scale:") and any(r.gpu == n[6:] for r in rows)
              and any(r.gpu not in SCALED for r in rows)):  # a ratio needs both sides
            out.append(n)
    return out


def fit(rows: list[FitRow], p0: dict[str, float], names: tuple[str, ...],
        start: dict[str, float] | None = None, sweeps: int = SWEEPS) -> dict[str, float]:
    """Coordinate descent over GRIDS of the parameters ``names`` the rows inform, from the
    shipped values (or, given ``start``, from its value for each informed parameter, keyed by
    the name before any ':'); the others stay shipped. Kernel efficiencies stay <= eta_max
    (the executed-FLOP rate of attention never above the GEMM curve's ceiling)."""
    rows = [r for r in rows if r.fitted]
    group = rows[0].group if rows else None
    free = informed(rows, names)
    p = _start(p0, names, free, start)
    if not rows or not free:
        return _prior(p, names, free, group)
    k = _pack(rows)
    return _descend(k, _S(k, p0, own=True), p, p0, free, names, group, sweeps)


def _descend(k: _Pack, s0: np.ndarray, p: dict[str, float], p0: dict[str, float],
             free: list[str], names: tuple[str, ...], group: str | None,
             sweeps: int) -> dict[str, float]:
    """fit's coordinate descent of the ``free`` parameters from ``p`` (``k``, ``s0``: the rows
    packed and their step at ``p0``, built once per row set)."""
    for _ in range(sweeps):
        moved = False
        for n in free:
            best = (loss(k, p, p0, s0), p[n])
            vals = GRIDS[n][GRIDS[n] <= p["eta_max"]] if n.startswith("eta_a:") else GRIDS[n]
            # every grid value's loss at once, then the scan in grid order: a value replaces
            # the best only when lower by more than 1e-12
            for v, lo in zip(vals.tolist(), _losses(k, p, n, vals, p0, s0).tolist()):
                if lo < best[0] - 1e-12:
                    best = (lo, float(v))
            moved = moved or best[1] != p[n]
            p[n] = best[1]
        if not moved:  # a sweep that changes nothing: converged
            break
    for n in free:  # a kernel value above the ceiling only ties with it (_S caps it): cap it
        if n.startswith("eta_a:"):
            p[n] = min(p[n], p["eta_max"])
    return _prior(p, names, free, group)


def _start(p0: dict[str, float], names: tuple[str, ...], free: list[str],
           start: dict[str, float] | None) -> dict[str, float]:
    """The descent's first point: the shipped values, each informed parameter at ``start``'s
    value (keyed by the name before any ':') when given, an uninformed scale factor at 1."""
    p = dict(p0)
    if start:
        p.update({n: start[n.split(":")[0]] for n in free if n.split(":")[0] in start})
    for n in names:  # a factor the rows cannot tell apart from the curve: the prior, no factor
        if n.startswith("scale:") and n not in free and n in p:
            p[n] = 1.0
    return p


def fit_best(rows: list[FitRow], p0: dict[str, float], names: tuple[str, ...],
             starts: tuple | None = None, sweeps: int | None = None) -> dict[str, float]:
    """fit from each of ``starts`` (None: the shipped values), run to convergence, and the
    refit of least training loss (the first on a tie): the coordinate descent's optimum
    depends on its start where the rows leave the loss flat or with several minima, and a
    start at the shipped values (fitted with every source) carries a held-out source into its
    own refit (round 26, benchmarks/loso_start.py)."""
    starts = STARTS if starts is None else starts
    sweeps = MAX_SWEEPS if sweeps is None else sweeps
    if not starts:
        raise ValueError("fit_best needs at least one start (None: the shipped values)")
    fitted = [r for r in rows if r.fitted]
    free = informed(fitted, names)
    if not fitted or not free:
        return fit(rows, p0, names, None, sweeps)
    k = _pack(fitted)
    s0 = _S(k, p0, own=True)
    best = None
    for st in starts:
        p = _descend(k, s0, _start(p0, names, free, st), p0, free, names, fitted[0].group,
                     sweeps)
        lo = loss(k, p, p0, s0)
        if best is None or lo < best[0] - 1e-12:
            best = (lo, p)
    return best[1]


def _prior(p: dict[str, float], names: tuple[str, ...], free: list[str],
           group: str | None = None) -> dict[str, float]:
    """``p`` with each PRIOR parameter the fit's rows do not inform set to its stand-in, and
    each TIED kernel of ``group`` at its reference's value times its ratio (refitted or not:
    the value the fit's rows read, _S)."""
    for n, like in PRIOR.items():
        if n in names and n not in free and like in p:
            p[n] = p[like]
    for n, (ref, ratio) in TIED.get(group, {}).items():
        if n in names and ref in p:
            p[n] = p[ref] * ratio
    return p


@record
class LosoResult:
    predictions: dict          # case key -> LOSO prediction (refitted without its source)
    full_fit: dict             # group -> parameters fitted on every row of the group
    shipped: dict              # group -> the catalog's parameters
    names: tuple               # the parameters refitted
    folds: dict                # group -> the sources that inform it


def loso(rows: list[FitRow], shipped: dict[str, dict], names: tuple[str, ...],
         starts: tuple | None = None, sweeps: int | None = None,
         exact: bool = True) -> LosoResult:
    """For each group and each source among its rows: refit without the source (fit_best from
    ``starts``, STARTS by default; ``(None,)`` and 4 sweeps is the refit before round 26,
    from the shipped values), predict it: by the step model at the refit (FitRow.exact, since
    round 27) where the row carries it and ``exact``, else by the fit's own linearised step
    (:func:`predict`; ``exact=False`` prices every row so). A fold without a fitted row
    keeps the shipped values."""
    preds: dict[int, float] = {}
    full, folds = {}, {}
    for g, p0 in shipped.items():
        mine = [r for r in rows if r.group == g]
        if not mine:
            continue
        full[g] = fit_best(mine, p0, names, starts, sweeps)
        folds[g] = sorted({r.fold for r in mine})
        for f in folds[g]:
            train = [r for r in mine if r.fold != f]
            test = [r for r in mine if r.fold == f]
            refit = any(r.fitted for r in train)  # rows to fit on (else the shipped values)
            p = fit_best(train, p0, names, starts, sweeps) if refit else p0
            # each row at its own kernel's value in the refit (_prior sets a TIED one from its
            # reference); nothing to refit on (no other source): the shipped values
            for r, v in zip(test, predict(test, p, p0, own=True)):
                preds[r.key] = float(r.exact(p, p0) if exact and r.exact is not None and refit
                                     else v)
    return LosoResult(preds, full, shipped, names, folds)
