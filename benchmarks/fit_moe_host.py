"""Which form of the MoE host cost the public MoE rows support (docs/moe.md, "Drop-and-pad").

    .venv/bin/python benchmarks/fit_moe_host.py

Every MoE row of `validate` (public_cases*.py) enters with its step time T at the shipped
constants and K_f = dT/dt per MoE layer and micro-batch (validate_moe.host_row); the rows that
run token drop padded to capacity (Megatron-LM --moe-pad-expert-input-to-capacity: NeMo's
Mixtral, Megatron-Bridge 25.09) are marked. Each variant gives every row a host time h per MoE
layer and micro-batch from one or two constants, T(h) = T - K t0 - K_f f0 + K_f h, fits the
constants on a grid (least mean |log(predicted / published)|) and refits them without each
source (leave-one-source-out, validate_loso.fold_of). Printed: in-sample and LOSO mean |error|
of the MoE rows for the host constants alone (validate's LOSO column also refits the GEMM
curve; the shipped variant is C).
"""

from __future__ import annotations

import itertools

import numpy as np

from optimus_calc.catalog import load
from optimus_calc.specs.assumptions import Assumptions
from optimus_calc.validate_moe import host_row
from optimus_calc.validate_public import run_public


def rows():
    asm, out = Assumptions(), []
    for i, r in enumerate(run_public(load())):
        h = host_row(i, r, asm.moe_layer_host_s, asm.moe_layer_fixed_s)
        if h is not None:
            out.append((h, r.row.drop_pad, r.row.mbs * r.row.seq / r.row.cp,
                        r.setup.hw.gpu.name in ("b200", "gb200")))
    return out


def main() -> None:
    R = rows()
    h = [x[0] for x in R]
    T = np.array([x.T - x.K * x.t0 - x.K_f * x.f0 for x in h])
    Kf, P0, T0 = (np.array([x.K_f for x in h]), np.array([x.pred for x in h]),
                  np.array([x.T for x in h]))
    pub, fold = np.array([x.published for x in h]), np.array([x.fold for x in h])
    pad, tok, bw = (np.array([x[i] for x in R]) for i in (1, 2, 3))

    def pred(hh):
        return P0 * T0 / (T + Kf * hh)

    def err(p, idx):
        return np.mean(np.abs(np.log(p[idx] / pub[idx])))

    def run(name, grid, per_row):
        def fit(idx):
            return min(grid, key=lambda th: err(pred(per_row(th)), idx))
        th = fit(np.arange(len(h)))
        lo = np.zeros(len(h))
        for f in set(fold):
            m = fold == f
            lo[m] = pred(per_row(fit(np.where(~m)[0])))[m]
        ins, los = np.abs(pred(per_row(th)) / pub - 1), np.abs(lo / pub - 1)
        print(f"{name:52s} {', '.join(f'{t:.3g}' for t in th):22s} in {ins.mean():6.1%}  "
              f"LOSO {los.mean():6.1%}  (padded {los[pad].mean():6.1%}, dropless "
              f"{los[~pad].mean():6.1%})")

    ms = np.round(np.arange(0, 0.0201, 0.0002), 4)
    ms2 = np.round(np.arange(0, 0.0161, 0.0004), 4)
    us = np.arange(0, 3.01, 0.1) * 1e-6
    print(f"{len(h)} MoE rows, {pad.sum()} padded; constants in s (per token: s/token)")
    run("A one constant per layer-micro-batch, every row", [(t,) for t in ms],
        lambda th: np.full(len(h), th[0]))
    run("B the sync per layer-micro-batch, padded rows 0", [(t,) for t in ms],
        lambda th: np.where(pad, 0.0, th[0]))
    run("C launches (every row) + sync (dropless) [shipped]", list(itertools.product(ms2, ms2)),
        lambda th: th[0] + np.where(pad, 0.0, th[1]))
    run("D one constant per token, every row", [(t,) for t in us * 2],
        lambda th: th[0] * tok)
    run("E sync per token, padded rows 0", [(t,) for t in us * 2],
        lambda th: np.where(pad, 0.0, th[0] * tok))
    run("F launches per layer-micro-batch + sync per token", list(itertools.product(ms2, us)),
        lambda th: th[0] + np.where(pad, 0.0, th[1] * tok))
    run("G launches per token + sync per token", list(itertools.product(us, us)),
        lambda th: (th[0] + np.where(pad, 0.0, th[1])) * tok)
    g3 = np.round(np.arange(0.2, 2.01, 0.1), 2)
    run("I C x a Blackwell factor", list(itertools.product(ms2[::2], ms2[::2], g3)),
        lambda th: (th[0] + np.where(pad, 0.0, th[1])) * np.where(bw, th[2], 1.0))


if __name__ == "__main__":
    main()
