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
from optimus_calc.record import record


# figures that scale with the step time, and rates that scale with its inverse
TIME_FIGURES = ("step_time_s", "train_days", "gpu_hours", "energy_MWh", "cost_usd")
RATE_FIGURES = ("tokens_per_s", "mfu", "tflops_per_gpu")
MEMORY_FIGURES = ("gpu_memory_bytes",)
# Residual kinds (regime_residuals.py): "throughput" (TFLOP/s), "step_time", "memory".
TIME_KINDS = ("throughput", "step_time")


@record
class Regime:
    gpu_family: str    # a100, h100, v100, b200 ... (gpu_family)
    framework: str     # frameworks.Framework value
    offload: str       # specs.training.Offload value
    model_class: str   # dense or moe

    def __str__(self) -> str:
        return f"{self.gpu_family} x {self.framework} x offload {self.offload} x {self.model_class}"


def gpu_family(gpu_name: str) -> str:
    """The family of a catalog GPU name: its first word (a100-80gb, a100-40gb -> a100)."""
    return str(gpu_name).lower().split("-")[0]


def model_class(model) -> str:
    return "moe" if getattr(model, "experts", 0) else "dense"


def regime_of(gpu_name: str, framework: str, offload: str, model) -> Regime:
    """THE regime key: the one place that says which public cases are like a layout."""
    return Regime(gpu_family(gpu_name), framework, str(offload), model_class(model))


@record
class ErrorRange:
    status: str              # "public", "profile" or "unvalidated"
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


def _residuals():
    from optimus_calc.regime_residuals import RESIDUALS
    return RESIDUALS


def _match(rows, kinds, keys: set, any_gpu: bool = False):
    """Residual rows of ``kinds`` whose regime is one of ``keys`` (GPU family ignored with
    ``any_gpu``)."""
    if any_gpu:
        keys = {Regime("*", k.framework, k.offload, k.model_class) for k in keys}
    return [r for r in rows if r[6] in kinds
            and Regime("*" if any_gpu else r[2], r[3], r[4], r[5]) in keys]


def error_range(gpu_name: str, frameworks, offload: str, model, profile=None,
                memory: bool = False, precision: str = "bf16") -> ErrorRange:
    """The range of a layout's time figures (or, with ``memory``, its GPU memory): the public
    cases of its regime (any of the ``frameworks`` that run it), or the profile's leave-one-out
    error on the GPU the profile was fitted on. FP8 runs have no public case among them (the
    FP8 GEMM efficiency is fitted on one torchtitan pair, tests/test_fp8.py): unvalidated."""
    if precision == "fp8":
        return ErrorRange("unvalidated", None, None, 0,
                          "no public FP8 case in validate; fp8_gemm_efficiency fitted on "
                          "torchtitan's Float8 table")
    if (not memory and profile is not None and profile.loo_error_low is not None
            and profile.fitted_on(gpu_name)):
        return ErrorRange("profile", profile.loo_error_low, profile.loo_error_high,
                          profile.runs, f"leave-one-out over the {profile.runs} runs of "
                                        f"profile {profile.path}")
    names = [str(getattr(f, "value", f)) for f in frameworks]
    keys = {regime_of(gpu_name, fw, str(offload), model) for fw in names}
    # memory arithmetic does not depend on the GPU: its cases count on every GPU
    rows = _match(_residuals(), ("memory",) if memory else TIME_KINDS, keys, any_gpu=memory)
    where = (f"{'any GPU' if memory else gpu_family(gpu_name)} x "
             f"{'/'.join(names) or 'no framework'} x offload {offload} x {model_class(model)}")
    if not rows:
        return ErrorRange("unvalidated", None, None, 0, f"no public case like this ({where})")
    eps = [r[7] for r in rows]
    return ErrorRange("public", min(eps), max(eps), len(rows),
                      f"{len(rows)} public case{'s' if len(rows) > 1 else ''} like this")


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
