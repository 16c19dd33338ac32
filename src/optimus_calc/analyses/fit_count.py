"""`fit COUNT --solve layers --model-states-only`: the largest bare parameter count that fits,
as `memory` judges it (split from analyses/fit.py, which reads it)."""

from __future__ import annotations

import math
from typing import Callable

from optimus_calc.evaluate.context import Hardware
from optimus_calc.evaluate.memory import estimate_memory
from optimus_calc.record import record
from optimus_calc.specs.assumptions import Assumptions
from optimus_calc.specs.model import BareModel
from optimus_calc.specs.training import Layout, Training
from optimus_calc.units import MAX_COUNT  # BareModel's bound on a parameter count

# counts either side of floor(usable / a) searched for the largest that fits: a, read from the
# memory model in floating point, is off by a few units in the last place, which moves a count
# of 1e10-1e16 by at most one or two (a cold review found one off)
ROUNDING_COUNTS = 3


@record
class FitResult:
    solve: str
    value: float | None          # max_layers / min_nodes / max_micro_batch / max_params
    max_params: float | None = None
    method: str = ""
    equation: str = ""
    detail: str = ""
    unbounded: bool = False      # no bound: nothing that grows with the answer fills up
    offload_bound: bool = False  # the offload side (host RAM, NVMe, a card) binds, not the GPU
    tried_to: float | None = None  # nodes, no answer: the largest count searched


def solve_params_closed_form(hw: Hardware, layout: Layout, tr: Training,
                             asm: Assumptions | None = None) -> FitResult:
    """Model states only, a bare parameter count Psi: the most-loaded GPU's weights, gradients
    and optimizer state are a Psi (memory.weights_bytes, gradients_bytes, optimizer_bytes with
    P = Psi / (t p); a bare count keeps nothing resident), so the GPU holds Psi up to the
    usable capacity (the GPU's memory less the gpu_headroom margin) / a, a read from the memory
    model itself. Where the offload device or the host (RAM, NVMe, a SmartNIC without spill)
    binds first, the largest Psi `memory` says fits is searched by bisection on its verdict
    (monotone in Psi). Either way the answer is the largest whole count `memory` says fits. No
    symbolic solve at run time (sympy's took ~1 s)."""
    from optimus_calc.evaluate.engine import usable_gpu_bytes
    asm = asm or Assumptions()

    def fits(psi: float) -> bool:
        return estimate_memory(BareModel(name="Psi", total_params=psi), hw, layout, tr,
                               asm).fits
    a = estimate_memory(BareModel(name="Psi", total_params=1e9), hw, layout, tr,
                        asm).worst.total_bytes / 1e9  # bytes per parameter on the GPU
    cap = usable_gpu_bytes(hw, asm)
    equation = f"{_coefficient_text(a)} = {cap:.4g} bytes"
    method = "closed form (linear in Psi)"
    gpu = min(float(math.floor(cap / a)), MAX_COUNT) if a > 0 else None
    if gpu is not None:  # the closed form's count, give or take the rounding of a
        near = _largest_whole(fits, max(gpu - ROUNDING_COUNTS, 1.0),
                              min(gpu + ROUNDING_COUNTS, MAX_COUNT))
        # at the window's bottom edge the offload side may bind lower: the bisection below
        if near is not None and (near > gpu - ROUNDING_COUNTS or gpu <= ROUNDING_COUNTS + 1):
            return FitResult("params", near, near, method, equation,
                             f"Psi = {near:.4g} parameters" + (
                                 f" (the count's bound, {MAX_COUNT:.0e})" if near >= MAX_COUNT
                                 else ""))
    top = gpu if gpu is not None else MAX_COUNT
    if fits(top):  # every state offloaded and the offload side holds the count's bound
        return FitResult("params", top, top, method, equation,
                         f"Psi = {top:.4g} parameters, the count's bound: the GPU keeps no model "
                         "state that grows with it and the offload side holds it",
                         unbounded=True)
    if not fits(1.0):
        return FitResult("params", None, None, "bisection on memory's verdict", equation,
                         "even 1 parameter does not fit (the offload side)")
    lo, hi = 1.0, top
    while hi / lo > 1 + 1e-9:  # geometric bisection: ~60 evaluations over 16 decades
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    best = _largest_whole(fits, math.floor(lo), math.ceil(hi))
    why = ("; the GPU alone would hold " + f"{gpu:.4g}") if gpu is not None else \
        "; nothing on the GPU grows with it"
    return FitResult("params", best, best, method + ", then bisection on memory's verdict",
                     equation, f"Psi = {best:.4g} parameters: the offload side binds first{why}",
                     offload_bound=True)


def _largest_whole(fits: Callable[[float], bool], lo: float, hi: float) -> float | None:
    """The largest whole count in [lo, hi] that fits (monotone: fits, then not), or None."""
    lo, hi = float(math.floor(lo)), float(math.floor(hi))
    if not fits(lo):
        return None
    if fits(hi):
        return hi
    while hi - lo > 1:  # lo fits, hi does not
        mid = float(math.floor((lo + hi) / 2))
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


def _coefficient_text(a: float) -> str:
    """``a*Psi`` as sympy.sstr writes an exact rational (67*Psi/16, Psi/32, 4*Psi, 0) where
    ``a`` is one to the float's precision, else a decimal."""
    from fractions import Fraction
    per = Fraction(a).limit_denominator(1 << 20)
    if abs(float(per) - a) > 4e-16 * max(abs(a), 1.0):
        return f"{a:.10g}*Psi"
    if per == 0:
        return "0"
    return (("Psi" if per.numerator == 1 else f"{per.numerator}*Psi")
            + (f"/{per.denominator}" if per.denominator > 1 else ""))
