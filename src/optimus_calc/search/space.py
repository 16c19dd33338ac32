"""Enumerate every layout of a cluster as columns of numpy arrays."""

from __future__ import annotations

import functools
import math

import numpy as np

from optimus_calc.evaluate.shapes import max_chunks, tp_degrees
from optimus_calc.evaluate.stages import broadcast_small
from optimus_calc.specs.model import Model
from optimus_calc.evaluate.batch import offload_code, resolve_global_batch
from optimus_calc.specs.base import unvalidated
from optimus_calc.specs.training import RECOMPUTE_CODES, Offload, Training
from optimus_calc.record import record

# Search bounds (not physics), unless pinned: CP from 32K-token sequences, up to 16-way;
# interleaving up to 8 model chunks per GPU. Widen them here if a model calls for it.
LONG_CONTEXT = 32768
MAX_CP = 16
# Micro-batch candidates (a search bound, not physics): at most MAX_MICRO_BATCH sequences and
# MAX_MICRO_BATCH_TOKENS tokens per micro-batch. Past a million tokens a micro-batch's GEMMs are
# long saturated (efficiency.gemm_efficiency) while its activations keep growing, and without a
# bound a huge global batch has hundreds of divisors (99,792,000 has 640) that multiply the space.
MAX_MICRO_BATCH = 256
MAX_MICRO_BATCH_TOKENS = 1 << 20


def divisors(n: int) -> list[int]:
    """The divisors of ``n`` in ascending order, from its prime factorisation (trial division
    up to sqrt(n), so 1e8 takes about 1e4 steps instead of 1e8); the enumeration asks for the
    same few numbers thousands of times, so each is factorised once."""
    return list(_divisors(int(n)))


@functools.lru_cache(maxsize=4096)
def _divisors(n: int) -> tuple[int, ...]:
    if n < 1:
        return ()
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
    return tuple(sorted(out))


BASE_COLS = ("tp", "pp", "dp", "cp", "ep", "mb", "v", "gb")
SWITCH_COLS = ("zero", "offload", "recompute", "sp")
FIELDS = BASE_COLS + SWITCH_COLS + ("offload_params",)

# The offload axis holds variants: a strategy code, plus PARAMS for the same target with the
# ZeRO-3 weights offloaded too (--offload-params); views and columns split them back into the
# ``offload`` and ``offload_params`` columns, so the switch axes stay four.
PARAMS = 1 << 16


def offload_variant(code: int, params: bool) -> int:
    return int(code) + (PARAMS if params else 0)


def _split_offload(values, out: dict) -> None:
    """``offload`` (strategy codes) and ``offload_params`` (0/1) of offload-axis variants."""
    v = np.asarray(values)
    out["offload"] = v % PARAMS
    out["offload_params"] = v // PARAMS


@record
class Chunk:
    """Some grid points x every switch combination, as broadcast columns: each switch on an
    axis of its own (zero on axis 0, offload 1, recompute 2, sequence parallelism 3) and the
    grid points last, columns of shape (1, 1, 1, 1, nb). A term is then computed on the axes it
    depends on only (the weights on zero x offload x grid, activations on recompute x SP x
    grid); the full product is formed only where terms meet. The grid is last because numpy
    runs its inner loops along the last axis of a broadcast and the grid is the long one (the
    switches hold 2-4 values each): several times faster than along a switch. ``finish``
    flattens a result to one value per kept layout (C order over the five axes).

    ``paired``: the ZeRO and offload values are (zero, offload) pairs, both on axis 0 (the
    offload axis has length 1): the wanted pairs of a rule pattern that is no product
    (search/pools.py's blocks), evaluated without the pairs no framework runs."""

    base: np.ndarray                           # (nb, 8) BASE_COLS
    switches: tuple[np.ndarray, ...]           # values of SWITCH_COLS
    paired: bool = False

    @property
    def shape(self) -> tuple[int, ...]:
        n = [len(v) for v in self.switches]
        if self.paired:
            n[1] = 1
        return tuple(n) + (len(self.base),)

    def _axes(self) -> tuple[int, ...]:
        return (0, 0, 2, 3) if self.paired else (0, 1, 2, 3)

    def views(self) -> dict[str, np.ndarray]:
        nb = len(self.base)
        out = {k: np.ascontiguousarray(self.base[:, j]).reshape(1, 1, 1, 1, nb)
               for j, k in enumerate(BASE_COLS)}
        for axis, k, vals in zip(self._axes(), SWITCH_COLS, self.switches):
            shape = [1] * 5
            shape[axis] = len(vals)
            out[k] = np.asarray(vals).reshape(shape)
        _split_offload(out["offload"], out)
        return out

    @functools.cached_property
    def keep(self) -> np.ndarray:
        """Sequence parallelism only with TP, parameter offload only with ZeRO-3 (a full-shape
        boolean array)."""
        v = self.views()
        return np.broadcast_to(((v["sp"] == 0) | (v["tp"] > 1))
                               & ((v["offload_params"] == 0) | (v["zero"] == 3)),
                               self.shape).copy()

    def finish(self, x) -> np.ndarray:
        return np.broadcast_to(x, self.shape)[self.keep]

    def columns(self, sel) -> dict[str, np.ndarray]:
        """Field values of the kept layouts at flat positions ``sel``."""
        return self.columns_at(np.flatnonzero(self.keep)[sel])

    def columns_at(self, flat) -> dict[str, np.ndarray]:
        """Field values at flat positions of the full (switches x grid) shape."""
        ix = np.unravel_index(np.asarray(flat), self.shape)
        out = {k: self.base[ix[-1], j] for j, k in enumerate(BASE_COLS)}
        for axis, k, vals in zip(self._axes(), SWITCH_COLS, self.switches):
            out[k] = np.asarray(vals)[ix[axis]]
        _split_offload(out["offload"], out)
        return out


class Gather:
    """Sub-chunks with the same switch values, gathered until they hold ``limit`` layouts (grid
    points x switch combinations) and then yielded as one chunk with their masks stacked along
    the grid axis: the rules leave many small sub-chunks on a large space, and an evaluator
    call costs a few milliseconds whatever its size. Exact: the same layouts, fewer calls."""

    def __init__(self, limit: int):
        self.limit = max(1, limit)
        self.parts: dict[tuple, tuple] = {}  # key: (parts, layouts they hold)

    def add(self, chunk: Chunk, *masks: np.ndarray):
        """Yields the merged chunks this part completes (none, or one or two)."""
        key = (len(masks), chunk.paired) + tuple(tuple(np.asarray(v).tolist())
                                                 for v in chunk.switches)
        n = math.prod(chunk.shape)
        parts, size = self.parts.get(key, ([], 0))
        if parts and size + n > self.limit:
            yield self._merged(self.parts.pop(key)[0])  # never more than the limit at once
            parts, size = [], 0
        parts.append((chunk, masks))
        size += n
        if size >= self.limit:
            self.parts.pop(key, None)
            yield self._merged(parts)
        else:
            self.parts[key] = (parts, size)

    def flush(self):
        for key in list(self.parts):
            yield self._merged(self.parts.pop(key)[0])

    @staticmethod
    def _merged(parts: list) -> tuple:
        if len(parts) == 1:
            return (parts[0][0],) + tuple(parts[0][1])
        chunk = Chunk(np.concatenate([c.base for c, _ in parts]), parts[0][0].switches,
                      parts[0][0].paired)
        return (chunk,) + tuple(np.concatenate([m[i] for _, m in parts], axis=-1)
                                for i in range(len(parts[0][1])))


@record
class Space:
    """Every layout of a search, held as grid points x switch values (never one row per layout,
    so memory stays bounded by the grid), evaluated chunk by chunk."""

    base: np.ndarray
    switches: tuple[np.ndarray, ...]

    @property
    def switch_count(self) -> int:
        return int(np.prod([len(v) for v in self.switches]))

    def __len__(self) -> int:
        """The layouts kept (Chunk.keep): SP only with TP, parameter offload only with ZeRO-3."""
        tp1 = int((self.base[:, 0] == 1).sum())
        zero, off, rec, sp = (np.asarray(v) for v in self.switches)
        pairs = int(((off[None, :] < PARAMS) | (zero[:, None] == 3)).sum())  # zero x offload
        per = pairs * len(rec)
        return ((len(self.base) - tp1) * per * len(sp)
                + tp1 * per * int((sp == 0).sum()))

    def chunks(self, rows: int):
        for i in range(0, len(self.base), max(1, rows)):
            yield Chunk(self.base[i:i + rows], self.switches)

    def whole(self) -> Chunk:
        return Chunk(self.base, self.switches)


def _cp_and_interleave(model: Model, gpus: int, seq_len: int, pin: dict, max_interleave: int):
    """CP degrees and, per PP degree, interleaves: pinned, CP at any sequence (CP 2 at 8K) and
    uneven chunks too (megatron_export._pipeline); else LONG_CONTEXT, MAX_CP, even chunks."""
    d = [c for c in divisors(gpus) if seq_len % c == 0]
    cps = sorted(pin["cp"] & set(d)) if "cp" in pin else [c for c in d if c <= MAX_CP] \
        if seq_len >= LONG_CONTEXT else [1]
    top, vs, n = max(max_interleave, *pin.get("v", [1])), pin.get("v"), model.layers
    return cps, functools.lru_cache(maxsize=None)(lambda p: [v for v in [1] + [v for v in range(
        2, top + 1) if p > 1 and (n % (p * v) == 0 or vs is not None and p * v <= max_chunks(n))]
        if vs is None or v in vs])  # the pins applied once per PP degree


def enumerate_space(model: Model, gpus: int, gpus_per_node: int, global_batch: int | None,
                    seq_len: int, offloads: list[Offload], zero_stages=(0, 1, 2, 3),
                    recomputes=RECOMPUTE_CODES, max_interleave: int = 8,
                    pins: dict[str, tuple[int, ...]] | None = None,
                    offload_params: tuple[bool, ...] = (False, True)) -> Space:
    """Every (tp, pp, cp, ep, dp) grid point that divides out, times the other switches.

    TP: divisors of the node's GPUs (TP inside a node first) that divide the heads and fit
    the KV heads. PP: divisors of what is left, at most the layers (uneven splits allowed). CP
    and interleaving: :func:`_cp_and_interleave` (micro-batches a multiple of PP, Megatron's
    rule); EP only for MoE models; micro-batch: divisors of the per-replica batch. ``pins``
    fixes grid columns (tp, pp, dp, cp, ep, mb, v). ``offload_params``: whether the weights
    stay (False) and/or leave with the optimizer (True: ZeRO-3 only, to targets whose
    strategy offloads them). A grid point's global batch is ``resolve_global_batch(dp, 1,
    ...)``: ``global_batch``, or (None) the smallest multiple of dp holding 512 sequences;
    every micro-batch divides its per-replica share, so ``resolve_global_batch(dp, mb,
    training)`` gives the same batch for each layout.
    """
    blocks = []
    # the batch fields only, both a validated Training's (specs/base.unvalidated)
    fields = {"seq_len": seq_len, "global_batch": global_batch}
    batch = unvalidated(Training, fields, tuple(fields)) or Training(**fields)
    pin = {k: frozenset(int(x) for x in v) for k, v in (pins or {}).items()}
    ok = lambda col, x: col not in pin or x in pin[col]  # noqa: E731 (pins inside the loops)
    capped = "mb" not in pin  # a pinned micro-batch is searched as given
    tps = [t for t in tp_degrees(model, gpus_per_node) if gpus % t == 0 and ok("tp", t)]
    cps, interleaves = _cp_and_interleave(model, gpus, seq_len, pin, max_interleave)
    eps_of = functools.lru_cache(maxsize=None)(lambda n: [
        e for e in divisors(n) if model.experts % e == 0 and ok("ep", e)] if model.is_moe
        else [1] if ok("ep", 1) else [])
    batch_of = functools.lru_cache(maxsize=None)(lambda d: int(resolve_global_batch(d, 1, batch)))
    for t in tps:
        for c in cps:
            rest = gpus // t
            if rest % c:
                continue
            for p in divisors(rest // c):
                if p > model.layers or not ok("pp", p):
                    continue
                d = rest // c // p
                if not ok("dp", d):
                    continue
                gb = batch_of(d)
                if gb % d:
                    continue
                eps = eps_of(d * c)
                per_replica = gb // d
                mbs = (divisors(per_replica) if capped else
                       sorted(m for m in pin["mb"] if m > 0 and per_replica % m == 0))
                mv = []  # the (micro-batch, interleave) pairs of this (t, c, p): any EP's
                for mb in mbs:
                    if capped and mb > 1 and (mb > MAX_MICRO_BATCH
                                              or mb * seq_len > MAX_MICRO_BATCH_TOKENS):
                        break  # divisors come in increasing order
                    vs = interleaves(p) if (per_replica // mb) % p == 0 else interleaves(1)
                    mv += [(mb, v) for v in vs]
                if eps and mv:  # rows in the order e, then micro-batch, then interleave
                    block = np.empty((len(eps), len(mv), len(BASE_COLS)), dtype=np.int64)
                    block[...] = (t, p, d, c, 0, 0, 0, gb)
                    block[:, :, 4] = np.asarray(eps, dtype=np.int64)[:, None]
                    block[:, :, 5:7] = np.asarray(mv, dtype=np.int64)
                    blocks.append(block.reshape(-1, len(BASE_COLS)))
    base = (np.concatenate(blocks) if blocks else
            np.zeros((0, len(BASE_COLS)), dtype=np.int64))
    for col in pin.keys() - {"tp", "pp", "dp", "cp", "ep", "mb", "v"}:  # any other column
        base = base[np.isin(base[:, BASE_COLS.index(col)], np.fromiter(pin[col], np.int64))]
    switches = (np.array(sorted(set(zero_stages)), dtype=np.int64),
                np.array(offload_variants(offloads, offload_params, zero_stages),
                         dtype=np.int64),
                np.array([i for i, r in enumerate(RECOMPUTE_CODES) if r in recomputes],
                         dtype=np.int64),
                np.array([0, 1], dtype=np.int64))
    return Space(base, switches)


def offload_variants(offloads, offload_params=(False, True), zero_stages=(0, 1, 2, 3)
                     ) -> list[int]:
    """The offload axis: each target's code without (False in ``offload_params``) and, where
    its strategy offloads weights and ZeRO-3 is searched, with (True) parameter offload."""
    from optimus_calc.evaluate import strategies
    out = []
    for o in dict.fromkeys(offloads):
        code = offload_code(o)
        if False in offload_params:
            out.append(offload_variant(code, False))
        if True in offload_params and 3 in zero_stages and strategies.strategy(o).offloads_params:
            out.append(offload_variant(code, True))
    return out


def grid_rules(space: Space, model: Model, base: Training, frameworks, elements: int) -> dict:
    """Every framework's rules over ``space``'s grid, evaluated once for all profiles and chunks
    (profiles change neither the precision nor the batch the rules read, grad_bytes only where
    none is typed: untyped to the rules, frameworks/base.PhysicsProfile): per framework the code
    of its first failing rule (0: it runs), of shape (zero, offload, 1, SP, grid points), or 1
    for SP where no rule reads it (one chunk: broadcast by the reader); they read the grid's
    columns, ZeRO, offload and SP switches, not recompute; ``elements``: evaluated at once."""
    from optimus_calc.frameworks.registry import asked_dropout, framework_support, named_kernel
    z, o, s = len(space.switches[0]), len(space.switches[1]), len(space.switches[3])
    parts = []
    for chunk in space.chunks(max(1, elements // (z * o * s))):
        v = chunk.views()
        parts.append(framework_support(
            v["tp"], v["pp"], v["dp"], v["cp"], v["ep"], v["zero"], v["offload"],
            v["offload_params"], v["v"], v["mb"], v["sp"], v["recompute"],
            heads=model.heads, n_kv=model.n_kv, experts=model.experts, layers=model.layers,
            global_batch=v["gb"], precision=base.precision.value, model=model, fp8_recipe=base.
            fp8_recipe.value, frameworks=tuple(frameworks), attention_kernel=named_kernel(base),
            seq_len=base.seq_len, grad_bytes=base.grad_bytes, dropout=asked_dropout(base),
            cuda_graph=base.cuda_graph_full_iteration, moe_dispatcher=base.moe_dispatcher.value,
            ).reason)
    if not parts:
        return {f: np.zeros((z, o, 1, s, 0), dtype=np.int16) for f in frameworks}
    if len(parts) == 1:  # kept on the axes its rules read (SP only where a rule reads it)
        return dict(parts[0])
    out = {}
    for f in parts[0]:
        shape = broadcast_small(*(p[f].shape[:-1] for p in parts))
        out[f] = np.concatenate([np.broadcast_to(p[f], shape + p[f].shape[-1:])
                                 for p in parts], axis=-1)
    return out


def profile_filter(rules: dict, space: Space, frameworks: tuple, what_if: bool,
                   smart_code: int, rows: int):
    """One physics profile's rule filter over ``space``'s whole grid, from :func:`grid_rules`
    (once per profile, not per chunk): (the kept layouts a framework of ``frameworks`` runs,
    with ``what_if`` the kept SmartNIC layouts none runs (else None), both over (zero, offload,
    1, SP, grid), the grid points holding either, how many layouts none runs and the
    rejections: (framework, rule code, layouts) in the order the chunks of ``rows`` grid points
    first meet them (as a chunk-by-chunk count would), layouts counted over every recompute
    value). Kept: Chunk.keep (SP only with TP, parameter offload only with ZeRO-3)."""
    zero, off, rec, sp = space.switches
    nb = len(space.base)
    off_code, opar = np.asarray(off) % PARAMS, np.asarray(off) // PARAMS
    tp = space.base[:, 0].reshape(1, 1, 1, 1, nb)
    pairs = (opar[None, :] == 0) | (np.asarray(zero)[:, None] == 3)  # (zero, offload)
    grid = (np.asarray(sp).reshape(-1, 1) == 0) | (tp.reshape(1, -1) > 1)  # (SP, grid)
    kept = np.zeros(pairs.shape + (1,) + grid.shape, dtype=bool)
    kept[pairs] = grid[None]  # one row copy per kept pair, not a broadcast product
    runs = np.zeros(kept.shape, dtype=bool)
    for f in frameworks:
        runs |= rules[f] == 0
    gone = kept & ~runs
    run = runs & kept
    smart = None
    if what_if and (off_code == smart_code).any():
        smart = gone & (off_code == smart_code).reshape(1, -1, 1, 1, 1)
    wanted = run.any(axis=(0, 1, 2, 3)).reshape(-1)
    if smart is not None:
        wanted |= smart.any(axis=(0, 1, 2, 3)).reshape(-1)
    n_gone = int(np.count_nonzero(gone))
    dropped = []  # (framework index, rule code, layouts)
    for k, f in enumerate(frameworks):  # rule codes are small integers; 0 is never counted
        n = (np.bincount(np.broadcast_to(rules[f], gone.shape)[gone]) if n_gone
             else np.zeros(1, dtype=np.int64))
        dropped += [(k, int(c), int(n[c]) * len(rec)) for c in np.flatnonzero(n[1:]) + 1]
    # a chunk-by-chunk count meets them chunk by chunk (within a chunk, framework by framework,
    # code by code): that order decides ties of equal counts, so the tied are put in it
    counts = [n for _, _, n in dropped]
    tied = [i for i, n in enumerate(counts) if counts.count(n) > 1]
    first = {}  # the first chunk holding each tied (framework, code), found chunk by chunk
    step = max(1, rows)
    for lo in range(0, nb if tied else 0, step):
        for i in tied:
            if i not in first and ((rules[frameworks[dropped[i][0]]][..., lo:lo + step]
                                    == dropped[i][1]) & gone[..., lo:lo + step]).any():
                first[i] = lo
        if len(first) == len(tied):
            break
    order = sorted(range(len(dropped)), key=lambda i: (first.get(i, 0), i))
    return (run, smart, wanted, n_gone * len(rec),
            [(frameworks[dropped[i][0]],) + dropped[i][1:] for i in order])
