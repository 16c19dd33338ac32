"""Fit each FP8 recipe's GEMM ratio (specs/assumptions.py fp8_*_gemm_efficiency) on public
end-to-end training rows, and report per-row and leave-one-out errors.

    python benchmarks/fit_fp8_recipes.py

Every row is a published tokens/s/GPU of a whole training step (NVIDIA's NeMo and
Megatron-Bridge performance summaries, as transcribed in docs/reference/framework-physics.md
section 7.2), run through the Megatron-LM profile with the recipes' overlap flags on. The ratio
r of a recipe is the value on a 0.005 grid that minimises the rows' mean |predicted /
published - 1|; leave-one-out refits without each row and predicts it. A fitted value is kept
only if its leave-one-out error is below the error of the previous single ratio (0.72).
"""

from __future__ import annotations

import numpy as np

from optimus_calc import catalog
from optimus_calc.evaluate.context import fill_layout, resolve_hardware
from optimus_calc.evaluate.fp8 import RATIO_FIELD
from optimus_calc.evaluate.step import estimate_step
from optimus_calc.frameworks.physics import apply_framework
from optimus_calc.specs.assumptions import Assumptions
from optimus_calc.specs.training import Fp8Recipe, Precision, Recompute, Training, ZeroStage

BRIDGE = ("Megatron-Bridge docs/performance-summary.md @ 00b7660 (release 25.11), "
          "framework-physics.md 7.2")
NEMO_2502 = "NeMo performance summary, container 25.02 (framework-physics.md 7.2)"
NEMO_2412 = ("NeMo 24.12 performance summary (framework-physics.md 7.2); NeMo 2.1 had delayed "
             "scaling only (nemo/collections/llm/recipes/precision/mixed_precision.py L46-54 "
             "@ v2.1.0)")

# (label, recipe, model, node, nodes, tp, pp, cp, v, zero, global batch, micro-batch, seq,
#  published tokens/s/GPU, source, what is assumed)
ROWS = [
    ("H100 Llama3 8B FSDP FP8-CS", Fp8Recipe.TE_CURRENT, "llama-3-8b", "dgx-h100", 1,
     1, 1, 1, 1, 3, 128, 1, 8192, 14451, BRIDGE, "Megatron-FSDP as ZeRO-3; no recompute"),
    ("H100 Llama3 70B TP4 PP8 VP5 FP8-CS", Fp8Recipe.TE_CURRENT, "llama-3-70b", "dgx-h100", 8,
     4, 8, 1, 5, 1, 128, 1, 8192, 1602, BRIDGE, "distributed optimizer; no recompute"),
    ("H100 GPT3-175B TP4 PP8 VP6 FP8 (25.02, delayed)", Fp8Recipe.TE_DELAYED, "gpt3-175b",
     "dgx-h100", 64, 4, 8, 1, 6, 1, 2048, 2, 2048, 866, NEMO_2502,
     "NeMo 2.2's only FP8 recipe is delayed scaling (mixed_precision.py L46-54 @ v2.2.0); "
     "distributed optimizer; no recompute"),
    ("H100 GPT3-175B TP4 PP8 VP6 FP8 (delayed)", Fp8Recipe.TE_DELAYED, "gpt3-175b", "dgx-h100",
     64, 4, 8, 1, 6, 1, 2048, 2, 2048, 825, NEMO_2412,
     "micro-batch 2 as the 25.02 row; distributed optimizer; no recompute"),
    ("H100 Llama2-70B TP4 PP4 VP20 FP8 (delayed)", Fp8Recipe.TE_DELAYED, "llama-2-70b",
     "dgx-h100", 8, 4, 4, 1, 20, 1, 128, 1, 4096, 1728, NEMO_2412,
     "global batch 128, micro-batch 1 (not in the table); no recompute"),
    ("H100 Llama3-70B TP4 PP4 CP2 VP5 FP8 (delayed)", Fp8Recipe.TE_DELAYED, "llama-3-70b",
     "dgx-h100", 8, 4, 4, 2, 5, 1, 128, 1, 8192, 1524, NEMO_2412,
     "global batch 128, micro-batch 1 (not in the table); no recompute"),
    ("H100 Llama3-8B CP2 FP8 (delayed)", Fp8Recipe.TE_DELAYED, "llama-3-8b", "dgx-h100", 1,
     1, 1, 2, 1, 1, 128, 1, 8192, 12273, NEMO_2412,
     "global batch 128, micro-batch 1 (not in the table); no recompute"),
    ("B200 Llama3 8B FP8-MX", Fp8Recipe.MXFP8, "llama-3-8b", "dgx-b200", 1,
     1, 1, 1, 1, 1, 128, 2, 8192, 29521, BRIDGE, "distributed optimizer; no recompute"),
    ("B200 Llama3 8B FP8-CS (held out)", Fp8Recipe.TE_CURRENT, "llama-3-8b", "dgx-b200", 1,
     1, 1, 1, 1, 1, 128, 2, 8192, 30624, BRIDGE, "not fitted: the B200 curve is derived from "
     "FP8-CS rows (catalog b200 efficiency_source)"),
]
# Rows not expressible: Llama3.1 405B (126 layers) with VP 8 over PP 8 (126 not a multiple of
# 64; Megatron-Bridge splits unevenly); GB200 rows (no NVL72 node in the catalog); NeMo 26.02
# "FP8" rows (recipe not stated); Nemotron-340B (not in the catalog).
HELD_OUT = {"B200 Llama3 8B FP8-CS (held out)"}
PREVIOUS = 0.72


def predict(cat, row, ratio: float) -> float:
    (_, recipe, model, node, nodes, tp, pp, cp, v, zero, gb, mb, seq, _, _, _) = row
    m = cat.get(model, "model")
    hw = resolve_hardware(cat, node, nodes)
    lay = fill_layout(hw, tp, pp, None, cp, zero=ZeroStage(zero), interleave=v)
    tr = Training(seq_len=seq, global_batch=gb, micro_batch=mb, recompute=Recompute.NONE,
                  precision=Precision.FP8, fp8_recipe=recipe)
    tr, asm, _ = apply_framework("megatron", lay, tr, Assumptions(**{RATIO_FIELD[recipe]: ratio}),
                                 m)
    step = estimate_step(m, hw, lay, tr, asm).step_time_s
    return gb * seq / step / hw.gpus


def fit(cat, rows) -> tuple[float, dict]:
    grid = np.round(np.arange(0.30, 1.0001, 0.005), 3)
    table = {r[0]: np.array([predict(cat, r, g) / r[13] - 1 for g in grid]) for r in rows}

    def best(names):
        err = np.mean([np.abs(table[n]) for n in names], axis=0)
        return float(grid[int(np.argmin(err))])

    names = [r[0] for r in rows]
    source = {r[0]: r[14] for r in rows}
    r_all = best(names)
    loo = {n: float(np.interp(best([x for x in names if x != n]), grid, table[n]))
           for n in names} if len(names) > 1 else {}
    loso = {n: float(np.interp(best([x for x in names if source[x] != source[n]]), grid,
                               table[n]))
            for n in names} if len(set(source.values())) > 1 else {}
    at = {n: float(np.interp(r_all, grid, table[n])) for n in names}
    before = {n: float(np.interp(PREVIOUS, grid, table[n])) for n in names}
    return r_all, {"in_sample": at, "leave_one_out": loo, "leave_one_source_out": loso,
                   "at_0.72": before}


def main() -> None:
    cat = catalog.load(())
    for recipe in (Fp8Recipe.TE_DELAYED, Fp8Recipe.TE_CURRENT, Fp8Recipe.MXFP8):
        rows = [r for r in ROWS if r[1] is recipe and r[0] not in HELD_OUT]
        r, errs = fit(cat, rows)
        print(f"{recipe.value}: fitted ratio {r:.3f} on {len(rows)} rows")
        for n in errs["in_sample"]:
            loo = errs["leave_one_out"].get(n)
            loso = errs["leave_one_source_out"].get(n)
            print(f"  {n:48s} in-sample {errs['in_sample'][n]:+.1%}  leave-one-row-out "
                  + (f"{loo:+.1%}" if loo is not None else "  n/a ")
                  + "  leave-one-source-out "
                  + (f"{loso:+.1%}" if loso is not None else "  n/a ")
                  + f"  at 0.72 {errs['at_0.72'][n]:+.1%}")
        mean = lambda d: np.mean(np.abs(list(d.values()))) if d else float("nan")  # noqa: E731
        print(f"  mean |error|: in-sample {mean(errs['in_sample']):.1%}, leave-one-row-out "
              f"{mean(errs['leave_one_out']):.1%}, leave-one-source-out "
              f"{mean(errs['leave_one_source_out']):.1%}, at 0.72 "
              f"{mean(errs['at_0.72']):.1%}")
    from optimus_calc.specs.assumptions import FIT_TE_CURRENT
    for r in ROWS:
        if r[0] in HELD_OUT or r[1] is Fp8Recipe.MXFP8:
            p = predict(cat, r, FIT_TE_CURRENT)
            print(f"at the te-current ratio {FIT_TE_CURRENT}: {r[0]}: {p:,.0f} vs {r[13]:,} "
                  f"tokens/s/GPU ({p / r[13] - 1:+.1%})")


if __name__ == "__main__":
    main()
