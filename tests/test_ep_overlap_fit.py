"""Which public rows the EP overlap share's fit and leave-one-source-out refit move
(validate_moe.host_row: A = -dT/do, o0 the share the row was predicted with; round 15)."""

from __future__ import annotations

from dataclasses import replace

from optimus_calc.public_cases import public_rows
from optimus_calc.specs.assumptions import Assumptions
from optimus_calc.validate_moe import host_row
from optimus_calc.validate_public import run_row

FLAG = "GB200 gpt-oss-120b BF16 TP1 PP1 EP64, 64 GPUs (26.04)"   # runs the overlap
NO_FLAG = "H100 qwen3-30b-a3b FP8 TP1 PP1 EP16, 16 GPUs (26.04)"   # Megatron, without it
PP_VP = "H100 Qwen3-30B-A3B FP8-CS PP2 VP24 EP8, 16 GPUs"         # the overlap at PP 2, VP 24


def _row(label):
    (r,) = [r for r in public_rows() if r.label == label]
    return r


def _host(cat, row, asm=None):
    asm = asm or Assumptions()
    return host_row(0, run_row(cat, row, asm), asm.moe_layer_host_s, asm.moe_layer_fixed_s)


def test_the_profiles_share_is_refitted_a_typed_one_is_not(cat):
    # shipped: the Megatron profile hides 0.56 of the flagged row's all-to-all, which the fit
    # moves (A > 0); the row without the flag hides none (o0 0, A 0)
    on, off = _host(cat, _row(FLAG)), _host(cat, _row(NO_FLAG))
    assert (on.o0, off.o0, off.A) == (0.56, 0.0, 0.0) and on.A > 0
    # --assume ep_overlap=1 is the user's share, on every MoE row of any framework (the
    # profile keeps it: frameworks/base.apply); validate's LOSO column must not refit it (it
    # did, fitting one share to all 129 MoE rows: `validate --assume ep_overlap=1` printed
    # in-sample 13.6%, LOSO 11.2%)
    typed = Assumptions(ep_overlap=1.0)
    on1, off1 = _host(cat, _row(FLAG), typed), _host(cat, _row(NO_FLAG), typed)
    assert (on1.o0, off1.o0) == (1.0, 1.0)
    assert (on1.A, off1.A) == (0.0, 0.0)


def test_pp_without_interleave_hides_nothing_so_its_slope_is_zero(cat):
    # Megatron refuses the overlap at PP > 1 without a virtual pipeline (transformer_config.py
    # L3007-3011): the profile still sets 0.56, the evaluator zeroes o_ep (evaluate/work.py),
    # so the step does not move with the share and A is exactly 0 (the fit leaves it out)
    vp = _host(cat, _row(PP_VP))
    plain = _host(cat, replace(_row(PP_VP), vp=1))
    assert vp.o0 == plain.o0 == 0.56
    assert vp.A > 0 and plain.A == 0.0
