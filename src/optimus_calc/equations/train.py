"""Time, energy and cost to train on a token budget: the arithmetic behind ``--tokens``.

A step consumes global batch x sequence length tokens (Megatron-LM's --global-batch-size
sequences of --seq-length tokens), so a budget of T tokens takes T / (B s) steps. Steps x step
time is the end-to-end estimate of Narayanan et al., SC'21 section 5.1, eq. (4)
(8TP / (nX) written with the step time instead of per-GPU throughput). Steps are not rounded
up: the last partial step is counted as a fraction.

Energy counts GPU board power only (the catalog's ``tdp_W``, from the vendor datasheets) at
every second of the run, scaled by the facility's power usage effectiveness (PUE, the named
assumption ``pue``); CPUs, NICs, switches and storage are not counted, so energy is a bound
on the GPUs' share, not a metered total.
"""

from __future__ import annotations

from optimus_calc.equations.registry import equation, sym

T_tok = sym("T_tok", "training tokens (the --tokens budget)")
B_seq = sym("B_seq", "global batch, sequences per step", positive=True)
S_seq = sym("S_seq", "sequence length, tokens per sequence", positive=True)
t_step = sym("t_step", "step time, s")
n_gpu = sym("n_gpu", "GPUs in the job")
P_gpu = sym("P_gpu", "power of one GPU, W (board power, datasheet TDP)")
PUE = sym("PUE", "power usage effectiveness: facility power / IT power (assumed)")
c_gpu = sym("c_gpu", "price of one GPU-hour, USD")

SECONDS_PER_DAY = 86400
SECONDS_PER_HOUR = 3600
J_PER_MWH = 3_600_000_000  # an integer keeps the printed expression exact

NARAYANAN = ("Narayanan et al., SC'21, section 5.1 eq. (4): end-to-end time = tokens / "
             "throughput; steps = tokens / (global batch x sequence length)")

steps = equation(
    "train.steps", T_tok / (B_seq * S_seq), "steps", NARAYANAN,
    "Optimizer steps to consume the token budget (fractional: not rounded up).")

time_s = equation(
    "train.time_s", T_tok / (B_seq * S_seq) * t_step, "s", NARAYANAN,
    "Wall-clock training time: steps x step time (no restarts, checkpoints or evaluation).")

days = equation(
    "train.days", T_tok / (B_seq * S_seq) * t_step / SECONDS_PER_DAY, "days", NARAYANAN,
    "Wall-clock training time in days of 86,400 s.")

gpu_hours = equation(
    "train.gpu_hours", n_gpu * T_tok / (B_seq * S_seq) * t_step / SECONDS_PER_HOUR, "GPU-h",
    "definition: GPUs x wall-clock hours (as llm-analysis and cloud price lists count them)",
    "GPU-hours the job holds.")

energy_MWh = equation(
    "train.energy_mwh",
    n_gpu * P_gpu * PUE * T_tok / (B_seq * S_seq) * t_step / J_PER_MWH, "MWh",
    "energy = power x time; GPU power from the NVIDIA/AMD datasheets (catalog tdp_W); PUE "
    "as defined by The Green Grid (facility energy / IT equipment energy)",
    "Facility energy of the GPUs at board power for the whole run, times the PUE.")

cost_usd = equation(
    "train.cost_usd", c_gpu * n_gpu * T_tok / (B_seq * S_seq) * t_step / SECONDS_PER_HOUR,
    "USD", "definition: GPU-hours x the price per GPU-hour (--gpu-hour-price)",
    "Cost to train at a flat price per GPU-hour.")
