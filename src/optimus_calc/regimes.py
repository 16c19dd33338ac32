"""Error ranges on headline figures, from the residuals of `validate`'s public cases in the same
regime (GPU family x framework x offload kind x model class, :func:`regime_of`).

The residuals are a generated table (regime_residuals.py: ``python -m optimus_calc.validate``
rewrites it; tests/test_regimes.py checks it against validate.run_all), so no command re-runs
the public cases. A calibration profile's leave-one-out error replaces the public range on the
GPU it was fitted on.

Every residual is normalised to the step-time sense, eps = predicted step time / true step time
- 1 (a throughput case's error e = predicted / published TFLOP/s - 1 gives eps = 1 / (1 + e) - 1),
or, for memory, eps = predicted bytes / true bytes - 1. A figure F predicted as P then lies in
P / (1 + max eps) .. P / (1 + min eps) when it grows with time (step time, days, GPU-hours,
energy, cost, memory) and P (1 + min eps) .. P (1 + max eps) when it is a rate (tokens/s, MFU).
"""

from __future__ import annotations

import functools

from optimus_calc.record import record


# figures that scale with the step time, and rates that scale with its inverse
TIME_FIGURES = ("step_time_s", "train_days", "gpu_hours", "energy_MWh", "cost_usd")
RATE_FIGURES = ("tokens_per_s", "mfu", "tflops_per_gpu")
MEMORY_FIGURES = ("gpu_memory_bytes",)
# Residual kinds (regime_residuals.py): "throughput" (TFLOP/s), "step_time", "memory".
TIME_KINDS = ("throughput", "step_time")


# The longest sequence a public case holds: NeMo's 1,048,576-token rows (public_cases_long.py;
# tests/test_regimes.py checks it against the cases); past it, as past PUBLIC_MAX_GPUS, a band
# of its own that no case matches
PUBLIC_MAX_SEQ = 1048576
SEQ_BANDS = ("<=8K", "8K-32K", ">32K", f">{PUBLIC_MAX_SEQ // 1024}K")  # tokens per sequence
# The largest run a public case holds: the Llama 3 paper's 16,384 H100 (2,048 nodes of 8;
# public_cases_long.llama3_rows; tests/test_regimes.py checks it against the cases). Past it
# a prediction is an extrapolation: its own band, which no case matches. Counted in GPUs, not
# nodes: nodes hold 1 (GH200) to 72 (NVL72) GPUs, or --gpus-per-node's
PUBLIC_MAX_GPUS = 16384
SCALE_BANDS = ("1 node", "<=16 nodes", ">16 nodes", f">{PUBLIC_MAX_GPUS} GPUs")


@record
class Regime:
    gpu_family: str    # a100, h100, v100, b200 ... (gpu_family)
    framework: str     # frameworks.Framework value
    offload: str       # specs.training.Offload value
    model_class: str   # dense or moe
    precision: str = "16-bit"  # 16-bit (bf16 or fp16), fp8, fp32 (precision_class)
    seq_band: str = "<=8K"     # SEQ_BANDS
    scale_band: str = "1 node"  # SCALE_BANDS

    def __str__(self) -> str:
        return (f"{self.gpu_family} x {self.framework} x offload {self.offload} x "
                f"{self.model_class} x {self.precision} x seq {self.seq_band} x "
                f"{self.scale_band}")

    @property
    def key(self) -> tuple:
        return (self.gpu_family, self.framework, self.offload, self.model_class, self.precision,
                self.seq_band, self.scale_band)


def gpu_family(gpu_name: str) -> str:
    """The family of a catalog GPU name: its first word (a100-80gb, a100-40gb -> a100)."""
    return str(gpu_name).lower().split("-")[0]


def model_class(model) -> str:
    return "moe" if getattr(model, "experts", 0) else "dense"


def precision_class(precision: str) -> str:
    """fp16 and bf16 run the same 16-bit tensor-core peak: one class."""
    p = str(getattr(precision, "value", precision))
    return "16-bit" if p in ("bf16", "fp16") else p


def seq_band(seq_len: int, kernel: str = "") -> str:
    """The sequence band; past 8K tokens with the attention kernel that ran (``kernel``: fa1,
    fa2, fa3, cudnn, "unfused"), where the kernel's efficiency sets much of the step (a
    FlashAttention-1 row does not validate a FlashAttention-2 prediction at 64K)."""
    band = (SEQ_BANDS[0] if seq_len <= 8192 else SEQ_BANDS[1] if seq_len <= 32768
            else SEQ_BANDS[2] if seq_len <= PUBLIC_MAX_SEQ else SEQ_BANDS[3])
    return f"{band} {kernel}" if kernel and seq_len > 8192 else band


def scale_band(nodes: int, gpus: int | None = None) -> str:
    """Past the largest public run (``gpus`` > PUBLIC_MAX_GPUS); else 1 node, up to 16, more."""
    if gpus is not None and gpus > PUBLIC_MAX_GPUS:
        return SCALE_BANDS[3]
    return SCALE_BANDS[0] if nodes <= 1 else SCALE_BANDS[1] if nodes <= 16 else SCALE_BANDS[2]


def regime_for(gpu_name: str, framework: str, offload: str, model, precision: str = "bf16",
               seq_len: int = 2048, nodes: int = 1, kernel: str = "",
               gpus: int | None = None) -> Regime:
    """THE regime key: the one place that says which public cases are like a layout (GPU
    family x framework x offload x dense/MoE x precision x sequence band, with the attention
    kernel past 8K, x scale band)."""
    return Regime(gpu_family(gpu_name), framework, str(offload), model_class(model),
                  precision_class(precision), seq_band(seq_len, kernel), scale_band(nodes, gpus))


def regime_of(gpu_name: str, framework: str, offload: str, model) -> Regime:
    """The coarse key (GPU family x framework x offload x model class) at the default bands."""
    return regime_for(gpu_name, framework, offload, model)


@record
class ErrorRange:
    status: str              # "public", "profile", "widened" or "unvalidated"
    eps_low: float | None    # step-time-sense residuals (module docstring)
    eps_high: float | None
    count: int
    basis: str               # what the range is derived from

    def bounds(self, figure: str, value: float | None) -> tuple[float | None, float | None]:
        """The range of ``value``; it always contains the value itself (residuals of one sign,
        say two cases -3% and -5%, widen to 0 on the other side: a few cases do not prove the
        prediction wrong by at least the smaller residual)."""
        if value is None or self.eps_low is None or self.eps_high is None:
            return None, None
        lo, hi = min(self.eps_low, 0.0), max(self.eps_high, 0.0)
        if figure in RATE_FIGURES:
            return value * (1 + lo), value * (1 + hi)
        return value / (1 + hi), value / (1 + lo)

    def text(self, figure: str, value: float) -> str:
        """"(-8% / +12%, 14 public cases like this)" or "(unvalidated: ...)"."""
        lo, hi = self.bounds(figure, value)
        if lo is None or hi is None or not value:
            return f"(unvalidated: {self.basis})"
        return f"({lo / value - 1:+.0%} / {hi / value - 1:+.0%}, {self.basis})"


@functools.lru_cache(maxsize=1)
def _residuals() -> tuple:
    """The generated table's cases as rows (section, None, *regime, kind, eps, loso) (read
    once: the table is a constant; the case names are validate's, not needed here)."""
    from optimus_calc.regime_residuals import BY_REGIME
    return tuple((sec, None, *key, eps, loso) for key, rows in BY_REGIME.items()
                 for sec, eps, loso in rows)


# Residual rows (regime_residuals.py): (section, case, gpu family, framework, offload, model
# class, precision, seq band, scale band, kind, eps in-sample, eps leave-one-source-out or None)
KEY = slice(2, 9)
KIND, EPS, LOSO = 9, 10, 11
# The order in which a regime is widened when no public case matches it: the scale band
# first, then the sequence band, the framework, the precision, the model class, the GPU
WIDEN = (6, 5, 1, 4, 3, 0)


def _match(kinds, key: tuple, free=()):
    """Residual rows of ``kinds`` whose regime equals ``key`` except at the ``free`` positions
    (indices into Regime.key), in the table's order."""
    return _index(tuple(kinds), len(key), tuple(free)).get(
        tuple(v for i, v in enumerate(key) if i not in free), [])


@functools.lru_cache(maxsize=64)
def _index(kinds: tuple, n: int, free: tuple) -> dict[tuple, list]:
    """The rows of ``kinds`` by their regime less the ``free`` positions (built once per
    kinds and free positions: every step and plan report asks for its error ranges)."""
    at = [KEY.start + i for i in range(n) if i not in free]
    out: dict[tuple, list] = {}
    for r in _residuals():
        if r[KIND] in kinds and len(r[KEY]) == n:
            out.setdefault(tuple(r[j] for j in at), []).append(r)
    return out


def _cv(r) -> float:
    """A row's cross-validated residual (leave-one-source-out), or in-sample where the row's
    parameters have no fit (LOSO column None)."""
    return r[LOSO] if r[LOSO] is not None else r[EPS]


def vouching_frameworks(physics, running) -> list[str]:
    """Whose public rows vouch for a figure: those of ``physics``, the frameworks whose
    profile timed it (their rows ran that physics); with framework-neutral physics (empty),
    every framework in ``running`` and the rows of no named framework ("none")."""
    return list(physics) if physics else [*running, "none"]


def error_range(gpu_name: str, frameworks, offload: str, model, profile=None,
                memory: bool = False, precision: str = "bf16", seq_len: int = 2048,
                nodes: int = 1, kernel: str = "", gpus: int | None = None) -> ErrorRange:
    """The range of a layout's time figures (or, with ``memory``, its GPU memory): the
    leave-one-source-out residuals of the public cases of its regime (any of the
    ``frameworks`` that run it), or the profile's leave-one-out error on the GPU the profile
    was fitted on. With no public case in the regime: "no public case like this", and the
    range widened to the worst residual of the nearest regime that has cases (WIDEN order)."""
    if (not memory and profile is not None and profile.loo_error_low is not None
            and profile.fitted_on(gpu_name)):
        return ErrorRange("profile", profile.loo_error_low, profile.loo_error_high,
                          profile.runs, f"leave-one-out over the {profile.runs} runs of "
                                        f"profile {profile.path}")
    names = [str(getattr(f, "value", f)) for f in frameworks] or ["none"]
    keys = [regime_for(gpu_name, fw, str(offload), model, precision, seq_len, nodes,
                       kernel, gpus).key for fw in names]
    kinds = ("memory",) if memory else TIME_KINDS
    # memory arithmetic does not depend on the GPU, precision class, sequence or scale band
    base_free = (0, 4, 5, 6) if memory else ()
    rows = [r for k in keys for r in _match(kinds, k, base_free)]
    r0 = Regime(*keys[0])
    where = (f"{'any GPU' if memory else r0.gpu_family} x {'/'.join(names)} x offload "
             f"{offload} x {r0.model_class}"
             + ("" if memory else f" x {r0.precision} x seq {r0.seq_band} x {r0.scale_band}"))
    if rows:  # the prediction itself stays inside its range (0 joins the residuals)
        eps = [_cv(r) for r in rows] + [0.0]
        return ErrorRange("public", min(eps), max(eps), len(rows),
                          f"{len(rows)} public case{'s' if len(rows) > 1 else ''} like this"
                          + ("" if memory else ", cross-validated"))
    free = tuple(base_free)
    for i in WIDEN:
        if i in free:
            continue
        free = free + (i,)
        near = [r for k in keys for r in _match(kinds, k, free)]
        if near:
            # a step-time residual below -1 has no meaning; 0.9 keeps the bounds finite
            worst = min(max(abs(_cv(r)) for r in near), 0.9)
            return ErrorRange("widened", -worst, worst, 0,
                              f"no public case like this ({where}); widened to the worst "
                              f"of the {len(near)} nearest public cases")
    return ErrorRange("unvalidated", None, None, 0, f"no public case like this ({where})")


def range_fields(figures: dict, time_range: ErrorRange, mem_range: ErrorRange | None = None
                 ) -> dict:
    """``<figure>_low`` / ``_high`` for every headline figure present in ``figures`` (None when
    unvalidated), and ``error_range``: status, count and basis."""
    out: dict = {}
    for k in TIME_FIGURES + RATE_FIGURES:
        if k in figures and figures[k] is not None:
            out[f"{k}_low"], out[f"{k}_high"] = time_range.bounds(k, figures[k])
    if mem_range is not None and figures.get("gpu_memory_bytes") is not None:
        out["gpu_memory_bytes_low"], out["gpu_memory_bytes_high"] = mem_range.bounds(
            "gpu_memory_bytes", figures["gpu_memory_bytes"])
    out["error_range"] = time_range.status
    out["error_range_basis"] = time_range.basis
    if mem_range is not None:
        out["memory_error_range"] = mem_range.status
    return out
