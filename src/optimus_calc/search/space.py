"""Enumerate every layout of a cluster as columns of numpy arrays."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from optimus_calc.evaluate.shapes import tp_degrees
from optimus_calc.specs.model import Model
from optimus_calc.specs.training import Offload, Recompute

OFFLOAD_CODES = [Offload.NONE, Offload.CPU, Offload.NVME, Offload.SMARTNIC, Offload.SUPERCHIP]
RECOMPUTE_CODES = [Recompute.NONE, Recompute.SELECTIVE, Recompute.FULL]
# Search bounds (not physics): context parallelism is searched from 32K-token sequences, up to
# 16-way; interleaving up to 8 model chunks per GPU. Widen them here if a model calls for it.
LONG_CONTEXT = 32768
MAX_CP = 16


def divisors(n: int) -> list[int]:
    """The divisors of ``n`` in ascending order, from its prime factorisation (trial division
    up to sqrt(n), so 1e8 takes about 1e4 steps instead of 1e8)."""
    if n < 1:
        return []
    factors: list[tuple[int, int]] = []
    m, p = n, 2
    while p * p <= m:
        if m % p == 0:
            e = 0
            while m % p == 0:
                m //= p
                e += 1
            factors.append((p, e))
        p += 1 if p == 2 else 2
    if m > 1:
        factors.append((m, 1))
    out = [1]
    for prime, exp in factors:
        out = [d * prime ** k for d in out for k in range(exp + 1)]
    return sorted(out)


@dataclass
class Space:
    tp: np.ndarray
    pp: np.ndarray
    dp: np.ndarray
    cp: np.ndarray
    ep: np.ndarray
    zero: np.ndarray
    offload: np.ndarray     # index into OFFLOAD_CODES
    recompute: np.ndarray   # index into RECOMPUTE_CODES
    sp: np.ndarray
    mb: np.ndarray
    v: np.ndarray
    grid: tuple | None = None  # (base (nb x 7), switches (ns x 4), keep mask): see views()

    def __len__(self) -> int:
        return int(self.tp.size)

    def take(self, idx) -> "Space":
        return Space(**{k: getattr(self, k)[idx] for k in FIELDS})

    def views(self) -> dict[str, np.ndarray]:
        """Arrays to evaluate on. With a grid, grid-point columns have shape (nb, 1) and switch
        columns (1, ns): numpy broadcasting then computes what depends only on the grid point
        once per point instead of once per layout."""
        if self.grid is None:
            return {k: getattr(self, k) for k in FIELDS}
        base, sw, _ = self.grid
        out = {k: base[:, j][:, None] for j, k in enumerate(BASE_COLS)}
        out.update({k: sw[:, j][None, :] for j, k in enumerate(SWITCH_COLS)})
        return out

    def finish(self, x) -> np.ndarray:
        """A result on the views' shape, as one value per layout of the flat space."""
        if self.grid is None:
            return np.broadcast_to(x, self.tp.shape)
        base, sw, keep = self.grid
        return np.broadcast_to(x, (len(base), len(sw))).reshape(-1)[keep]


FIELDS = ("tp", "pp", "dp", "cp", "ep", "zero", "offload", "recompute", "sp", "mb", "v")
BASE_COLS = ("tp", "pp", "dp", "cp", "ep", "mb", "v")
SWITCH_COLS = ("zero", "offload", "recompute", "sp")


def enumerate_space(model: Model, gpus: int, gpus_per_node: int, global_batch: int,
                    seq_len: int, offloads: list[Offload], zero_stages=(0, 1, 2, 3),
                    recomputes=RECOMPUTE_CODES, max_interleave: int = 8) -> Space:
    """Every (tp, pp, cp, ep, dp) grid point that divides out, times the other switches.

    TP: divisors of the node's GPUs (TP inside a node first) that divide the heads and are
    compatible with the KV heads. PP: divisors of what is left, at most the layer count
    (uneven layer splits allowed). CP only for long sequences, EP only for MoE models.
    Micro-batch: divisors of the per-replica batch. Interleaving: model chunks that divide the
    layers of a stage, with the micro-batches a multiple of PP (Megatron's rule).
    """
    grids = []
    tps = [t for t in tp_degrees(model, gpus_per_node) if gpus % t == 0]
    cps = [c for c in divisors(gpus) if seq_len % c == 0 and c <= MAX_CP] \
        if seq_len >= LONG_CONTEXT else [1]
    for t in tps:
        for c in cps:
            rest = gpus // t
            if rest % c:
                continue
            for p in divisors(rest // c):
                if p > model.layers:
                    continue
                d = rest // c // p
                if global_batch % d:
                    continue
                eps = [e for e in divisors(d * c) if model.experts % e == 0] \
                    if model.is_moe else [1]
                per_replica = global_batch // d
                for e in eps:
                    for mb in divisors(per_replica):
                        m = per_replica // mb
                        vs = [1]
                        if p > 1 and m % p == 0:
                            vs += [v for v in range(2, max_interleave + 1)
                                   if model.layers % (p * v) == 0]
                        for v in vs:
                            grids.append((t, p, d, c, e, mb, v))
    base = np.array(grids, dtype=np.int64).reshape(-1, 7)
    sw = list(itertools.product(zero_stages, [OFFLOAD_CODES.index(o) for o in offloads],
                                range(len(RECOMPUTE_CODES)), (0, 1)))
    sw = [s for s in sw if RECOMPUTE_CODES[s[2]] in recomputes]
    swa = np.array(sw, dtype=np.int64).reshape(-1, 4)
    nb, ns = len(base), len(swa)
    bi = np.repeat(np.arange(nb), ns)
    si = np.tile(np.arange(ns), nb)
    keep = (swa[si, 3] == 0) | (base[bi, 0] > 1)  # sequence parallelism only with TP
    b, s = base[bi[keep]], swa[si[keep]]
    return Space(tp=b[:, 0], pp=b[:, 1], dp=b[:, 2], cp=b[:, 3], ep=b[:, 4], mb=b[:, 5],
                 v=b[:, 6], zero=s[:, 0], offload=s[:, 1], recompute=s[:, 2], sp=s[:, 3],
                 grid=(base, swa, keep))
