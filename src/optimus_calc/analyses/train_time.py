"""Time, energy and cost to train on a token budget (``--tokens``): pure arithmetic.

Takes a step time already computed (by evaluate.step or the planner) and applies the
equations of :mod:`optimus_calc.equations.train` through their compiled forms.
"""

from __future__ import annotations


from optimus_calc.equations.recording import eq as C
from optimus_calc.record import record


@record
class TrainTime:
    tokens: float            # the budget
    steps: float             # fractional steps to consume it
    time_s: float            # wall-clock seconds (train.time_s; the reports show days)
    train_days: float
    gpu_hours: float
    energy_MWh: float | None  # None when the GPU has no power figure in the catalog
    cost_usd: float | None    # None without a price per GPU-hour

    def data(self) -> dict:
        """The JSON/CSV fields, named as issue 13 asks."""
        return {"tokens": self.tokens, "steps": self.steps, "train_days": self.train_days,
                "gpu_hours": self.gpu_hours, "energy_MWh": self.energy_MWh,
                "cost_usd": self.cost_usd}


def train_time(step_time_s: float, tokens_per_step: float, tokens: float, gpus: int,
               gpu_power_W: float, pue: float, gpu_hour_price: float | None = None) -> TrainTime:
    """Steps, days, GPU-hours, energy (GPU board power x PUE) and cost for ``tokens``.

    ``tokens_per_step`` is global batch x sequence length; ``gpu_power_W`` 0 means unknown.
    """
    if not (step_time_s > 0 and tokens_per_step > 0 and tokens > 0 and gpus > 0):
        raise ValueError("train_time needs positive step time, tokens per step, tokens, GPUs")
    B, S = tokens_per_step, 1.0  # the equations take B x S; pass the product as B
    steps = float(C.train__steps(B, S, tokens))
    seconds = float(C.train__time_s(B, S, tokens, step_time_s))
    days = float(C.train__days(B, S, tokens, step_time_s))
    hours = float(C.train__gpu_hours(B, S, tokens, gpus, step_time_s))
    energy = (float(C.train__energy_mwh(B, pue, gpu_power_W, S, tokens, gpus, step_time_s))
              if gpu_power_W > 0 else None)
    cost = (float(C.train__cost_usd(B, S, tokens, gpu_hour_price, gpus, step_time_s))
            if gpu_hour_price is not None else None)
    return TrainTime(tokens=tokens, steps=steps, time_s=seconds, train_days=days, gpu_hours=hours,
                     energy_MWh=energy, cost_usd=cost)
